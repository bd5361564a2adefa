"""The toolkit's one lattice determinizer (C++, ``hybridasr.decode.determinize_native``)
against facts that do not come from it, on real lattices: kaldi_polish's tri1 GMM
(context-dependent tree) and kaldi_digits' monophone GMM scoring real test utterances, decoded
on their graphs by the toolkit's C++ search.

- Determinization keeps, for every word sequence, the best state-level path at the decoding
  scale: there, with any insertion penalty, the determinized lattice's best path is the raw
  state-level lattice's (words, transition-ids, costs); at every LM weight its words are.
- Its word sequences and their best costs are those of OpenFst's determinization (kaldifst's
  ``determinize_star``, Kaldi's fstdeterminizestar) of the same raw lattice as a word
  acceptor in the tropical semiring (graph + acoustic cost), within the beam; each once.
- Determinizing on phones first (Kaldi's DeterminizeLatticePhonePruned) only saves work:
  every LM weight and insertion penalty picks the same words and costs as on words alone.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.decode import determinize_native as dn
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_best_path import best_paths
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.kaldi.lattice import CompactLattice

sys.path.insert(0, str(Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

ACWT = 0.083333
LMWTS = list(range(4, 16))
PENALTIES = [0.0, 0.5, 1.0]


@pytest.fixture(scope="module", params=["polish", "digits"])
def lattices(request, kaldi_polish, kaldi_digits):
    """(transition model, [(utt, frames, raw search lattice)], decoder, beam)."""
    if request.param == "polish":
        tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 3)
        gdir, beam = kaldi_polish / "exp/tri1/graph", 7.0
    else:  # the digits GMM is sure of itself: a wider beam gives its lattices alternatives
        tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 12)
        gdir, beam = kaldi_digits / "exp/mono/graph", 16.0
    graph = load_graph_dir(str(gdir))
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                         LatgenOptions(beam=16.0 if request.param == "digits" else 13.0,
                                       lattice_beam=beam), graph.max_ilabel,
                         fst_path=graph.path)
    raws = [(utt, ll.shape[0], dec._faster.search(dec.mapping.scaled(ll, ACWT), utt))
            for utt, ll in lls.items()]
    yield tm, raws, dec, beam
    dec.close()


def _combos():
    combos = [(lmwt, wip) for lmwt in LMWTS for wip in PENALTIES]
    return [1.0] * len(combos), [1.0 / c[0] for c in combos], [c[1] for c in combos]


def _assert_word_deterministic(lat: CompactLattice, utt: str) -> None:
    for arcs in lat.arcs:
        words = [a.word for a in arcs]
        assert 0 not in words and len(words) == len(set(words)), utt


@pytest.mark.parametrize("phones_first", [True, False])
def test_best_paths_are_the_raw_lattices(lattices, phones_first):
    """At the decoding scale, with any insertion penalty, the determinized lattice's best path
    is the raw lattice's: words, transition-ids and costs. At other LM weights it keeps, per
    word sequence, the alignment best at the decoding scale (as Kaldi's does), which costs no
    less than the raw lattice's best: on these lattices every LM weight still picks the raw
    lattice's words."""
    tm, raws, dec, beam = lattices
    marks = dn.phone_boundaries(tm) if phones_first else None
    lm, ac, wip = _combos()
    ac = [a / ACWT for a in ac]  # the lattices' acoustic costs are scaled by ACWT
    at_decoding = [1.0] * len(PENALTIES), [1.0] * len(PENALTIES), PENALTIES
    branching = 0
    for utt, frames, raw in raws:
        state_level = dn.state_level(raw, dec.graph.pair_tid, dec.graph.pair_word)
        det = dn.determinize_raw(raw, dec.graph.pair_tid, dec.graph.pair_word, beam, 100000,
                                 marks)
        _assert_word_deterministic(det, utt)
        assert det.num_arcs < state_level.num_arcs, utt
        branching += det.num_arcs > det.num_states
        for x, y in zip(best_paths(det, *at_decoding), best_paths(state_level, *at_decoding)):
            assert x.words == y.words and x.tids == y.tids and len(x.tids) == frames, utt
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-3)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, abs=1e-3)
        for x, y, g, a in zip(best_paths(det, lm, ac, wip), best_paths(state_level, lm, ac, wip),
                              lm, ac):
            assert x.words == y.words and len(x.tids) == frames, utt
            assert g * x.graph_cost + a * x.acoustic_cost >= \
                g * y.graph_cost + a * y.acoustic_cost - 1e-3
    assert branching  # some lattices hold alternatives


def _word_acceptor(lat: CompactLattice):
    """The lattice as a kaldifst tropical acceptor over words (epsilon: no word), weight
    graph + acoustic cost."""
    import kaldifst

    fst = kaldifst.StdVectorFst()
    for _ in range(lat.num_states):
        fst.add_state()
    fst.start = lat.start
    for s, arcs in enumerate(lat.arcs):
        for a in arcs:
            fst.add_arc(s, kaldifst.StdArc(a.word, a.word, a.graph + a.acoustic, a.next))
    for s, (g, a, _) in lat.finals.items():
        fst.set_final(s, g + a)
    return fst


