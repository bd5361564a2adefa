"""Kaldi's tree (ContextDependency) read by hybridasr.kaldi.tree: the real monophone tree of
kaldi_digits and the real tri1 tree of kaldi_polish, checked against the pdfs of the real
alignments (every frame's pdf is the tree's answer for its phone window and pdf-class)."""
from __future__ import annotations

import io
import itertools

import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.phones import split_to_phones
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import ContextDependency, read_tree


def _frame_pdfs_from_tree(tree, tm, ali):
    """The pdf of each frame as the tree computes it from the phone windows of ``ali``."""
    ends, ok = split_to_phones(tm, ali)
    assert ok
    starts = np.concatenate([[0], ends[:-1]])
    phones = tm.tid2phone[ali[starts]].tolist()
    n, p = tree.context_width, tree.central_position
    padded = [0] * p + phones + [0] * (n - 1 - p)
    out = []
    for i, (s, e) in enumerate(zip(starts, ends)):
        window = padded[i:i + n]
        for tid in ali[s:e].tolist():
            state = tm.topology.topology_for_phone(phones[i])[tm.tid2hmm_state[tid]]
            pc = state.self_loop_pdf_class if tm.tid_is_self_loop[tid] else state.forward_pdf_class
            out.append(tree.compute(window, pc))
    return np.array(out)


def test_monophone_tree(kaldi_digits):
    tree = read_tree(str(kaldi_digits / "exp/mono/tree"))
    tm = read_transition_model(str(kaldi_digits / "exp/mono/40.mdl"))
    assert (tree.context_width, tree.central_position, tree.num_pdfs) == (1, 0, 70)
    # every transition-state's pdf is the tree's for its phone and pdf-class
    for phone, state, fwd, loop in tm.tuples.tolist():
        s = tm.topology.topology_for_phone(phone)[state]
        assert tree.compute([phone], s.forward_pdf_class) == fwd
        assert tree.compute([phone], s.self_loop_pdf_class) == loop
    for utt, ali in itertools.islice(iter_alignment_file(str(kaldi_digits / "exp/mono/ali.1.gz")), 20):
        assert np.array_equal(_frame_pdfs_from_tree(tree, tm, ali), tm.tid2pdf[ali]), utt


def test_triphone_tree_against_tri1_alignments(kaldi_polish):
    tree = read_tree(str(kaldi_polish / "exp/tri1/tree"))
    tm = read_transition_model(str(kaldi_polish / "exp/tri1/35.mdl"))
    assert (tree.context_width, tree.central_position, tree.num_pdfs) == (3, 1, 1192)
    frames = 0
    for utt, ali in itertools.islice(iter_alignment_file(str(kaldi_polish / "exp/tri1/ali.1.gz")), 25):
        assert np.array_equal(_frame_pdfs_from_tree(tree, tm, ali), tm.tid2pdf[ali]), utt
        frames += len(ali)
    assert frames > 5000


def _text_tree(body: str) -> ContextDependency:
    return ContextDependency.read(KaldiObjectReader(io.BytesIO(body.encode()), "<text tree>"))


def test_text_tree_and_errors():
    # a tiny text tree: phone 1 -> pdfs 0/1 by pdf-class; phone 2 -> by right context
    t = _text_tree("ContextDependency 3 1 ToPdf TE 1 3 ( NULL TE -1 2 ( CE 0 CE 1 ) "
                   "SE 2 [ 1 ] { CE 2 CE 3 } ) EndContextDependency ")
    assert t.num_pdfs == 4
    assert t.compute([0, 1, 0], 1) == 1
    assert t.compute([5, 2, 1], 0) == 2 and t.compute([5, 2, 2], 0) == 3
    assert t.compute([0, 0, 0], 0) is None  # NULL entry of the table
    with pytest.raises(FormatError, match="expected an event map"):
        _text_tree("ContextDependency 1 0 ToPdf XE 1 EndContextDependency ")
    with pytest.raises(FormatError, match="expected token EndContextDependency"):
        _text_tree("ContextDependency 1 0 ToPdf CE 0 CE 1 ")
    with pytest.raises(FormatError, match="phone window"):
        t.compute([1], 0)
