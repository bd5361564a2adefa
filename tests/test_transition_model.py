"""TransitionModel reader on the real Kaldi final.mdl, and on models our own writer makes from it
(text mode, the <Tuples> layout with separate self-loop pdfs), plus bad input."""
from __future__ import annotations

import copy
import gzip
import os

import numpy as np
import pytest

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import HmmState
from hybridasr.kaldi.transition_model import (TransitionModel, read_transition_model,
                                              transition_model_to_bytes,
                                              write_transition_model)


@pytest.fixture(scope="module")
def mdl_path(kaldi_digits):
    return kaldi_digits / "exp" / "mono_ali" / "final.mdl"


@pytest.fixture(scope="module")
def tm(mdl_path):
    return read_transition_model(str(mdl_path))


def test_real_model_sizes(tm):
    assert tm.num_pdfs == 70
    assert tm.num_transition_ids == 660
    assert tm.num_phones == 90
    assert tm.tid2pdf.dtype == np.int32 and tm.tid2pdf.shape == (661,)
    assert tm.tid2pdf[0] == -1 and tm.tid2phone[0] == -1
    assert tm.tid2pdf[1:].min() == 0 and tm.tid2pdf[1:].max() == 69
    assert tm.topology.is_hmm()  # a plain HMM: written with <Triples>


def test_numbering_follows_the_topology(tm, kaldi_digits):
    """Derive the numbering by hand from data/lang/topo: transition-ids run over the
    transition-states in order, one per transition of the HMM state, from 1."""
    topo_text = (kaldi_digits / "data" / "lang" / "topo").read_text().split()
    assert topo_text.count("<TopologyEntry>") == len(tm.topology.entries) == 2
    expected_tid = 1
    for tstate, (phone, hmm_state, fwd, loop) in enumerate(tm.tuples.tolist(), start=1):
        assert fwd == loop
        trans = tm.topology.topology_for_phone(phone)[hmm_state].transitions
        for k, (dst, _) in enumerate(trans):
            tid = expected_tid + k
            assert tm.transition_id_to_transition_state(tid) == tstate
            assert tm.transition_id_to_transition_index(tid) == k
            assert tm.transition_id_to_phone(tid) == phone
            assert tm.transition_id_to_hmm_state(tid) == hmm_state
            assert tm.transition_id_to_pdf(tid) == fwd
            assert tm.is_self_loop(tid) == (dst == hmm_state)
        expected_tid += len(trans)
    assert expected_tid - 1 == 660
    # silence phones 1..10 have the 5-state topology (4 transitions out of state 0)
    assert [tm.is_self_loop(t) for t in (1, 2, 3, 4, 5)] == [True, False, False, False, True]
    assert tm.self_loop_of(1) == 1 and tm.pair_to_transition_id(2, 0) == 5
    np.testing.assert_allclose(tm.transition_prob(1) + tm.transition_prob(2)
                               + tm.transition_prob(3) + tm.transition_prob(4), 1.0, rtol=1e-5)


def test_pdf_counts_equal_kaldis_occupancies(kaldi_digits):
    """exp/mono/40.occs is gmm-est's per-pdf occupancy from exp/mono/ali.1.gz: for Viterbi
    alignments, exactly the frame count of each pdf."""
    tm = read_transition_model(str(kaldi_digits / "exp" / "mono" / "40.mdl"))
    counts = np.zeros(tm.num_pdfs, dtype=np.int64)
    with gzip.open(kaldi_digits / "exp" / "mono" / "ali.1.gz", "rt") as f:
        for line in f:
            ali = np.array(line.split()[1:], dtype=np.int64)
            counts += np.bincount(tm.ali_to_pdf(ali), minlength=tm.num_pdfs)
    occs = np.array((kaldi_digits / "exp" / "mono" / "40.occs").read_text().split()[1:-1],
                    dtype=float)
    assert counts.sum() == 4485  # "over 4485 frames" in exp/mono/log/acc.39.1.log
    np.testing.assert_array_equal(counts, occs)


