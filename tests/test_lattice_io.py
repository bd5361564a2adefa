"""Kaldi lattice archives (hybridasr.kaldi.lattice): Kaldi's own lat.1.gz files of kaldi_digits
and kaldi_polish read, their best paths at each LM weight equal the scoring/LMWT.tra Kaldi wrote
(its score.sh ran ``lattice-best-path --lm-scale=LMWT``, no insertion penalty), the binary
writer reproduces Kaldi's bytes, and our archives (binary, text, gzip pipes) read back by our
reader and converted to kaldifst give the same best paths."""
from __future__ import annotations

import gzip
import io
import re

import kaldifst
import pytest

from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import (CompactLatticeWriter, encode_binary, iter_lattice_stream,
                                     read_lattices)
from hybridasr.decode.lattice_best_path import best_path, best_paths
from hybridasr.kaldi.io.table import read_text_archive

DECODES = ["kaldi_digits/exp/mono/decode", "kaldi_polish/exp/tri1/decode",
           "kaldi_polish/exp/mono/decode"]
LMWTS = list(range(7, 18))


@pytest.mark.parametrize("decode", DECODES)
def test_kaldi_lattices_reproduce_kaldi_scoring(shared_dir, decode):
    d = shared_dir / "data" / decode
    lats = dict(read_lattices(f"ark:gunzip -c {d}/lat.1.gz|"))
    assert len(lats) in (10, 30)
    assert all(lat.num_arcs > 0 for lat in lats.values())
    paths = {k: best_paths(lat, LMWTS, [1.0] * len(LMWTS), [0.0] * len(LMWTS))
             for k, lat in lats.items()}
    for i, lmwt in enumerate(LMWTS):
        tra = read_text_archive(str(d / f"scoring/{lmwt}.tra"))
        assert set(tra) == set(lats)
        for k in lats:
            assert [str(w) for w in paths[k][i].words] == tra[k], (decode, lmwt, k)
    # the costs lattice-best-path logged: "best cost <lmwt * graph> + <acoustic>"
    log = (d / "scoring/log/best_path.10.log").read_text()
    logged = {m[1]: (float(m[2]), float(m[3]), int(m[4])) for m in re.finditer(
        r"For utterance (\S+), best cost (\S+) \+ (\S+) = \S+ over (\d+) frames", log)}
    assert set(logged) == set(lats)
    for k, (g, a, frames) in logged.items():
        bp = paths[k][LMWTS.index(10)]
        assert 10 * bp.graph_cost == pytest.approx(g, rel=1e-5)
        assert bp.acoustic_cost == pytest.approx(a, rel=1e-5)
        assert len(bp.tids) == frames


@pytest.mark.parametrize("decode", DECODES[:2])
def test_binary_writer_reproduces_kaldi_bytes(shared_dir, decode):
    raw = gzip.open(shared_dir / "data" / decode / "lat.1.gz").read()
    entries = list(iter_lattice_stream(io.BufferedReader(io.BytesIO(raw)), "lat.1.gz"))
    ours = b"".join(k.encode() + b" " + encode_binary(lat) for k, lat in entries)
    assert ours == raw


def _kaldifst_best(lat):
    """Best path of the kaldifst.Lattice conversion with kaldifst's own shortest path."""
    sp = kaldifst.shortest_path(lat.to_kaldifst())
    ok, tids, words, w = kaldifst.get_linear_symbol_sequence(sp)
    assert ok
    return list(words), list(tids), w.value1, w.value2


@pytest.mark.parametrize("text", [False, True])
def test_round_trip_ours_and_kaldifst(shared_dir, tmp_path, text):
    d = shared_dir / "data" / DECODES[1]
    lats = dict(read_lattices(f"ark:gunzip -c {d}/lat.1.gz|"))
    out = tmp_path / "lat.1.gz"
    with CompactLatticeWriter(f"ark{',t' if text else ''}:|gzip -c > {out}") as w:
        for k, lat in lats.items():
            w.write(k, lat.scaled(acoustic_scale=1 / 10))
    back = dict(read_lattices(f"ark:gunzip -c {out}|"))
    assert list(back) == list(lats)
    for k, lat in back.items():
        assert (lat.num_states, lat.num_arcs) == (lats[k].num_states, lats[k].num_arcs)
        ours = best_path(lat)
        ref = best_path(lats[k], acoustic_scale=1 / 10)
        assert ours.words == ref.words and ours.tids == ref.tids
        words, tids, g, a = _kaldifst_best(lat)
        assert (words, tids) == ([w for w in ours.words], ours.tids)
        assert g == pytest.approx(ours.graph_cost, abs=1e-2)
        assert a == pytest.approx(ours.acoustic_cost, rel=1e-5)


def test_state_level_lattice_written_by_kaldifst(shared_dir, tmp_path):
    # a lattice4 FST written by kaldifst (OpenFst's writer) is read by our reader
    d = shared_dir / "data" / DECODES[0]
    key, lat = next(iter(read_lattices(f"ark:gunzip -c {d}/lat.1.gz|")))
    f = tmp_path / "one.fst"
    assert lat.to_kaldifst().write(str(f))
    ark = tmp_path / "lat.ark"
    ark.write_bytes(key.encode() + b" " + f.read_bytes())
    (k2, state_level), = read_lattices(f"ark:{ark}")
    assert k2 == key
    a, b = best_path(state_level), best_path(lat)
    assert (a.words, a.tids) == (b.words, b.tids)
    assert a.acoustic_cost == pytest.approx(b.acoustic_cost, rel=1e-6)


def test_bad_lattice_archives_are_named(tmp_path):
    bad = tmp_path / "bad.ark"
    bad.write_bytes(b"utt1 \xd6\xfd\xb2\x7e\x06\x00\x00\x00vector")
    with pytest.raises(FormatError, match="bad.ark: lattice utt1"):
        list(read_lattices(f"ark:{bad}"))
    bad.write_bytes(b"utt1 \n0\t1\t5\t1.5,2.5,3_x\n\n")
    with pytest.raises(FormatError, match="utt1.*bad lattice weight"):
        list(read_lattices(f"ark:{bad}"))
    bad.write_bytes(b"utt1 XYZ")
    with pytest.raises(FormatError, match="neither a binary FST"):
        list(read_lattices(f"ark:{bad}"))
