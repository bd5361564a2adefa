"""The one specifier parser, the one table-writer family and the table readers of
``hybridasr.kaldi``: every specifier form the old per-package parsers took (and Kaldi's own),
and output bytes equal to what the old writers wrote (they delegated to kaldiio for matrices and
binary int vectors; Kaldi itself wrote the text alignments of ../shared), on real data."""
from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import kaldiio
import numpy as np
import pytest

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp, read_matrices
from hybridasr.kaldi.io.specifier import (SpecifierError, parse_rspecifier, parse_wspecifier,
                                       scp_rxfilename, text_table_path)
from hybridasr.kaldi.io.table import read_text_rspecifier, write_map
from hybridasr.kaldi.io.table_writer import (ArkScpWriter, IntVectorWriter, MatrixWriter,
                                          TextTableWriter)

REPO = Path(__file__).resolve().parents[1]

# (rspecifier, kind, rxfilename): what kaldi/rspecifier.py, features/copy_table.py,
# features/specifiers.py, decode/decode_table.py (kaldiio) and decode/text_archive.py took
RSPECS = [
    ("ark:ali.ark", "ark", "ali.ark"),
    ("ark,t:-", "ark", "-"),
    ("ark,s,cs:-", "ark", "-"),
    ("scp:data/train/feats.scp", "scp", "data/train/feats.scp"),
    ("scp,p:wav.scp", "scp", "wav.scp"),
    ("ark:gunzip -c exp/mono_ali/ali.*.gz|", "ark", "gunzip -c exp/mono_ali/ali.*.gz|"),
    ("ark:gunzip -c ali.1.gz |", "ark", "gunzip -c ali.1.gz |"),
    ("ark,o,s,cs,p,bg:f", "ark", "f"),
    ("scp,b,t,no,ns,ncs,np:f", "scp", "f"),
    ("t,ark:f", "ark", "f"),
    ("ark, t:f", "ark", "f"),  # a space after the comma: we always took it
    ("ark t:f", "ark", "f"),  # Kaldi splits options on ", "
]
# (wspecifier, ark, scp, text): what kaldi/table.py, kaldi/rspecifier.py, decode/decode_table.py
# and decode/matrix_writer.py took
WSPECS = [
    ("ark:f.ark", "f.ark", None, False),
    ("ark,t:-", "-", None, True),
    ("ark,scp:a.ark,a.scp", "a.ark", "a.scp", False),
    ("ark,scp,t:a.ark,a.scp", "a.ark", "a.scp", True),
    ("ark,t,scp:a.ark,a.scp", "a.ark", "a.scp", True),
    ("ark,scp,f:a.ark,a.scp", "a.ark", "a.scp", False),
    ("ark,nf,b:f", "f", None, False),
    ("ark,t,b:f", "f", None, False),  # the last of b/t wins, as in Kaldi
    ("ark,p:f", "f", None, False),
    ("ark:| gzip -c > ali.1.gz", "| gzip -c > ali.1.gz", None, False),
    ("ark,t:|gzip -c > ali.1.gz", "|gzip -c > ali.1.gz", None, True),
    ("ark,scp:a.ark,b,c.scp", "a.ark", "b,c.scp", False),  # Kaldi splits at the first comma
    ("ark , scp:a.ark, a.scp", "a.ark", "a.scp", False),
]
BAD_RSPECS = ["ali.ark", "ark,scp:x", "scp,ark:x", "ark,ark:x", "ark,f:x", "foo:x", "ark:",
              "ark,,t:x", ":x"]
BAD_WSPECS = ["f.ark", "scp,ark:a,b", "ark,scp:a", "ark,scp:-,a.scp", "ark,scp:| gzip,a.scp",
              "ark,s:x", "scp:x.scp", "ark:", "ark,scp,scp:a,b", "ark,,t:x"]


@pytest.mark.parametrize("spec,kind,rx", RSPECS)
def test_rspecifier_forms(spec, kind, rx):
    r = parse_rspecifier(spec)
    assert (r.kind, r.rxfilename) == (kind, rx)


