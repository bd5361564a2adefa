"""chain-make-den-fst: den.fst and normalization.fst from kaldi_digits' tree, model and a
phone LM of its real alignments; the chain topology (gen_topo.py) read, written, built."""
from __future__ import annotations

import numpy as np
import pytest

from chain_helpers import CHAIN_TOPO, digits_phone_seqs, fst_accepts
from hybridasr.chain.den_graph import (initial_probs, make_den_fst, make_den_fsts,
                                       normalization_fst, write_fst)
from hybridasr.chain.phone_lm import estimate_phone_lm
from hybridasr.graph.arrays import FstArrays
from hybridasr.kaldi.hmm_topology import HmmTopology
from hybridasr.kaldi.io.io_funcs import KaldiObjectWriter, read_kaldi_object
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.tree.model import build_transition_model, monophone_tree, read_topology


def test_den_fst_accepts_the_real_pdf_alignments(kaldi_digits, tmp_path):
    from hybridasr.kaldi.io.intvec import read_int_vectors

    mdl = str(kaldi_digits / "exp/mono_ali/final.mdl")
    tree, tm = read_tree(str(kaldi_digits / "exp/mono/tree")), read_transition_model(mdl)
    lm = estimate_phone_lm(digits_phone_seqs(kaldi_digits))
    stats = {}
    den = make_den_fst(tree, tm, lm, stats)
    assert np.all(den.ilabel >= 1) and np.all(den.ilabel <= tm.num_pdfs)
    assert np.array_equal(den.ilabel, den.olabel)
    assert den.num_states < stats["transition_id_arcs"]  # minimised
    # states sorted by decreasing number of arcs in + out
    deg = np.bincount(den.src, minlength=den.num_states) + np.bincount(
        den.dst, minlength=den.num_states)
    assert np.all(np.diff(deg) <= 0)
    ali = f"ark:gunzip -c {kaldi_digits / 'exp/mono_ali/ali.1.gz'}|"
    n = 0
    for utt, a in read_int_vectors(ali):
        pdf1 = tm.tid2pdf[a] + 1
        assert fst_accepts(den, pdf1), utt
        n += 1
    assert n == 120
    # initial probs: a distribution over all states
    init = initial_probs(den)
    assert init.sum() == pytest.approx(1.0, abs=1e-5) and np.all(init > 0)


def test_den_and_normalization_fst_read_back_by_kaldifst(kaldi_digits, tmp_path):
    import kaldifst

    lm = estimate_phone_lm(digits_phone_seqs(kaldi_digits))
    write_fst(lm, str(tmp_path / "phone_lm.fst"))
    den, norm = make_den_fsts(str(kaldi_digits / "exp/mono/tree"),
                              str(kaldi_digits / "exp/mono_ali/final.mdl"),
                              str(tmp_path / "phone_lm.fst"), str(tmp_path / "den.fst"),
                              str(tmp_path / "normalization.fst"))
    for fst, name in ((den, "den.fst"), (norm, "normalization.fst")):
        back = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(tmp_path / name)))
        assert (back.start, back.num_states, back.num_arcs) == (
            fst.start, fst.num_states, fst.num_arcs)
        assert np.array_equal(back.ilabel, fst.ilabel) and np.array_equal(back.dst, fst.dst)
        assert np.allclose(back.weight, fst.weight)
    # normalization.fst: epsilon-free, every den state final with cost 0, arcs sorted
    assert np.all(norm.ilabel > 0)
    init = initial_probs(den)
    others = np.arange(norm.num_states) != norm.start
    assert np.all(norm.final[others] == 0.0)
    # (tropical epsilon removal: the start is final with the best initial cost, as Kaldi's)
    assert norm.final[norm.start] == pytest.approx(-np.log(init.max()), abs=1e-5)
    same_state = np.diff(norm.src) == 0
    assert np.all(np.diff(norm.ilabel)[same_state] >= 0)
    # its start state's arcs: the den arcs out of every state s weighted by init(s),
    # merged per (label, destination) by the tropical sum (the best), as OpenFst's RmEpsilon
    best = {}
    for src, lab, w, d in zip(den.src.tolist(), den.ilabel.tolist(), den.weight.tolist(),
                              den.dst.tolist()):
        c = w - np.log(np.float64(init[src]))
        best[(lab, d)] = min(best.get((lab, d), np.inf), c)
    k = norm.src == norm.start
    got = dict(zip(zip(norm.ilabel[k].tolist(), norm.dst[k].tolist()), norm.weight[k].tolist()))
    assert len(got) == int(k.sum())
    # norm's states are den's (the old start, left unreachable, is dropped by RmEpsilon)
    assert len(got) == len(best)
    assert sorted(got.values()) == pytest.approx(sorted(best.values()), abs=1e-4)


def test_chain_topology_reads_writes_and_builds_a_den_graph(kaldi_digits, tmp_path):
    phones = list(range(1, 91))
    (tmp_path / "topo").write_text(CHAIN_TOPO.format(phones=" ".join(map(str, phones))))
    topo = read_topology(str(tmp_path / "topo"))
    assert not topo.is_hmm() and topo.phones == phones
    st = topo.topology_for_phone(5)
    assert (st[0].forward_pdf_class, st[0].self_loop_pdf_class) == (0, 1)
    assert st[0].transitions == [(0, 0.5), (1, 0.5)]
    for binary in (False, True):
        path = tmp_path / f"topo.{binary}"
        with open(path, "wb") as f:
            topo.write(KaldiObjectWriter(f, binary))
        assert read_kaldi_object(str(path), HmmTopology.read, "topology") == topo
    tree = monophone_tree(topo)
    tm = build_transition_model(tree, topo)
    assert tm.num_pdfs == 2 * len(phones) and tm.num_transition_ids == 2 * len(phones)
    # the self-loop's pdf is class 1's, the forward transition's class 0's
    ts = tm.tuple_to_transition_state(5, 0, tree.compute([5], 0), tree.compute([5], 1))
    loop, fwd = tm.pair_to_transition_id(ts, 0), tm.pair_to_transition_id(ts, 1)
    assert tm.transition_id_to_pdf(loop) == tree.compute([5], 1)
    assert tm.transition_id_to_pdf(fwd) == tree.compute([5], 0)
    lm = estimate_phone_lm(digits_phone_seqs(kaldi_digits))
    den = make_den_fst(tree, tm, lm)
    used = sorted(set(p for s in digits_phone_seqs(kaldi_digits) for p in s))
    want = sorted({tree.compute([p], c) + 1 for p in used for c in (0, 1)})
    assert sorted(set(den.ilabel.tolist())) == want
    # a phone of k frames is its forward pdf then k-1 self-loop pdfs
    seq = digits_phone_seqs(kaldi_digits)[0]
    labels = []
    for p in seq:
        labels += [tree.compute([p], 0) + 1] + [tree.compute([p], 1) + 1] * 2
    assert fst_accepts(den, labels)
    assert not fst_accepts(den, [tree.compute([seq[0]], 1) + 1] + labels)
