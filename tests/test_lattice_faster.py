"""The toolkit's C++ LatticeFasterDecoder (hybridasr/decode/native/lattice_faster.cc) against
kaldi-decoder's LatticeSimpleDecoder and FasterDecoder, on real GMM log-likelihoods of real
test utterances decoded on kaldi_polish's tri1 graph (context-dependent tree) and
kaldi_digits' monophone graph."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.decode import lattice_faster, native
from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.decode.lattice_best_path import best_paths

sys.path.insert(0, str(Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

ACWT = 0.083333
LMWTS = [6.0, 10.0, 14.0]


@pytest.fixture(scope="module", params=["polish", "digits"])
def setup(request, kaldi_polish, kaldi_digits):
    if request.param == "polish":
        tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 3)
        gdir = kaldi_polish / "exp/tri1/graph"
    else:
        tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 12)
        gdir = kaldi_digits / "exp/mono/graph"
    return tm, lls, load_graph_dir(str(gdir)), request.param


def _decoder(setup, **opts):
    tm, _, graph, _ = setup
    return LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, LatgenOptions(**opts),
                          graph.max_ilabel, fst_path=graph.path)


def _paths(lat):
    return best_paths(lat, [1.0] * len(LMWTS), [1.0 / w for w in LMWTS], [0.0] * len(LMWTS))


def test_the_library_builds():
    assert lattice_faster.available(), "g++ could not build lattice_faster.cc"


def test_same_best_paths_as_lattice_simple_decoder(setup):
    """Without --max-active and --min-active both searches keep every token within the
    beam: the same raw lattices (but for arcs at the lattice beam's edge) and, determinized,
    the same best words, alignment and costs at each LM weight. --min-active (200 by
    default, which the simple decoder lacks) only ever adds to the search."""
    _, lls, _, _ = setup
    faster = _decoder(setup, beam=13.0, lattice_beam=6.0, min_active=0, decoder="faster")
    simple = _decoder(setup, beam=13.0, lattice_beam=6.0, decoder="simple")
    default = _decoder(setup, beam=13.0, lattice_beam=6.0)
    assert (faster.search, simple.search, default.search) == ("faster", "simple", "faster")
    for utt, ll in lls.items():
        a, b = faster.decode(ll, ACWT, utt), simple.decode(ll, ACWT, utt)
        assert a.ok and b.ok and a.reached_final == b.reached_final, utt
        assert abs(a.raw_arcs - b.raw_arcs) <= max(3, 0.002 * b.raw_arcs), utt
        assert default.decode(ll, ACWT, utt).raw_arcs >= a.raw_arcs - 3, utt
        for x, y in zip(_paths(a.lattice), _paths(b.lattice)):
            assert x.words == y.words and x.tids == y.tids, utt
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-2)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, rel=1e-5, abs=1e-2)
    for d in (faster, simple, default):
        d.close()


def test_best_path_is_the_faster_decoders_one_best(setup):
    """The lattice's best path at the decoding scale is kaldi-decoder's FasterDecoder's
    1-best with the same beam and --max-active."""
    tm, lls, graph, _ = setup
    lat_dec = _decoder(setup, beam=11.0, lattice_beam=4.0, max_active=2000)
    one_best = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                             DecodeOptions(beam=11.0, max_active=2000, min_active=200),
                             graph.max_ilabel, fst_path=graph.path)
    for utt, ll in lls.items():
        lat = lat_dec.decode(ll, ACWT, utt).lattice
        path = best_paths(lat, [1.0], [ACWT], [0.0])[0]
        ref = one_best.decode(ll, ACWT, utt)
        assert path.words == ref.words and path.tids == ref.alignment, utt
        # the lattice's acoustic costs are unscaled, as Kaldi writes them
        assert path.graph_cost + ACWT * path.acoustic_cost == pytest.approx(ref.total_cost,
                                                                            abs=1e-2)
    lat_dec.close()


def test_max_active_limits_the_search(setup):
    tm, lls, graph, _ = setup
    utt, ll = max(lls.items(), key=lambda kv: kv[1].shape[0])
    wide = _decoder(setup, beam=16.0, lattice_beam=8.0, determinize_lattice=False)
    narrow = _decoder(setup, beam=16.0, lattice_beam=8.0, determinize_lattice=False,
                      max_active=4, min_active=1)
    a, b = wide.decode(ll, ACWT, utt), narrow.decode(ll, ACWT, utt)
    assert a.ok and b.ok
    assert b.raw_arcs < a.raw_arcs
    wide.close()
    narrow.close()


def test_pruning_as_it_goes_equals_pruning_at_the_end(setup):
    """Lattice-beam pruning every frame keeps exactly what one pruning after the last frame
    keeps: it only removes what no later frame can bring back within the beam."""
    _, lls, _, _ = setup
    at_end = _decoder(setup, beam=13.0, lattice_beam=7.0, determinize_lattice=False,
                      prune_interval=100000)
    every = _decoder(setup, beam=13.0, lattice_beam=7.0, determinize_lattice=False,
                     prune_interval=1)
    for utt, ll in lls.items():
        raw_a = at_end._faster.search(at_end.mapping.scaled(ll, ACWT), utt)
        raw_b = every._faster.search(every.mapping.scaled(ll, ACWT), utt)

        def arcs(r):
            return sorted(zip(r.ilabel.tolist(), r.olabel.tolist(),
                              np.round(r.graph, 3).tolist(), np.round(r.acoustic, 3).tolist()))
        assert len(raw_a.final) == len(raw_b.final), utt
        assert arcs(raw_a) == arcs(raw_b), utt
        assert np.array_equal(np.sort(raw_a.final), np.sort(raw_b.final)), utt
        # state 0 is the start; every arc leaves a state numbered before a later frame's
        assert raw_a.src.min() == 0 and len(raw_a.src) and (raw_a.dst > 0).all()
    at_end.close()
    every.close()


def test_auto_falls_back_to_the_simple_decoder_without_a_compiler(setup, monkeypatch,
                                                                  caplog):
    monkeypatch.setattr(lattice_faster, "available", lambda: False)
    with caplog.at_level(logging.WARNING):
        dec = _decoder(setup, beam=11.0, lattice_beam=4.0)
    assert dec.search == "simple"
    assert "LatticeSimpleDecoder" in caplog.text and "--max-active is not applied" in caplog.text
    _, lls, _, _ = setup
    utt, ll = next(iter(lls.items()))
    assert dec.decode(ll, ACWT, utt).ok
    dec.close()
    with pytest.raises(ConfigError, match="--decoder=fast: auto, faster or simple"):
        _decoder(setup, decoder="fast")


def test_build_goes_to_the_next_directory_when_the_first_cannot_be_written(tmp_path,
                                                                           monkeypatch):
    """The library is named after a hash of its source: with its source changed it is built
    anew, in the first directory it can be written to (the package's, else the cache), and a
    second build() finds it instead of compiling again."""
    installed = native._library_name()
    srcs = tuple(tmp_path / p.name for p in native.SOURCES)
    for src, orig in zip(srcs, native.SOURCES):
        src.write_bytes(orig.read_bytes())
    src.write_bytes(src.read_bytes() + b"\n// edited\n")
    (tmp_path / "a_file").write_text("")
    dirs = [tmp_path / "a_file" / "pkg", tmp_path / "cache"]  # the first cannot be made
    monkeypatch.setattr(native, "SOURCES", srcs)
    monkeypatch.setattr(native, "_candidates", lambda: iter(dirs))
    lib = native.build()
    assert lib.parent == dirs[1] and lib.is_file() and lib.name != installed
    assert lib.name.startswith("_hybridasr_native-") and lib.suffix == ".so"
    assert [p.name for p in dirs[1].iterdir()] == [lib.name]  # no temporary file left
    mtime = lib.stat().st_mtime_ns
    assert native.build() == lib and lib.stat().st_mtime_ns == mtime
    monkeypatch.setattr(native, "_compiler", lambda: None)
    src.write_bytes(src.read_bytes() + b"// again\n")
    with pytest.raises(RuntimeError, match="no C\\+\\+ compiler"):
        native.build()


@pytest.mark.parametrize("phones_first", [True, False])
def test_native_determinization_equals_the_python_one(setup, phones_first):
    """determinize_native (C++) and determinize.determinize_lattice_pruned (Python) on the
    same raw lattices: the same states and arcs, and every LM weight and insertion penalty
    the same best words, alignment and costs."""
    from hybridasr.decode import determinize_native
    from hybridasr.decode.determinize import determinize_lattice_pruned, phone_boundaries

    tm, lls, _, which = setup
    marks = phone_boundaries(tm) if phones_first else None
    # the digits GMM is sure of itself: a wider beam gives its lattices alternatives
    beam = 7.0 if which == "polish" else 16.0
    dec = _decoder(setup, beam=13.0 if which == "polish" else 16.0, lattice_beam=beam)
    combos = [(lmwt, wip) for lmwt in range(4, 16) for wip in (0.0, 0.5)]
    lm, ac, wip = [1.0] * len(combos), [1.0 / c[0] for c in combos], [c[1] for c in combos]
    branching = 0
    for utt, ll in lls.items():
        raw = dec._faster.search(dec.mapping.scaled(ll, ACWT), utt)
        native_lat = determinize_native.determinize_raw(
            raw, dec.graph.pair_tid, dec.graph.pair_word, beam, 100000, marks)
        python_lat = determinize_lattice_pruned(dec._from_arrays(raw), beam, 100000, marks)
        assert (native_lat.num_states, native_lat.num_arcs) == \
            (python_lat.num_states, python_lat.num_arcs), utt
        branching += native_lat.num_arcs > native_lat.num_states
        for arcs in native_lat.arcs:  # deterministic on words
            assert len({a.word for a in arcs}) == len(arcs), utt
        for x, y in zip(best_paths(native_lat, lm, ac, wip), best_paths(python_lat, lm, ac, wip)):
            assert x.words == y.words and x.tids == y.tids, utt
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-6)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, abs=1e-6)
    assert branching  # some lattices hold alternatives
    dec.close()


def test_too_many_states_narrows_the_beam(kaldi_polish, caplog):
    from hybridasr.decode import determinize_native

    tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 3)
    graph = load_graph_dir(str(kaldi_polish / "exp/tri1/graph"))
    dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                         LatgenOptions(beam=13.0, lattice_beam=7.0), graph.max_ilabel,
                         fst_path=graph.path)
    utt, ll = max(lls.items(), key=lambda kv: kv[1].shape[0])
    raw = dec._faster.search(dec.mapping.scaled(ll, ACWT), utt)
    args = (raw, dec.graph.pair_tid, dec.graph.pair_word, 7.0)
    full = determinize_native.determinize_raw(*args, 100000)
    with caplog.at_level(logging.WARNING):
        small = determinize_native.determinize_raw(*args, full.num_states - 1)
    assert "beam narrowed to 5.250" in caplog.text
    assert 0 < small.num_states < full.num_states
    assert best_paths(small, [1.0], [1.0], [0.0])[0].words == \
        best_paths(full, [1.0], [1.0], [0.0])[0].words
    with pytest.raises(HybridAsrError, match="not even the best path .* 3 states"):
        determinize_native.determinize_raw(*args, 3)  # fewer than the best path's
    dec.close()


def test_a_label_beyond_the_matrix_is_an_error_and_the_next_search_works(setup):
    from hybridasr.errors import FormatError

    _, lls, _, _ = setup
    dec = _decoder(setup, beam=11.0, lattice_beam=4.0)
    utt, ll = next(iter(lls.items()))
    m = dec.mapping.scaled(ll, ACWT)
    with pytest.raises(FormatError, match=f"{utt}: the graph has an input label beyond the "
                                          f"{m.shape[1] - 1} columns"):
        dec._faster.search(m[:, :-1], utt)
    assert dec._faster.search(m, utt) is not None
    dec.close()
