"""Incremental decoding with the toolkit's C++ LatticeFasterDecoder (``LatticeDecoder
.online_*``, ``LatticeFasterSearch.start/advance/finish``), on real GMM log-likelihoods of
kaldi_digits' test utterances on its monophone graph and of a kaldi_polish test utterance on
its tri1 graph: decoding in pieces gives the lattice of one-shot decoding, and the partial best
path is the best path's words."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_best_path import best_paths
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import encode_binary

sys.path.insert(0, str(Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

ACWT = 0.083333
PIECES = [1, 7, 0, 13]  # then the rest in 13-frame pieces


@pytest.fixture(scope="module")
def digits(kaldi_digits):
    tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 6)
    graph = load_graph_dir(str(kaldi_digits / "exp/mono/graph"))
    # a short prune interval: pieces straddle the frames where the token graph is pruned
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, LatgenOptions(prune_interval=5),
                         graph.max_ilabel, fst_path=graph.path)
    return dec, lls


@pytest.fixture(scope="module")
def polish(kaldi_polish):
    """Multi-word utterances (the digits' are one word each)."""
    tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 1)
    graph = load_graph_dir(str(kaldi_polish / "exp/tri1/graph"))
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, LatgenOptions(),
                         graph.max_ilabel, fst_path=graph.path)
    return dec, lls


@pytest.fixture(params=["digits", "polish"])
def both(request):
    return (*request.getfixturevalue(request.param), request.param)


def _pieces(n):
    sizes, t = [], 0
    for k in PIECES + [13] * n:
        if t >= n:
            break
        k = min(k, n - t)
        sizes.append(k)
        t += k
    return sizes


def _best_words(res):
    return best_paths(res.lattice, [1.0], [ACWT], [0.0])[0].words


def test_pieces_give_the_one_shot_lattice(both):
    dec, lls, _ = both
    for utt, ll in lls.items():
        whole = dec.decode(ll, ACWT, utt)
        assert whole.ok, utt
        dec.online_start(ACWT, utt)
        t = 0
        for k in _pieces(ll.shape[0]):
            dec.online_advance(ll[t:t + k])
            t += k
            assert dec._faster.num_frames_decoded == t
        assert t == ll.shape[0]
        res = dec.online_finish()
        assert res.ok and res.num_frames == whole.num_frames, utt
        assert res.reached_final == whole.reached_final and res.raw_arcs == whole.raw_arcs
        assert encode_binary(res.lattice) == encode_binary(whole.lattice), utt
        assert _best_words(res) == _best_words(whole), utt


def test_search_in_pieces_gives_the_same_raw_lattice(digits):
    dec, lls = digits
    utt, ll = max(lls.items(), key=lambda kv: kv[1].shape[0])
    scaled = dec.mapping.scaled(dec.mapping.check(ll, utt), ACWT)
    one = dec._faster.search(scaled, utt)
    dec._faster.start()
    for t in range(0, scaled.shape[0], 10):
        dec._faster.advance(scaled[t:t + 10], utt)
    dec._faster.advance(scaled[:0], utt)
    two = dec._faster.finish(utt)
    for name in ("src", "dst", "ilabel", "olabel", "graph", "acoustic", "final"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name), err_msg=name)
    assert one.reached_final == two.reached_final


def test_partial_words_are_the_best_paths(both):
    dec, lls, corpus = both
    multi = 0
    for utt, ll in lls.items():
        best = _best_words(dec.decode(ll, ACWT, utt))
        dec.online_start(ACWT, utt)
        assert dec.online_partial_words() == []
        n = ll.shape[0]
        dec.online_advance(ll[:3 * n // 4])
        part = dec.online_partial_words()
        dec.online_advance(ll[3 * n // 4:])
        last = dec.online_partial_words()
        dec.online_finish()
        # the utterances end in silence: the best token at the end is on the best path
        assert last == best, utt
        if len(best) >= 2:
            multi += 1
            assert part, f"{utt}: no partial words three quarters through {best}"
            assert all(w > 0 for w in part)
            assert len(part) < len(best)
    assert multi > 0 or corpus == "digits", "no multi-word polish test utterance"


def test_finish_words_are_the_lattices_best_path_at_the_search_scale(both):
    """online_finish_words (the traceback with final weights, no lattice made) gives the
    determinized lattice's best path at LM weight 1 / acoustic scale, and ends the
    utterance."""
    dec, lls, _ = both
    for utt, ll in lls.items():
        best = _best_words(dec.decode(ll, ACWT, utt))
        dec.online_start(ACWT, utt)
        for a, b in zip(range(0, len(ll), 13), range(13, len(ll) + 13, 13)):
            dec.online_advance(ll[a:b])
        assert dec.online_finish_words() == best, utt
        with pytest.raises(RuntimeError, match="online_start"):
            dec.online_finish()


def test_advance_without_start_is_an_error(digits):
    dec, lls = digits
    utt, ll = next(iter(lls.items()))
    with pytest.raises(RuntimeError, match="online_start"):
        dec.online_advance(ll[:5])
    dec.online_start(ACWT, utt)
    dec.online_advance(ll[:5])
    dec.online_finish()
    with pytest.raises(RuntimeError, match="online_start"):
        dec.online_advance(ll[5:10])
    with pytest.raises(RuntimeError, match="online_start"):
        dec.online_finish()


def test_a_label_beyond_the_columns_is_a_format_error(digits):
    dec, lls = digits
    utt, ll = next(iter(lls.items()))
    scaled = dec.mapping.scaled(dec.mapping.check(ll, utt), ACWT)
    dec._faster.start()
    with pytest.raises(FormatError, match=utt):
        dec._faster.advance(scaled[:4, :-1], utt)
    assert dec._faster.finish(utt) is None


def test_no_frames_gives_no_lattice(digits):
    dec, lls = digits
    utt, ll = next(iter(lls.items()))
    dec.online_start(ACWT, utt)
    dec.online_advance(ll[:0])
    res = dec.online_finish()
    assert not res.ok and res.num_frames == 0