@pytest.mark.parametrize("spec,ark,scp,text", WSPECS)
def test_wspecifier_forms(spec, ark, scp, text):
    w = parse_wspecifier(spec)
    assert (w.ark, w.scp, w.text) == (ark, scp, text)


def test_bad_specifiers_are_config_and_format_errors():
    for spec in BAD_RSPECS:
        with pytest.raises(SpecifierError, match=re.escape(repr(spec))):
            parse_rspecifier(spec)
    for spec in BAD_WSPECS:
        with pytest.raises(SpecifierError):
            parse_wspecifier(spec)
    # the old parsers raised one or the other: both still catch it
    assert issubclass(SpecifierError, ConfigError) and issubclass(SpecifierError, FormatError)


def test_plain_paths_text_tables_and_scp_only_tools():
    assert parse_rspecifier("data/test/text", plain_ok=True).rxfilename == "data/test/text"
    assert parse_wspecifier("utt2num_frames", plain_ok=True).ark == "utt2num_frames"
    for spec in ("ark,t:x/utt2num_frames", "ark:x/utt2num_frames", "x/utt2num_frames",
                 "ark,s,cs:x/utt2num_frames", "ark,t,f:x/utt2num_frames"):
        assert text_table_path(spec) == "x/utt2num_frames", spec
    for spec in ("scp:x", "ark,scp:a,b"):
        with pytest.raises(ConfigError, match="text archive"):
            text_table_path(spec)
    assert scp_rxfilename("scp:wav.scp") == scp_rxfilename("scp,p:wav.scp") == "wav.scp"
    with pytest.raises(ConfigError, match="scp:"):
        scp_rxfilename("ark:wav.ark")


# ------------------------------------------------------------------ the writers, on real data
@pytest.fixture(scope="module")
def feats(kaldi_digits):
    cwd = os.getcwd()
    os.chdir(kaldi_digits)
    try:
        return list(iter_feature_scp("data/test/feats.scp"))[:8]
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def alis(kaldi_digits):
    return list(read_int_vectors(f"ark:gunzip -c {kaldi_digits}/exp/mono_ali/ali.1.gz|"))


@pytest.mark.parametrize("compression", [None, 1, 2])
def test_matrix_writer_writes_what_kaldiio_writes(feats, tmp_path, compression):
    # the old ArkScpWriter, open_matrix_writer and copy-feats/compute-cmvn-stats wrote kaldiio's
    stats = [(k, np.vstack([m.sum(0, dtype=np.float64), (m.astype(np.float64) ** 2).sum(0)]))
             for k, m in feats[:3]]
    for name, items in (("feats", feats), ("stats", stats)):
        if compression and name == "stats":
            continue
        ours_ark, ours_scp = tmp_path / f"{name}.ark", tmp_path / f"{name}.scp"
        ref_ark, ref_scp = tmp_path / f"{name}_ref.ark", tmp_path / f"{name}_ref.scp"
        with MatrixWriter(f"ark,scp:{ours_ark},{ours_scp}", compression) as w:
            for k, m in items:
                w.write(k, m)
        kaldiio.save_ark(str(ref_ark), dict(items), scp=str(ref_scp),
                         compression_method=compression)
        assert ours_ark.read_bytes() == ref_ark.read_bytes()
        assert ours_scp.read_text() == ref_scp.read_text().replace(str(ref_ark), str(ours_ark))
    with ArkScpWriter(str(tmp_path / "p.ark"), None, compression) as w:
        for k, m in feats:
            w.write(k, m)
    assert (tmp_path / "p.ark").read_bytes() == (tmp_path / "feats_ref.ark").read_bytes()
    # encode + write_encoded (an object encoded once, written under its key) is write
    with ArkScpWriter(str(tmp_path / "e.ark"), None, compression) as w:
        for k, m in feats:
            w.write_encoded(k, w.encode(m))
    assert (tmp_path / "e.ark").read_bytes() == (tmp_path / "feats_ref.ark").read_bytes()


