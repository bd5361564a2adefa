"""The chain tree (steps/nnet3/chain/build_tree.sh's pieces): joint (forward, self-loop) pdf
pairs of the transition model, alignment conversion to the chain topology at frame
subsampling 3, tree statistics on subsampled features, the tree read back."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from chain_helpers import CHAIN_TOPO
from hybridasr.align.phones import phone_segments
from hybridasr.chain.topo import chain_topo_text, make_chain_lang
from hybridasr.chain.tree_size import chain_num_leaves
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import PDF_CLASS_KEY, ContextDependency, read_tree
from hybridasr.tree.accumulate import accumulate_tree_stats
from hybridasr.tree.convert import AlignmentConverter
from hybridasr.tree.model import build_transition_model, init_mono, read_topology
from hybridasr.tree.pdf_pairs import pdf_pairs_for
from hybridasr.tree.phone_paths import min_length, new_phone_lengths
from hybridasr.tree.stats import TreeFeatureOptions, TreeStatsOptions


def _alis(d):
    return list(read_int_vectors(f"ark:gunzip -c {d / 'exp/mono_ali/ali.1.gz'}|"))


def _chain_topo(tmp_path, phones):
    p = tmp_path / "topo"
    p.write_text(CHAIN_TOPO.format(phones=" ".join(map(str, phones))))
    return read_topology(str(p))


def _brute_pairs(tree, phone, universe):
    out = set()
    for left, right in itertools.product([0] + list(universe), repeat=2):
        w = (left, phone, right)
        out.add((tree.compute(w, 0), tree.compute(w, 1)))
    return sorted(out)


def test_joint_pdf_pairs_against_all_windows(kaldi_digits, tmp_path):
    """Trees whose forward and self-loop pdfs both depend on context: the pairs are those some
    window gives, not the product (the old code refused such trees)."""
    topo = _chain_topo(tmp_path, range(1, 13))
    left = frozenset({1, 2, 3})
    # class 0 split on the left phone, class 1 on the same question (pairs: diagonal) ...
    same = ("TE", PDF_CLASS_KEY, [("SE", 0, left, ("CE", 0), ("CE", 1)),
                                  ("SE", 0, left, ("CE", 2), ("CE", 3))])
    # ... and class 1 on the right phone (pairs: the product)
    other = ("TE", PDF_CLASS_KEY, [("SE", 0, left, ("CE", 0), ("CE", 1)),
                                   ("SE", 2, left, ("CE", 2), ("CE", 3))])
    for root, want in ((same, [(0, 2), (1, 3)]), (other, [(0, 2), (0, 3), (1, 2), (1, 3)])):
        tree = ContextDependency(3, 1, root)
        assert pdf_pairs_for(tree, 5, 0, 1, topo.phones) == want
        assert _brute_pairs(tree, 5, topo.phones) == want
        tm = build_transition_model(tree, topo)
        assert sorted({(f, l) for _, _, f, l in tm.tuples.tolist()}) == want
        assert tm.num_transition_states == 12 * len(want)


def test_chain_tree_from_digits_alignment(kaldi_digits, tmp_path):
    lang = tmp_path / "lang_chain"
    make_chain_lang(str(kaldi_digits / "data/lang"), str(lang))
    topo = read_topology(str(lang / "topo"))
    assert not topo.is_hmm()
    nonsil = [int(x) for x in (lang / "phones/nonsilence.csl").read_text().split(":")]
    sil = [int(x) for x in (lang / "phones/silence.csl").read_text().split(":")]
    assert (lang / "topo").read_text() == chain_topo_text(nonsil, sil)
    mono = init_mono(str(lang / "topo"), str(tmp_path / "mono.mdl"), str(tmp_path / "mono.tree"),
                     shared_phones=str(lang / "phones/sets.int"))
    old = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    mono_tree = read_tree(str(tmp_path / "mono.tree"))
    conv = AlignmentConverter(old, mono, mono_tree, frame_subsampling_factor=3)
    alis = _alis(kaldi_digits)
    converted = {}
    for utt, ali in alis:
        new = conv.convert(ali, utt)
        assert len(new) == (len(ali) + 2) // 3, utt
        segs_old = phone_segments(old, ali)
        segs_new = phone_segments(mono, new)
        assert [p for p, _ in segs_new] == [p for p, _ in segs_old], utt
        # phone lengths: Kaldi's ComputeNewPhoneLengths (boundaries (t + 2) // 3, min 1)
        want = new_phone_lengths([1] * len(segs_old), [n for _, n in segs_old], 2, 3)
        assert [n for _, n in segs_new] == want, utt
        # reordered chain path: the forward transition first, then self-loops
        pos = 0
        for _, n in segs_new:
            loops = mono.tid_is_self_loop[new[pos:pos + n]]
            assert not loops[0] and loops[1:].all(), utt
            pos += n
        converted[utt] = new
    assert conv.num_done == 120 and conv.num_failed == 0
    # tree statistics on features subsampled as subsample-feats --n=3, one per frame
    ci = (lang / "phones/context_indep.csl").read_text().strip()
    import os
    cwd = os.getcwd()
    os.chdir(kaldi_digits)
    try:
        stats, rep = accumulate_tree_stats(
            mono, "data/train", converted.items(), TreeStatsOptions(ci_phones=ci),
            TreeFeatureOptions(frame_subsampling_factor=3))
    finally:
        os.chdir(cwd)
    assert rep.done == 120 and rep.wrong_length == 0
    assert stats.total_count() == sum(len(a) for a in converted.values())
    assert set(stats.pdf_classes.tolist()) == {0, 1}
    # the tree on the chain topology, written and read back with its transition model
    from hybridasr.kaldi.transition_model import write_transition_model
    from hybridasr.kaldi.tree import write_tree
    from hybridasr.tree.build import BuildTreeOptions, build_from_lang

    leaves = chain_num_leaves(stats.total_count())
    tree, _, _, report = build_from_lang(stats, str(lang), BuildTreeOptions(max_leaves=leaves))
    tm = build_transition_model(tree, topo)
    write_tree(tree, str(tmp_path / "tree"))
    write_transition_model(tm, str(tmp_path / "final.mdl"))
    tree2 = read_tree(str(tmp_path / "tree"))
    tm2 = read_transition_model(str(tmp_path / "final.mdl"))
    assert tree2.num_pdfs == tree.num_pdfs == tm2.num_pdfs > mono_tree.num_pdfs // 2
    assert np.array_equal(tm2.tuples, tm.tuples) and tm2.topology == topo
    # every tuple's pair is one the tree gives for some real window
    conv2 = AlignmentConverter(old, tm2, tree2, frame_subsampling_factor=3)
    for utt, ali in alis:
        new = conv2.convert(ali, utt)
        segs = phone_segments(tm2, new)
        phones = [p for p, _ in segs]
        pos = 0
        for i, (p, n) in enumerate(segs):
            win = (phones[i - 1] if i else 0, p, phones[i + 1] if i + 1 < len(phones) else 0)
            pdfs = tm2.tid2pdf[new[pos:pos + n]]
            assert pdfs[0] == tree2.compute(win, 0), utt
            assert np.all(pdfs[1:] == tree2.compute(win, 1)), utt
            pos += n


def test_phone_lengths_borrow_frames_as_kaldi():
    # boundaries (t + 2) // 3 give [1, 0, 2]; the empty phone borrows from the nearer spare
    assert new_phone_lengths([1, 1, 1], [2, 1, 6], 2, 3) == [1, 1, 1]
    # [1, 2]: a phone needing 3 frames gets one from its neighbour, then none is left
    assert new_phone_lengths([3, 1], [3, 6], 2, 3) is None
    assert new_phone_lengths([2, 1], [3, 6], 2, 3) == [2, 1]
    assert new_phone_lengths([1, 1], [1, 1], 2, 3) is None


def test_min_length_of_kaldi_topologies(kaldi_digits, tmp_path):
    topo = read_topology(str(kaldi_digits / "data/lang/topo"))
    assert min_length(topo, 20) == 3  # 3-state non-silence
    assert min_length(topo, 1) == 3  # silence: 0 -> 1..3 -> 4 -> final
    assert min_length(_chain_topo(tmp_path, [1, 2]), 1) == 1


def test_num_leaves_scale_with_the_data():
    frames_5h = 5 * 3600 * 100 / 3
    assert chain_num_leaves(frames_5h) == 3500
    assert chain_num_leaves(frames_5h / 4) == 1750
    assert chain_num_leaves(10) == 50 and chain_num_leaves(1e9) == 7000
