"""The embedded decoder (kaldi-decoder's FasterDecoder behind MappedDecoder) on small graphs
built here with kaldifst: known best paths and costs, epsilon arcs, self-loops, pruning, and
an exact Viterbi search as the reference on random graphs."""
from __future__ import annotations

import math

import kaldifst
import numpy as np
import pytest

from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
from hybridasr.decode.graph import load_graph_dir
from hybridasr.kaldi.fst import max_input_label, read_fst
from hybridasr.errors import FormatError

YES, NO = 1, 2
# transition-ids 1..4 -> pdfs: "yes" frames use tids 1,2 (pdf 0); "no" frames tids 3,4 (pdf 1)
TID2PDF = np.array([-1, 0, 0, 1, 1], dtype=np.int32)


def yes_no_graph():
    """0 -1:yes/0.5-> 1 (self-loop 2:eps) -eps/0-> 3; 0 -3:no/0.7-> 2 (self-loop 4:eps)
    -eps/0-> 3; 3 final 0.2, 3 -eps/0.1-> 0 (another word)."""
    f = kaldifst.StdVectorFst()
    for _ in range(4):
        f.add_state()
    f.start = 0
    f.add_arc(0, kaldifst.StdArc(1, YES, 0.5, 1))
    f.add_arc(1, kaldifst.StdArc(2, 0, 0.0, 1))
    f.add_arc(1, kaldifst.StdArc(0, 0, 0.0, 3))
    f.add_arc(0, kaldifst.StdArc(3, NO, 0.7, 2))
    f.add_arc(2, kaldifst.StdArc(4, 0, 0.0, 2))
    f.add_arc(2, kaldifst.StdArc(0, 0, 0.0, 3))
    f.add_arc(3, kaldifst.StdArc(0, 0, 0.1, 0))
    f.set_final(3, 0.2)
    return f


def loglikes_for(pattern, good=-0.1, bad=-5.0):
    """pattern like "yyynn": per frame, pdf 0 (y) or pdf 1 (n) is the likely one."""
    m = np.full((len(pattern), 2), bad, dtype=np.float32)
    for t, c in enumerate(pattern):
        m[t, 0 if c == "y" else 1] = good
    return m


def test_known_best_path_and_costs():
    dec = MappedDecoder(yes_no_graph(), TID2PDF, options=DecodeOptions(beam=20))
    m = loglikes_for("yyynn")
    r = dec.decode(m, acoustic_scale=0.5, utt="u1")
    assert r.ok and r.reached_final
    assert r.words == [YES, NO]
    assert r.alignment == [1, 2, 2, 3, 4]
    assert r.graph_cost == pytest.approx(0.5 + 0.1 + 0.7 + 0.2, abs=1e-5)
    assert r.acoustic_cost == pytest.approx(-0.5 * (5 * -0.1), abs=1e-5)
    assert r.num_frames == 5


def test_acoustic_scale_trades_against_graph_cost():
    # one ambiguous frame after "y": staying in "yes" (self-loop) costs only acoustics;
    # a second word costs 0.1 + 0.7 of graph cost. A large acoustic scale makes the
    # acoustics win (two words), a small one the graph (one word).
    m = loglikes_for("yyn", good=-0.1, bad=-3.0)
    dec = MappedDecoder(yes_no_graph(), TID2PDF, options=DecodeOptions(beam=50))
    assert dec.decode(m, acoustic_scale=1.0).words == [YES, NO]
    assert dec.decode(m, acoustic_scale=0.1).words == [YES]


def test_same_pdf_columns_shared_by_tids():
    dec = MappedDecoder(yes_no_graph(), TID2PDF)
    m = loglikes_for("yy")
    t = dec.mapping.by_label(m, 2.0)
    assert t.shape == (2, 4) and t.dtype == np.float32
    np.testing.assert_allclose(t[:, 0], 2 * m[:, 0])
    np.testing.assert_allclose(t[:, 1], 2 * m[:, 0])
    np.testing.assert_allclose(t[:, 3], 2 * m[:, 1])


def test_too_few_frames_gives_partial_path_not_final():
    # a chain needing 3 frames (tids 1, 3, 3), no self-loops, final at the end
    f = kaldifst.StdVectorFst()
    for _ in range(4):
        f.add_state()
    f.start = 0
    f.add_arc(0, kaldifst.StdArc(1, YES, 0.0, 1))
    f.add_arc(1, kaldifst.StdArc(3, NO, 0.0, 2))
    f.add_arc(2, kaldifst.StdArc(3, 0, 0.0, 3))
    f.set_final(3, 0.0)
    dec = MappedDecoder(f, TID2PDF)
    full = dec.decode(loglikes_for("ynn"))
    assert full.reached_final and full.words == [YES, NO]
    short = dec.decode(loglikes_for("y"))
    assert short.ok and not short.reached_final and short.words == [YES]
    too_long = dec.decode(loglikes_for("ynnn"))  # no arc for a 4th frame: nothing survives
    assert not too_long.ok and too_long.words == []


def test_no_emitting_arc_means_no_surviving_token():
    f = kaldifst.StdVectorFst()
    f.add_state()
    f.add_state()
    f.start = 0
    f.add_arc(0, kaldifst.StdArc(0, YES, 0.0, 1))
    f.set_final(1, 0.0)
    r = MappedDecoder(f, TID2PDF).decode(loglikes_for("yy"), utt="u")
    assert not r.ok and r.words == [] and r.num_frames == 2


