"""Decoding on the graph relabelled once to pdf+1 input labels and (transition-id, word) pair
output labels (hybridasr.kaldi.fst.relabel_by_pdf) gives the same words, transition-id
alignments and costs as Kaldi's decode-faster-mapped search on the original graph (the reference
built here: FasterDecoder on the transition-id graph, a [T, num_transition_ids] matrix), on the
real graphs of kaldi_digits (mono, 70 pdfs) and kaldi_polish (tri1, 1,192 pdfs, 5,748 words)
with the real GMM log-likelihoods of their test sets."""
from __future__ import annotations

import os

import kaldifst
import numpy as np
import pytest

from hybridasr.data.dataset import UtteranceDataset
from hybridasr.features.transform import FeatureTransform
from hybridasr.decode.decoder import DecodeOptions, MappedDecoder, pdf_graph
from hybridasr.decode.graph import load_graph_dir
from hybridasr.errors import FormatError
from hybridasr.kaldi.fst import const_fst_arrays, relabel_by_pdf
from hybridasr.kaldi.gmm_model import read_gmm_model
from hybridasr.kaldi.pdf_mapping import PdfMapping


def gmm_loglikes(kaldi_dir, model, num_utts):
    """GMM log-likelihoods (apply-cmvn + add-deltas, as the GMM decode did) of the shortest
    ``num_utts`` utterances of data/test."""
    tm, gmm = read_gmm_model(str(kaldi_dir / model))
    cwd = os.getcwd()
    os.chdir(kaldi_dir)
    try:
        ds = UtteranceDataset.from_data_dir(
            "data/test", transform=FeatureTransform(norm_means=True, delta_order=2))
        utts = sorted(ds, key=lambda u: ds.load(u)[0].shape[0])[:num_utts]
        lls = {u: gmm.log_likelihoods(ds.load(u)[0]) for u in utts}
    finally:
        os.chdir(cwd)
    return tm, lls


def decode_original_graph(fst, tid2pdf, opts, loglikes, acwt):
    """The reference: kaldi-decoder's FasterDecoder on the original (transition-id) graph with
    column ``tid - 1`` = ``acwt * loglikes[:, pdf(tid)]``, as Kaldi's DecodableMatrixScaledMapped
    reads it. Returns (ok, reached_final, words, alignment, graph_cost, acoustic_cost)."""
    import kaldi_decoder

    dec = kaldi_decoder.FasterDecoder(fst, kaldi_decoder.FasterDecoderOptions(
        beam=opts.beam, max_active=opts.max_active, min_active=opts.min_active,
        beam_delta=opts.beam_delta, hash_ratio=opts.hash_ratio))
    matrix = PdfMapping(tid2pdf).by_label(loglikes, acwt)  # alive while the decoder runs
    dec.decode(kaldi_decoder.DecodableCtc(matrix))
    ok, best = dec.get_best_path(True)
    _, ilabels, olabels, weight = kaldifst.get_linear_symbol_sequence(best)
    return (ok, bool(dec.reached_final()), list(olabels), list(ilabels), float(weight.value1),
            float(weight.value2))


@pytest.mark.parametrize("which", ["digits", "polish"])
def test_pdf_graph_decodes_as_the_original_graph(which, kaldi_digits, kaldi_polish):
    if which == "digits":
        tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 8)
        gdir, acwt = kaldi_digits / "exp/mono/graph", 0.083333
    else:
        tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 2)
        gdir, acwt = kaldi_polish / "exp/tri1/graph", 0.083333
    graph = load_graph_dir(str(gdir))
    opts = DecodeOptions(beam=11, max_active=3000, min_active=200)
    new = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, opts, graph.max_ilabel,
                        fst_path=graph.path)
    assert new.scaled_matrix(next(iter(lls.values())), acwt).shape[1] == tm.num_pdfs
    num_words = 0
    for utt, ll in lls.items():
        ok, final, words, alignment, graph_cost, ac_cost = decode_original_graph(
            graph.fst, tm.tid2pdf, opts, ll, acwt)
        b = new.decode(ll, acwt, utt)
        assert ok and b.ok and final == b.reached_final
        assert b.words == words and b.alignment == alignment, utt
        assert len(b.alignment) == ll.shape[0]
        assert (b.graph_cost, b.acoustic_cost) == (graph_cost, ac_cost)
        num_words += len(b.words)
    assert num_words > 0


def test_relabel_maps_every_arc_back(kaldi_polish, tmp_path):
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(str(kaldi_polish / "exp/tri1/35.mdl"))
    path = str(kaldi_polish / "exp/tri1/graph/HCLG.fst")
    graph = load_graph_dir(str(kaldi_polish / "exp/tri1/graph"))
    orig = const_fst_arrays(graph.fst, path)
    pg = relabel_by_pdf(graph.fst, tm.tid2pdf, path)
    new = const_fst_arrays(pg.fst)
    assert np.array_equal(new.arcs[:, 2:], orig.arcs[:, 2:])  # weights, next states
    assert np.array_equal(new.states[:, :4], orig.states[:, :4])
    il, ol = orig.arcs[:, 0], orig.arcs[:, 1]
    assert np.array_equal(pg.pair_tid[new.arcs[:, 1]], il)
    assert np.array_equal(pg.pair_word[new.arcs[:, 1]], ol)
    assert np.array_equal(new.arcs[:, 0], np.where(il > 0, tm.tid2pdf[il] + 1, 0))
    assert new.arcs[:, 0].max() == tm.num_pdfs  # pdf 1191 is used
    assert pg.pair_tid[0] == pg.pair_word[0] == 0
    # output-epsilon counts recomputed per state
    per_state = np.repeat(np.arange(len(new.states)), new.states[:, 2].astype(np.int64))
    assert np.array_equal(new.states[:, 4],
                          np.bincount(per_state[new.arcs[:, 1] == 0], minlength=len(new.states)))
    # a vector-format copy of the graph (kaldifst converts it) relabels the same
    vec = kaldifst.StdVectorFst(graph.fst)
    vpath = tmp_path / "HCLG.vector.fst"
    vec.write(str(vpath))
    pv = relabel_by_pdf(kaldifst.StdFst.read(str(vpath)), tm.tid2pdf)
    assert np.array_equal(const_fst_arrays(pv.fst).arcs, new.arcs)
    # cached per graph file
    assert pdf_graph(graph.fst, tm.tid2pdf, path) is pdf_graph(graph.fst, tm.tid2pdf, path)
    with pytest.raises(FormatError, match="not a transition-id"):
        relabel_by_pdf(graph.fst, tm.tid2pdf[:100], path)
