"""hybridasr.decode.mbr (Kaldi's MinimumBayesRisk, lattice-to-ctm-conf's sausages): a lattice
of one path gives that path with confidence 1 and its times; hand-made lattices of competing
paths give the hypothesis of least expected edit distance (by enumerating the paths) and the
bin posteriors the paths imply; on real lattices (the toolkit's decoder on kaldi_polish's tri1
graph with GMM log-likelihoods) the bins sum to 1, the confidences lie in [0, 1], the MBR
hypothesis expects no more errors than the best path, and decode_mbr=False keeps the best
path's words; lattice_to_ctm.py --confidence=mbr writes those words and confidences."""
from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.decode.lattice_best_path import best_path
from hybridasr.decode.mbr import lattice_mbr, mbr_decode, prune_lattice
from hybridasr.kaldi.lattice import Arc, CompactLattice

sys.path.insert(0, str(Path(__file__).parent))


def _lattice(paths):
    """A lattice of separate paths from one start state to one final state: each path a list
    of (word, frames) arcs and its probability (put on its first arc's graph cost)."""
    lat = CompactLattice()
    lat.start = lat.add_state()
    end = lat.add_state()
    lat.finals[end] = (0.0, 0.0, ())
    tid = iter(range(1, 10 ** 6))
    for arcs, p in paths:
        s = lat.start
        for i, (w, frames) in enumerate(arcs):
            nxt = end if i == len(arcs) - 1 else lat.add_state()
            lat.arcs[s].append(Arc(w, -math.log(p) if i == 0 else 0.0, 0.0,
                                   tuple(next(tid) for _ in range(frames)), nxt))
            s = nxt
    return lat


def _lev(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


def _expected_errors(hyp, paths):
    return sum(p * _lev(hyp, [w for w, _ in arcs if w]) for arcs, p in paths)


def test_one_path_is_itself_with_confidence_one():
    # words 5, <eps> (silence), 7, 9 over frames 0-12, 12-15, 15-30, 30-31
    lat = _lattice([([(5, 12), (0, 3), (7, 15), (9, 1)], 1.0)])
    for decode_mbr in (True, False):
        r = mbr_decode(lat, decode_mbr)
        assert r.words == [5, 7, 9]
        np.testing.assert_allclose(r.confidences, 1.0)
        np.testing.assert_allclose(r.times, [[0, 12], [15, 30], [30, 31]])
        assert r.expected_errors == pytest.approx(0.0, abs=1e-12)
        assert all(sum(b.values()) == pytest.approx(1.0) for b in r.bins)


@pytest.mark.parametrize("paths, mbr_words, bins", [
    # MAP "1 2" (0.4) has word 1 no other path has; "3 2" expects 0.7 errors against 0.9
    ([([(1, 10), (2, 10)], 0.4), ([(3, 10), (2, 10)], 0.3), ([(3, 10), (4, 10)], 0.3)],
     [3, 2], [{0: 1.0}, {1: 0.4, 3: 0.6}, {0: 1.0}, {2: 0.7, 4: 0.3}, {0: 1.0}]),
    # MAP "1 5 2" (0.4) inserts 5, which the other paths (the same words at other times)
    # lack: "1 2" expects 0.4 errors against 0.6
    ([([(1, 10), (5, 5), (2, 10)], 0.4), ([(1, 10), (0, 5), (2, 10)], 0.35),
      ([(1, 12), (0, 3), (2, 10)], 0.25)],
     [1, 2], [{0: 1.0}, {1: 1.0}, {0: 0.6, 5: 0.4}, {2: 1.0}, {0: 1.0}]),
])
def test_mbr_is_the_least_expected_errors_of_the_paths(paths, mbr_words, bins):
    lat = _lattice(paths)
    map_words = best_path(lat).words
    r = mbr_decode(lat)
    assert r.words == mbr_words != map_words
    # brute force: every word sequence of up to 3 of the lattice's words
    vocab = sorted({w for arcs, _ in paths for w, _ in arcs if w})
    cands = [list(c) for n in range(4) for c in itertools.product(vocab, repeat=n)]
    best = min(_expected_errors(c, paths) for c in cands)
    assert _expected_errors(r.words, paths) == pytest.approx(best)
    assert r.expected_errors == pytest.approx(best, abs=1e-3)  # + deltas of 1e-5
    assert len(r.bins) == len(bins)
    for got, want in zip(r.bins, bins):
        assert sum(got.values()) == pytest.approx(1.0)
        assert {w: p for w, p in got.items() if p > 1e-9} == pytest.approx(want)
    np.testing.assert_allclose(r.confidences, [bins[1][mbr_words[0]], bins[3][mbr_words[1]]])
    # the times: posterior-weighted averages of the arcs in the word's bin
    want = [0.0, 10.0] if mbr_words[0] == 3 else [0.0, 10.0 * 0.75 + 12.0 * 0.25]
    assert r.times[0].tolist() == pytest.approx(want)
    # decode_mbr=False: the best path's words with their bin posteriors
    r0 = mbr_decode(lat, decode_mbr=False)
    assert r0.words == map_words
    assert r0.expected_errors == pytest.approx(_expected_errors(map_words, paths), abs=1e-3)
    assert r0.expected_errors > r.expected_errors


@pytest.fixture(scope="module")
def polish_lattices(kaldi_polish):
    """Real lattices: the toolkit's decoder on kaldi_polish's tri1 graph, GMM log-likelihoods
    of the 3 shortest test utterances (lattice beam 8: many paths)."""
    from test_decode_pdf_graph import gmm_loglikes

    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder

    tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 3)
    graph = load_graph_dir(str(kaldi_polish / "exp/tri1/graph"))
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                         LatgenOptions(beam=13.0, lattice_beam=8.0), graph.max_ilabel,
                         fst_path=graph.path)
    try:
        return {u: dec.decode(ll, 0.083333, u).lattice for u, ll in lls.items()}
    finally:
        dec.close()