def test_int_vectors_as_kaldi_and_kaldiio_write_them(alis, kaldi_digits, tmp_path):
    kaldi_text = gzip.decompress((kaldi_digits / "exp/mono_ali/ali.1.gz").read_bytes())
    with IntVectorWriter(f"ark,t:{tmp_path}/ali.txt") as w:
        for k, v in alis:
            w.write(k, v)
    assert (tmp_path / "ali.txt").read_bytes() == kaldi_text  # align_si.sh's ark,t: output
    with IntVectorWriter(f"ark,t:| gzip -c > {tmp_path}/ali.gz") as w:
        for k, v in alis:
            w.write(k, v)
    assert gzip.decompress((tmp_path / "ali.gz").read_bytes()) == kaldi_text
    # binary: what the decoder's old TokenTableWriter wrote through kaldiio
    with IntVectorWriter(f"ark:{tmp_path}/ali.ark") as w:
        for k, v in alis:
            w.write(k, v)
    kaldiio.save_ark(str(tmp_path / "ref.ark"), {k: v.astype(np.int32) for k, v in alis})
    assert (tmp_path / "ali.ark").read_bytes() == (tmp_path / "ref.ark").read_bytes()


def test_text_tables_and_text_matrices(tmp_path):
    items = [("u1", 52), ("u2", ["a", "b"]), ("u3", "")]
    write_map(str(tmp_path / "m"), items)
    with TextTableWriter(f"ark,t:{tmp_path}/t") as w:
        for k, v in items:
            w.write(k, v)
    assert (tmp_path / "m").read_bytes() == (tmp_path / "t").read_bytes() == b"u1 52\nu2 a b\nu3 \n"
    m = np.array([[1.0, 2.5], [-3.0, 1e-05]], dtype=np.float32)
    with MatrixWriter(f"ark,t:{tmp_path}/m.txt") as w:
        w.write("a", m)
        w.write("v", np.array([0.1, 2.0]))
        w.write("e", np.zeros((0, 3), np.float32))
    # Kaldi's Matrix::Write / Vector::Write text layout, 7 significant digits
    assert (tmp_path / "m.txt").read_text() == ("a  [\n  1 2.5 \n  -3 1e-05 ]\n"
                                                "v  [ 0.1 2 ]\ne  [ ]\n")
    _, got = next(kaldiio.load_ark(str(tmp_path / "m.txt")))  # an independent reader
    np.testing.assert_array_equal(got, m)
    with pytest.raises(ConfigError, match="binary"):
        MatrixWriter(f"ark,t:{tmp_path}/c.txt", compression_method=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "m.txt", "t"]