def _walk_kaldifst(fst, words) -> float:
    """The cost of ``words`` in a deterministic kaldifst acceptor (inf: not accepted)."""
    import kaldifst

    s, cost = fst.start, 0.0
    for w in words:
        nxt = [a for a in kaldifst.ArcIterator(fst, s) if a.ilabel == w]
        if not nxt:
            return float("inf")
        assert len(nxt) == 1  # deterministic
        s, cost = nxt[0].nextstate, cost + float(nxt[0].weight.value)
    return cost + float(fst.final(s).value)


def _sequences_kaldifst(fst, limit: float):
    """{word sequence: cost} of an acyclic deterministic kaldifst acceptor, the sequences
    costing at most ``limit`` (found by a search bounded with the backward costs)."""
    import kaldifst

    arcs = {}
    for s in range(fst.num_states):
        it = kaldifst.ArcIterator(fst, s)
        arcs[s] = [(a.ilabel, float(a.weight.value), a.nextstate) for a in it]
    finals = {s: float(fst.final(s).value) for s in range(fst.num_states)}
    return _enumerate(fst.start, arcs, finals, limit)


def _sequences_lattice(lat: CompactLattice, limit: float):
    arcs = {s: [(a.word, a.graph + a.acoustic, a.next) for a in lat.arcs[s]]
            for s in range(lat.num_states)}
    finals = {s: lat.finals[s][0] + lat.finals[s][1] if s in lat.finals else float("inf")
              for s in range(lat.num_states)}
    return _enumerate(lat.start, arcs, finals, limit)


def _enumerate(start, arcs, finals, limit):
    beta = {}

    def best_to_end(s):
        if s not in beta:
            beta[s] = min([finals[s]] + [c + best_to_end(n) for _, c, n in arcs[s]])
        return beta[s]

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    out = {}
    stack = [(start, 0.0, ())]
    while stack:
        s, cost, words = stack.pop()
        if cost + best_to_end(s) > limit:
            continue
        if finals[s] < float("inf") and finals[s] + cost <= limit:
            assert words not in out  # deterministic: each word sequence once
            out[words] = cost + finals[s]
        for w, c, n in arcs[s]:
            stack.append((n, cost + c, words + ((w,) if w else ())))
    return out


def test_word_sequences_are_openfsts(lattices):
    """Every word sequence within the beam, once, with its best cost: as kaldifst's
    determinize_star (OpenFst, Kaldi's fstdeterminizestar) finds them in the raw lattice."""
    import kaldifst

    tm, raws, dec, beam = lattices
    compared = 0
    for utt, _, raw in raws:
        state_level = dn.state_level(raw, dec.graph.pair_tid, dec.graph.pair_word)
        det = dn.determinize_raw(raw, dec.graph.pair_tid, dec.graph.pair_word, beam, 100000,
                                 dn.phone_boundaries(tm))
        ref = _word_acceptor(state_level)
        assert not kaldifst.determinize_star(ref)  # False: completed
        best = best_paths(det, [1.0], [1.0], [0.0])[0]
        best = best.graph_cost + best.acoustic_cost
        ours = _sequences_lattice(det, best + beam + 1.0)
        theirs = _sequences_kaldifst(ref, best + beam + 1e-2)
        assert min(theirs.values()) == pytest.approx(best, abs=1e-2), utt
        # each of ours is a word sequence of the raw lattice, with its best cost
        for words, cost in ours.items():
            assert cost == pytest.approx(_walk_kaldifst(ref, words), abs=1e-2), (utt, words)
        # and every word sequence within the beam is ours (those at its edge aside)
        inside = {w for w, c in theirs.items() if c <= best + beam - 1e-2}
        assert inside <= set(ours), utt
        compared += len(inside)
    assert compared > len(raws)  # alternatives, not only the best paths


@pytest.mark.parametrize("which", ["polish", "digits"])
def test_phone_first_equals_word_only(which, kaldi_polish, kaldi_digits):
    if which == "polish":
        tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 2)
        gdir, beam = kaldi_polish / "exp/tri1/graph", 8.0
    else:  # the digits GMM is sure of itself: a wider beam gives its lattices alternatives
        tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 12)
        gdir, beam = kaldi_digits / "exp/mono/graph", 16.0
    graph = load_graph_dir(str(gdir))
    marks = dn.phone_boundaries(tm)
    # one mark per phone instance: leaving each phone's first HMM state
    assert 0 < np.count_nonzero(marks) < len(marks)
    assert set(np.unique(marks[marks > 0])) <= set(range(1, tm.num_phones + 1))
    decs = [LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                           LatgenOptions(beam=16.0, lattice_beam=beam), graph.max_ilabel,
                           fst_path=graph.path, phone_of_tid=m) for m in (None, marks)]
    lm, ac, wip = _combos()
    compared = branching = 0
    for utt, ll in lls.items():
        word_only, phone_first = (d.decode(ll, ACWT, utt) for d in decs)
        assert word_only.ok and phone_first.ok, utt
        _assert_word_deterministic(phone_first.lattice, utt)
        branching += phone_first.lattice.num_arcs > phone_first.lattice.num_states
        for x, y in zip(best_paths(word_only.lattice, lm, ac, wip),
                        best_paths(phone_first.lattice, lm, ac, wip)):
            assert x.words == y.words
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-3)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, abs=1e-3)
            assert len(x.tids) == len(y.tids) == ll.shape[0]
            compared += 1
    for d in decs:
        d.close()
    assert compared == len(lls) * len(LMWTS) * len(PENALTIES)
    assert branching >= 1