def test_real_lattices(polish_lattices):
    differ = 0
    for utt, lat in polish_lattices.items():
        assert lat.num_arcs > 50, utt  # lattices with competing paths
        for lmwt in (6.0, 10.0, 14.0):
            r = lattice_mbr(lat, lmwt)
            r0 = lattice_mbr(lat, lmwt, decode_mbr=False)
            bp = best_path(lat.scaled(1.0, 1.0 / lmwt))
            assert r0.words == bp.words, (utt, lmwt)
            assert r.expected_errors <= r0.expected_errors + 1e-9, (utt, lmwt)
            for res in (r, r0):
                assert all(sum(b.values()) == pytest.approx(1.0, abs=1e-6) for b in res.bins)
                assert np.all((res.confidences >= 0) & (res.confidences <= 1 + 1e-9))
                assert np.all(res.times[:, 0] <= res.times[:, 1] + 1e-6)
                assert np.all(np.diff(res.bin_times, axis=0) >= -1e-6)
            assert r.confidences.min() < 1.0, (utt, lmwt)
            differ += r.words != bp.words
    assert differ >= 1  # MBR changes some hypothesis here (it does at LMWT 10 and 14)


def test_pruning_keeps_the_paths_within_the_beam():
    lat = _lattice([([(1, 10)], 0.9), ([(2, 10)], 0.09), ([(3, 10)], 1e-4)])
    kept = prune_lattice(lat, 5.0)  # -log(1e-4 / 0.9) = 9.1 > 5; -log(0.1) = 2.3 < 5
    assert sorted(a.word for a in kept.arcs[kept.start]) == [1, 2]
    r = mbr_decode(kept)
    assert r.words == [1] and r.confidences[0] == pytest.approx(0.9 / 0.99)


def test_lattice_to_ctm_mbr(polish_lattices, kaldi_polish, tmp_path):
    """lattice_to_ctm.py --confidence=mbr: with --decode-mbr=true the MBR words, with false the
    best path's (the words of --confidence=frame), confidences the bin posteriors; times
    within the utterance and in order."""
    from train_helpers import load_pybin

    from hybridasr.kaldi.lattice import CompactLatticeWriter

    ark = tmp_path / "lat.ark"
    with CompactLatticeWriter(f"ark:{ark}") as w:
        for utt, lat in polish_lattices.items():
            w.write(utt, lat)
    graph = kaldi_polish / "exp/tri1/graph"
    cli = load_pybin("lattice_to_ctm")
    ctms = {}
    for name, opts in (("frame", []), ("mbr", ["--confidence=mbr"]),
                       ("best", ["--confidence=mbr", "--decode-mbr=false"])):
        out = tmp_path / f"{name}.ctm"
        assert cli.main(["--lm-weight=10", *opts, str(kaldi_polish / "exp/tri1/35.mdl"),
                         str(graph / "phones/word_boundary.int"), str(graph / "words.txt"),
                         f"ark:{ark}", str(out)]) == 0
        ctms[name] = [line.split() for line in out.read_text().splitlines()]
    words = {int(i): w for w, i in (line.split() for line in
                                    (graph / "words.txt").read_text().splitlines())}

    def by_utt(ctm, col):
        out = {}
        for c in ctm:
            out.setdefault(c[0], []).append(c[col])
        return out

    assert by_utt(ctms["best"], 4) == by_utt(ctms["frame"], 4)
    # the frame CTM's times are the best path's word spans; decode_mbr=false keeps them
    assert by_utt(ctms["best"], 2) == by_utt(ctms["frame"], 2)
    for utt, lat in polish_lattices.items():
        r = lattice_mbr(lat, 10.0)
        assert by_utt(ctms["mbr"], 4).get(utt, []) == [words[w] for w in r.words]
        assert [float(c) for c in by_utt(ctms["mbr"], 5)[utt]] == \
            pytest.approx(r.confidences.tolist(), abs=0.006)
        starts = [float(s) for s in by_utt(ctms["mbr"], 2)[utt]]
        ends = [s + float(d) for s, d in zip(starts, by_utt(ctms["mbr"], 3)[utt])]
        assert all(e <= s + 0.015 for e, s in zip(ends, starts[1:])), utt  # no overlap
    assert by_utt(ctms["mbr"], 4) != by_utt(ctms["best"], 4)  # MBR differs at LMWT 10
    assert by_utt(ctms["mbr"], 5) != by_utt(ctms["frame"], 5)