def _same(a: TransitionModel, b: TransitionModel) -> None:
    assert a.topology == b.topology
    np.testing.assert_array_equal(a.tuples, b.tuples)
    np.testing.assert_array_equal(a.log_probs, b.log_probs)
    for attr in ("tid2pdf", "tid2phone", "tid2hmm_state", "tid2trans_index", "tid_is_self_loop",
                 "tid_is_final"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    assert (a.num_pdfs, a.num_transition_ids, a.num_phones) == \
        (b.num_pdfs, b.num_transition_ids, b.num_phones)


def test_binary_write_is_byte_identical_to_kaldis(tm, mdl_path):
    ours = transition_model_to_bytes(tm, binary=True)
    assert mdl_path.read_bytes().startswith(ours)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("layout", ["triples", "tuples"])
def test_round_trip(tm, tmp_path, binary, layout):
    p = tmp_path / "m.mdl"
    write_transition_model(tm, str(p), binary=binary, layout=layout)
    head = p.read_bytes()[:30]
    assert head.startswith(b"\0B<TransitionModel>") == binary
    assert (b"<Tuples>" in p.read_bytes()) == (layout == "tuples")
    _same(tm, read_transition_model(str(p)))


def _with_separate_self_loop_pdfs(tm: TransitionModel) -> TransitionModel:
    """A chain-style variant: each emitting state's self-loop gets its own pdf-class and pdf."""
    topo = copy.deepcopy(tm.topology)
    for entry in topo.entries:
        n = 1 + max(s.forward_pdf_class for s in entry)
        for i, s in enumerate(entry):
            if s.forward_pdf_class >= 0:
                entry[i] = HmmState(s.forward_pdf_class, s.forward_pdf_class + n, s.transitions)
    tuples = tm.tuples.copy()
    tuples[:, 3] = tuples[:, 2] + tm.num_pdfs
    return TransitionModel(topo, tuples, tm.log_probs, name="tuples-variant")


@pytest.mark.parametrize("binary", [True, False])
def test_tuples_layout_with_separate_self_loop_pdfs(tm, tmp_path, binary):
    variant = _with_separate_self_loop_pdfs(tm)
    p = tmp_path / "tuples.mdl"
    write_transition_model(variant, str(p), binary=binary)
    data = p.read_bytes()
    assert b"<Tuples>" in data and b"<Triples>" not in data
    if not binary:
        assert b"<ForwardPdfClass>" in data and b"<SelfLoopPdfClass>" in data
    back = read_transition_model(str(p))
    _same(variant, back)
    assert back.num_pdfs == 140 and back.num_transition_ids == 660
    expected = np.where(tm.tid_is_self_loop, tm.tid2pdf + 70, tm.tid2pdf)
    expected[0] = -1
    np.testing.assert_array_equal(back.tid2pdf, expected)
    np.testing.assert_array_equal(back.tid2phone, tm.tid2phone)


def test_stops_after_the_transition_model(tm, tmp_path):
    p = tmp_path / "with_tail.mdl"
    p.write_bytes(transition_model_to_bytes(tm) + b"\xff\x00garbage that is no AmDiagGmm")
    _same(tm, read_transition_model(str(p)))


def test_reads_through_a_pipe_and_stdin_forms(tm, mdl_path):
    _same(tm, read_transition_model(f"cat {mdl_path} |"))


def _mono_dir_with_final_mdl(tmp_path, kaldi_digits, flattened: bool):
    """exp/mono as Kaldi leaves it: 40.mdl and final.mdl, a symlink to it, or (copied by a tool
    that flattens symlinks) a 6-byte file holding its name. Built here: how ../shared was copied
    must not matter."""
    mono = tmp_path / ("flat" if flattened else "linked") / "exp" / "mono"
    mono.mkdir(parents=True)
    (mono / "40.mdl").write_bytes((kaldi_digits / "exp" / "mono" / "40.mdl").read_bytes())
    if flattened:
        (mono / "final.mdl").write_text("40.mdl")
        assert (mono / "final.mdl").stat().st_size == 6
    else:
        os.symlink("40.mdl", mono / "final.mdl")
    return mono


def test_symlinked_final_mdl_reads(tmp_path, kaldi_digits, tm):
    mono = _mono_dir_with_final_mdl(tmp_path, kaldi_digits, flattened=False)
    assert os.readlink(mono / "final.mdl") == "40.mdl"
    linked = read_transition_model(str(mono / "final.mdl"))
    _same(linked, read_transition_model(str(mono / "40.mdl")))
    # exp/mono_ali/final.mdl is the same model (align_si.sh copies 40.mdl there)
    _same(linked, tm)


def test_flattened_symlink_is_named(tmp_path, kaldi_digits):
    mono = _mono_dir_with_final_mdl(tmp_path, kaldi_digits, flattened=True)
    with pytest.raises(FormatError, match=r"final\.mdl: not a Kaldi model.*'40\.mdl'.*symbolic "
                                          r"link copied as a file.*use .*mono/40\.mdl"):
        read_transition_model(str(mono / "final.mdl"))


def test_not_a_model(tmp_path):
    p = tmp_path / "text.txt"
    p.write_text("hello world\n")
    with pytest.raises(FormatError, match="text.txt.*not a Kaldi model"):
        read_transition_model(str(p))
    with pytest.raises(FormatError, match="cannot read model"):
        read_transition_model(str(tmp_path / "missing.mdl"))


@pytest.mark.parametrize("cut", [10, 300, 2000, 5000])
def test_truncated_model(tm, tmp_path, cut):
    data = transition_model_to_bytes(tm)
    assert cut < len(data)
    p = tmp_path / "cut.mdl"
    p.write_bytes(data[:cut])
    with pytest.raises(FormatError, match=r"cut\.mdl.*(end of file|truncated)"):
        read_transition_model(str(p))


def test_alignment_outside_the_model(tm):
    with pytest.raises(FormatError, match="utt7.*transition-id 661"):
        tm.ali_to_pdf(np.array([1, 2, 661]), "utt7")
    with pytest.raises(FormatError):
        tm.transition_id_to_pdf(0)