def test_stdout_and_pipes_give_the_file_bytes(feats, tmp_path):
    with MatrixWriter(f"ark:{tmp_path}/f.ark") as w:
        for k, m in feats:
            w.write(k, m)
    with MatrixWriter(f"ark:| gzip -c > {tmp_path}/f.ark.gz") as w:
        for k, m in feats:
            w.write(k, m)
    ref = (tmp_path / "f.ark").read_bytes()
    assert gzip.decompress((tmp_path / "f.ark.gz").read_bytes()) == ref
    code = ("import sys\nfrom hybridasr.kaldi.io.matrix_reader import read_matrices\n"
            "from hybridasr.kaldi.io.table_writer import MatrixWriter\n"
            "with MatrixWriter('ark:-') as w:\n"
            f"    for k, m in read_matrices('ark:{tmp_path}/f.ark'): w.write(k, m)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.stdout == ref


def test_read_matrices_forms(feats, tmp_path):
    with MatrixWriter(f"ark,scp:{tmp_path}/f.ark,{tmp_path}/f.scp") as w:
        for k, m in feats:
            w.write(k, m)
    with MatrixWriter(f"ark,t:{tmp_path}/f.txt") as w:
        for k, m in feats[:2]:
            w.write(k, m)
    for spec in (f"scp:{tmp_path}/f.scp", f"ark:{tmp_path}/f.ark", f"ark,s,cs:cat {tmp_path}/f.ark |",
                 f"ark,t:{tmp_path}/f.txt"):
        got = list(read_matrices(spec))
        n = 2 if spec.endswith(".txt") else len(feats)
        assert [k for k, _ in got] == [k for k, _ in feats[:n]], spec
        for (_, a), (_, b) in zip(got, feats):
            np.testing.assert_allclose(a, b, rtol=1e-6 if spec.endswith(".txt") else 0)
    with pytest.raises(FormatError, match="command 'false' failed"):
        list(read_matrices("ark:false |"))


def test_text_rspecifiers_read_files_and_pipes(kaldi_digits):
    text = kaldi_digits / "data/test/text"
    plain = read_text_rspecifier(str(text))
    assert len(plain) == 30 and plain == read_text_rspecifier(f"ark:{text}")
    assert read_text_rspecifier(f"ark,t:cat {text} |") == plain
    with pytest.raises(ConfigError, match="ark:"):
        read_text_rspecifier(f"scp:{text}")


def test_close_is_durable_ark_before_scp(tmp_path, monkeypatch):
    """Both files are fsynced under their temporary names first (a full disk fails there,
    before either appears), then the ark is renamed and its directory fsynced before the scp
    is renamed (the old ArkScpWriter renamed the scp unsynced)."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("rename", os.path.basename(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    d = tmp_path / "out"
    d.mkdir()
    with ArkScpWriter(str(d / "a.ark"), str(d / "a.scp")) as w:
        w.write("u", np.ones((2, 3), np.float32))
    kinds = [(e, n if e == "rename" or n == "out" else n.split(".")[1]) for e, n in events]
    assert kinds == [("fsync", "a"), ("fsync", "a"), ("rename", "a.ark"), ("fsync", "out"),
                     ("rename", "a.scp"), ("fsync", "out")], events
    assert events[0][1].startswith(".a.ark.") and events[1][1].startswith(".a.scp.")
    assert [e[1].endswith(".tmp") for e in events if e[0] == "fsync" and e[1] != "out"] == \
        [True, True]


def test_errors_leave_nothing_and_failed_output_pipes_raise(feats, tmp_path):
    with pytest.raises(RuntimeError):
        with MatrixWriter(f"ark,scp:{tmp_path}/x.ark,{tmp_path}/x.scp") as w:
            w.write(*feats[0])
            raise RuntimeError("boom")
    w = IntVectorWriter(f"ark,t:{tmp_path}/y")
    w.write("u", [1, 2])
    w.close(ok=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FormatError, match="bad key"):
        with TextTableWriter(f"ark,t:{tmp_path}/z") as t:
            t.write("a b", 1)
    assert list(tmp_path.iterdir()) == []
    w = MatrixWriter("ark:| cat > /dev/null; exit 3")
    w.write(*feats[0])
    with pytest.raises(FormatError, match="exit 3.*failed"):
        w.close()


def test_one_umask_helper_and_no_other_table_io():
    """Only hybridasr/utils/atomic.py reads the umask; nothing outside hybridasr/kaldi parses
    specifiers or reads/writes tables through kaldiio's helpers."""
    bad = []
    for path in list((REPO / "hybridasr").rglob("*.py")) + list((REPO / "pybin").glob("*.py")):
        src = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO).as_posix()
        if "os.umask(" in src and rel != "hybridasr/utils/atomic.py":
            bad.append(f"{rel}: os.umask")
        if re.search(r"\b(WriteHelper|ReadHelper)\b", src):
            bad.append(f"{rel}: kaldiio table helper")
        if re.search(r"def \w*(rspecifier|wspecifier)\w*\(", src) and \
                not rel.startswith("hybridasr/kaldi/"):
            bad.append(f"{rel}: a specifier parser")
    assert not bad, bad
