"""Lattice determinization on phones first (Kaldi's DeterminizeLatticePhonePruned) against
determinization on words alone, on real lattices: kaldi_polish's tri1 GMM (context-dependent
tree) and kaldi_digits' monophone GMM scoring real test utterances, decoded on their graphs.
Both must give every LM weight and insertion penalty the same best word sequence and costs,
and the phone-first lattice must be word-deterministic."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from hybridasr.decode.determinize import determinize_lattice_pruned, phone_boundaries
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.decode.lattice_best_path import best_paths

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

LMWTS = list(range(4, 16))
PENALTIES = [0.0, 0.5, 1.0]


@pytest.mark.parametrize("which", ["polish", "digits"])
def test_phone_first_equals_word_only(which, kaldi_polish, kaldi_digits):
    if which == "polish":
        tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 2)
        gdir, beam = kaldi_polish / "exp/tri1/graph", 8.0
    else:  # the digits GMM is sure of itself: a wider beam gives its lattices alternatives
        tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 12)
        gdir, beam = kaldi_digits / "exp/mono/graph", 16.0
    graph = load_graph_dir(str(gdir))
    marks = phone_boundaries(tm)
    # one mark per phone instance: leaving each phone's first HMM state
    assert 0 < np.count_nonzero(marks) < len(marks)
    assert set(np.unique(marks[marks > 0])) <= set(range(1, tm.num_phones + 1))
    raws = []
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                         LatgenOptions(beam=16.0, lattice_beam=beam), graph.max_ilabel,
                         fst_path=graph.path)
    dec.options.determinize_lattice = False  # the raw lattice, pruned, to determinize here
    dec.options.lattice_beam = 1e9
    for utt, ll in lls.items():
        res = dec.decode(ll, 0.083333, utt)
        assert res.ok, utt
        raws.append(res.lattice)
    dec.close()
    combos = [(lmwt, wip) for lmwt in LMWTS for wip in PENALTIES]
    lm, ac, wip = [1.0] * len(combos), [1.0 / c[0] for c in combos], [c[1] for c in combos]
    compared = branching = 0
    for raw in raws:
        word_only = determinize_lattice_pruned(raw, beam / 0.083333)  # unscaled costs
        phone_first = determinize_lattice_pruned(raw, beam / 0.083333, phone_of_tid=marks)
        for arcs in phone_first.arcs:
            labels = [a.word for a in arcs]
            assert len(labels) == len(set(labels))  # deterministic on words
        frames = len(best_paths(raw, [1.0], [1.0], [0.0])[0].tids)
        branching += phone_first.num_arcs > phone_first.num_states  # alternatives to compare
        for x, y in zip(best_paths(word_only, lm, ac, wip), best_paths(phone_first, lm, ac, wip)):
            assert x.words == y.words
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-3)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, abs=1e-3)
            assert len(x.tids) == len(y.tids) == frames
            compared += 1
    assert compared == len(raws) * len(combos)
    assert branching >= 1
