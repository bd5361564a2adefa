"""The toolkit's C++ LatticeFasterDecoder (hybridasr/decode/native/lattice_faster.cc) against
kaldi-decoder's LatticeSimpleDecoder and FasterDecoder, on real GMM log-likelihoods of real
test utterances decoded on kaldi_polish's tri1 graph (context-dependent tree) and
kaldi_digits' monophone graph; and what there is without the C++ library (no lattices)."""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from hybridasr.decode import determinize_native, lattice_faster, native
from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder, LatticesUnavailable
from hybridasr.errors import HybridAsrError
from hybridasr.decode.lattice_best_path import best_paths
from hybridasr.kaldi.lattice import Arc, read_binary_fst

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


def _simple_raw_lattice(dec: LatticeDecoder, ll: np.ndarray, beam: float,
                        lattice_beam: float):
    """kaldi-decoder's LatticeSimpleDecoder on the same pdf graph: its raw state-level
    lattice (scaled costs) as transition-id/word arcs, and whether it reached a final state."""
    import kaldi_decoder

    config = kaldi_decoder.LatticeSimpleDecoderConfig(beam=beam, lattice_beam=lattice_beam)
    simple = kaldi_decoder.LatticeSimpleDecoder(dec.graph.fst, config)
    matrix = dec.mapping.scaled(ll, ACWT)
    simple.decode(kaldi_decoder.DecodableCtc(matrix))
    reached = simple.final_relative_cost() < float("inf")
    ok, raw = simple.get_raw_lattice(True)
    assert ok and raw.num_states
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.fst")
        assert raw.write(path)
        with open(path, "rb") as f:
            lat = read_binary_fst(f, path, "raw")
    ptid, pword = dec.graph.pair_tid, dec.graph.pair_word
    for arcs in lat.arcs:
        for i, a in enumerate(arcs):
            tid = int(ptid[a.word])
            arcs[i] = Arc(int(pword[a.word]), a.graph, a.acoustic, (tid,) if tid else (), a.next)
    return lat, reached


def test_same_lattices_as_lattice_simple_decoder(setup):
    """Without --max-active and --min-active both searches keep every token within the
    beam: the same raw lattices (but for arcs at the lattice beam's edge), the same best
    words, alignment and costs at each LM weight, and those of the determinized lattice at
    the decoding scale. --min-active (200 by default, which the simple decoder lacks) only
    ever adds to the search."""
    _, lls, _, _ = setup
    faster = _decoder(setup, beam=13.0, lattice_beam=6.0, min_active=0)
    default = _decoder(setup, beam=13.0, lattice_beam=6.0)
    scales = [1.0 / (w * ACWT) for w in LMWTS]  # the raw lattices' costs are scaled

    def paths(lat, ac):
        return best_paths(lat, [1.0] * len(ac), ac, [0.0] * len(ac))

    for utt, ll in lls.items():
        raw = faster._faster.search(faster.mapping.scaled(ll, ACWT), utt)
        ours = determinize_native.state_level(raw, faster.graph.pair_tid,
                                              faster.graph.pair_word)
        theirs, reached = _simple_raw_lattice(faster, ll, 13.0, 6.0)
        assert raw.reached_final == reached, utt
        assert abs(ours.num_arcs - theirs.num_arcs) <= max(3, 0.002 * theirs.num_arcs), utt
        assert default.decode(ll, ACWT, utt).raw_arcs >= ours.num_arcs - 3, utt
        for x, y in zip(paths(ours, scales), paths(theirs, scales)):
            assert x.words == y.words and x.tids == y.tids, utt
            assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-2)
            assert x.acoustic_cost == pytest.approx(y.acoustic_cost, rel=1e-5, abs=1e-2)
        det = faster.decode(ll, ACWT, utt).lattice  # acoustic costs unscaled
        x, y = paths(det, [ACWT])[0], paths(theirs, [1.0])[0]
        assert x.words == y.words and x.tids == y.tids, utt
        assert x.graph_cost == pytest.approx(y.graph_cost, abs=1e-2)
        assert ACWT * x.acoustic_cost == pytest.approx(y.acoustic_cost, rel=1e-5, abs=1e-2)
    faster.close()
    default.close()


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


def test_no_lattices_without_the_library(setup, kaldi_digits, monkeypatch, tmp_path):
    """Where the C++ library cannot be built there are no embedded lattices (no second
    search or determinizer): the lattice decoder and latgen_faster_mapped.py say why and
    name the 1-best route; the 1-best decoder (kaldi-decoder's FasterDecoder) still works."""
    from train_helpers import load_pybin

    tm, lls, graph, _ = setup
    monkeypatch.setattr(native, "load", lambda quiet=False: None)
    monkeypatch.setattr(native, "_REASON", "no C++ compiler (g++, c++ or clang++; or set CXX)")
    msg = re.escape("embedded lattices need the toolkit's C++ library (hybridasr/decode/native), "
                    "which cannot be built: no C++ compiler")
    with pytest.raises(LatticesUnavailable, match=msg + r".*decode_faster_mapped\.py.*"
                                                  r"--lattices false"):
        _decoder(setup)
    with pytest.raises(LatticesUnavailable, match=msg):
        load_pybin("latgen_faster_mapped").main(
            [str(kaldi_digits / "exp/mono_ali/final.mdl"),
             str(kaldi_digits / "exp/mono/graph/HCLG.fst"), f"ark:{tmp_path}/lls.ark",
             f"ark:{tmp_path}/lat.ark"])
    assert not lattice_faster.available()
    utt, ll = next(iter(lls.items()))
    one_best = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, DecodeOptions(beam=11.0),
                             graph.max_ilabel, fst_path=graph.path)
    assert one_best.decode(ll, ACWT, utt).ok


def test_latgen_options_extend_the_decode_options():
    """The search options are declared once (DecodeOptions); latgen-faster-mapped's differ
    only in --min-active's default, as Kaldi's tools do (200 against 20)."""
    from hybridasr.options import option_specs

    base = {s.dest: s for s in option_specs(DecodeOptions)}
    latgen = {s.dest: s for s in option_specs(LatgenOptions)}
    assert issubclass(LatgenOptions, DecodeOptions) and set(base) < set(latgen)
    for name, spec in base.items():
        assert latgen[name].help == spec.help
        assert latgen[name].default == (200 if name == "min_active" else spec.default)
    assert DecodeOptions().min_active == 20


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


def test_too_many_states_narrows_the_beam(kaldi_polish, caplog):
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