def test_empty_utterance_and_wrong_dimension():
    dec = MappedDecoder(yes_no_graph(), TID2PDF)
    r = dec.decode(np.zeros((0, 2), np.float32))
    assert not r.ok and r.num_frames == 0
    with pytest.raises(FormatError, match="utt7.*3\\).*2 pdfs"):
        dec.decode(np.zeros((4, 3), np.float32), utt="utt7")
    bad = loglikes_for("yyn")
    bad[1, 0] = np.nan
    with pytest.raises(FormatError, match="utt8: log-likelihoods contain NaN"):
        dec.decode(bad, utt="utt8")


def test_graph_for_another_model_is_reported():
    with pytest.raises(FormatError, match="input label 4 .* only 3 transition-ids"):
        MappedDecoder(yes_no_graph(), TID2PDF[:4], max_ilabel=4)


def _exact_viterbi(arcs, finals, start, tid_ll):
    """Exact best path cost: per frame one emitting arc, epsilon arcs (non-negative weights)
    in between; final weights at the end. arcs: (src, ilabel, olabel, weight, dst)."""
    n = 1 + max(max(a[0], a[4]) for a in arcs)
    inf = math.inf

    def closure(cost):
        cost = cost[:]
        changed = True
        while changed:
            changed = False
            for s, i, o, w, d in arcs:
                if i == 0 and cost[s] + w < cost[d] - 1e-12:
                    cost[d] = cost[s] + w
                    changed = True
        return cost

    cost = [inf] * n
    cost[start] = 0.0
    cost = closure(cost)
    for t in range(tid_ll.shape[0]):
        new = [inf] * n
        for s, i, o, w, d in arcs:
            if i != 0 and cost[s] < inf:
                new[d] = min(new[d], cost[s] + w - tid_ll[t, i - 1])
        cost = closure(new)
    return min(cost[s] + fw for s, fw in finals.items())


@pytest.mark.parametrize("seed", range(6))
def test_matches_exact_viterbi_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    num_states, num_tids, num_pdfs = 6, 5, 3
    tid2pdf = np.concatenate([[-1], rng.integers(0, num_pdfs, num_tids)]).astype(np.int32)
    tid2pdf[1:num_pdfs + 1] = np.arange(num_pdfs)  # every pdf used
    arcs = []
    for s in range(num_states):
        for _ in range(3):
            arcs.append((s, int(rng.integers(1, num_tids + 1)), int(rng.integers(0, 4)),
                         float(rng.uniform(0, 2)), int(rng.integers(0, num_states))))
        if rng.uniform() < 0.4:  # epsilon arc
            arcs.append((s, 0, int(rng.integers(0, 4)), float(rng.uniform(0, 1)),
                         int(rng.integers(0, num_states))))
        arcs.append((s, int(rng.integers(1, num_tids + 1)), 0, 0.3, s))  # self-loop
    finals = {int(s): float(rng.uniform(0, 1)) for s in rng.choice(num_states, 2, replace=False)}
    f = kaldifst.StdVectorFst()
    for _ in range(num_states):
        f.add_state()
    f.start = 0
    for s, i, o, w, d in arcs:
        f.add_arc(s, kaldifst.StdArc(i, o, w, d))
    for s, w in finals.items():
        f.set_final(s, w)
    loglikes = np.log(rng.dirichlet(np.ones(num_pdfs), size=12)).astype(np.float32)
    dec = MappedDecoder(f, tid2pdf, options=DecodeOptions(beam=1000, min_active=1))
    r = dec.decode(loglikes, acoustic_scale=0.7)
    exact = _exact_viterbi(arcs, finals, 0, dec.mapping.by_label(loglikes, 0.7))
    if math.isinf(exact):
        assert not r.reached_final
        return
    assert r.ok and r.reached_final
    assert r.total_cost == pytest.approx(exact, abs=1e-3)
    # the path it reports is consistent: its acoustic cost is the sum over its alignment
    tm = dec.mapping.by_label(loglikes, 0.7)
    assert -sum(tm[t, tid - 1] for t, tid in enumerate(r.alignment)) == \
        pytest.approx(r.acoustic_cost, abs=1e-3)
    # a narrow beam can only do worse (or the same), never better than the exact search
    narrow = MappedDecoder(f, tid2pdf, options=DecodeOptions(beam=0.5, max_active=2,
                                                             min_active=1))
    rn = narrow.decode(loglikes, acoustic_scale=0.7)
    if rn.ok and rn.reached_final:
        assert rn.total_cost >= exact - 1e-3


def test_graph_dir_const_and_vector_formats(tmp_path):
    g = tmp_path / "graph"
    g.mkdir()
    yes_no_graph().write(str(g / "HCLG.fst"))
    with pytest.raises(FormatError, match="no words.txt"):
        load_graph_dir(str(g))
    (g / "words.txt").write_text("<eps> 0\nyes 1\nno 2\n")
    vec = load_graph_dir(str(g))
    assert vec.fst.type == "vector" and vec.max_ilabel == 4 and vec.words[2] == "no"
    kaldifst.StdConstFst(vec.fst).write(str(g / "HCLG.fst"))
    const = load_graph_dir(str(g))
    assert const.fst.type == "const" and const.max_ilabel == 4
    r = MappedDecoder(const.fst, TID2PDF).decode(loglikes_for("nnyy"))
    assert [const.words[w] for w in r.words] == ["no", "yes"]
    (g / "HCLG.fst").write_bytes(b"not an fst at all")
    with pytest.raises(FormatError, match="not an OpenFst"):
        read_fst(str(g / "HCLG.fst"))


def test_real_graph_max_ilabel(kaldi_digits):
    path = kaldi_digits / "exp/mono/graph/HCLG.fst"
    fst = read_fst(str(path))
    fast = max_input_label(fst, str(path))
    v = kaldifst.StdVectorFst(fst)  # same arcs, python scan
    assert fast == max_input_label(v) == 642
