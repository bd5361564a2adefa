"""Kaldi int32-vector archives: the real text alignments byte for byte, binary archives read
back by kaldiio (an independent reader), rspecifier/wspecifier forms, bad input."""
from __future__ import annotations

import gzip
import io
import subprocess
import sys

import kaldiio
import numpy as np
import pytest

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import (encode_int_pair_vector, encode_int_vector,
                                    iter_int_vector_stream, read_int_vector_scp,
                                    read_int_vectors)
from hybridasr.kaldi.io.table_writer import IntVectorWriter


@pytest.fixture(scope="module")
def ali_gz(kaldi_digits):
    return kaldi_digits / "exp" / "mono_ali" / "ali.1.gz"


@pytest.fixture(scope="module")
def alis(ali_gz):
    return list(read_int_vectors(f"ark:gunzip -c {ali_gz}|"))


def _reference_parse(text: str):
    """The plainest possible reading of a text archive: one 'key int int ...' per line."""
    out = []
    for line in text.splitlines():
        words = line.split()
        out.append((words[0], [int(w) for w in words[1:]]))
    return out


def test_reads_real_text_alignments(alis, ali_gz):
    ref = _reference_parse(gzip.open(ali_gz, "rt").read())
    assert len(alis) == len(ref) == 120
    for (k, v), (rk, rv) in zip(alis, ref):
        assert k == rk and v.dtype == np.int32 and v.tolist() == rv
    assert sum(len(v) for _, v in alis) == 4485  # "over 4485 frames" in align.1.log


def test_text_writer_reproduces_kaldis_bytes(alis, ali_gz, tmp_path):
    out = tmp_path / "ali.txt"
    with IntVectorWriter(f"ark,t:{out}") as w:
        for k, v in alis:
            w.write(k, v)
    assert out.read_bytes() == gzip.open(ali_gz, "rb").read()
    assert b"[" not in out.read_bytes()


def test_binary_archive_round_trip_and_kaldiio(alis, tmp_path):
    ark, scp = tmp_path / "a.ark", tmp_path / "a.scp"
    with IntVectorWriter(f"ark,scp:{ark},{scp}") as w:
        for k, v in alis:
            w.write(k, v)
    data = ark.read_bytes()
    # the Kaldi layout: "key \0B" + (size byte 4 + int32) for the length and each element
    k0, v0 = alis[0]
    assert data.startswith(k0.encode() + b" \0B\x04" + len(v0).to_bytes(4, "little") + b"\x04")
    assert len(data) == sum(len(k) + 1 + 7 + 5 * len(v) for k, v in alis)
    theirs = dict(kaldiio.load_ark(str(ark)))
    assert list(theirs) == [k for k, _ in alis]
    for k, v in alis:
        np.testing.assert_array_equal(theirs[k], v)
    ours = list(read_int_vectors(f"ark:{ark}"))
    assert [k for k, _ in ours] == [k for k, _ in alis]
    by_scp = read_int_vector_scp(str(scp))
    by_rspec = dict(read_int_vectors(f"scp:{scp}"))
    for k, v in alis:
        np.testing.assert_array_equal(by_scp[k], v)
        np.testing.assert_array_equal(by_rspec[k], v)
        np.testing.assert_array_equal(kaldiio.load_mat(f"{ark}:{kaldiio_offset(scp, k)}"), v)


def kaldiio_offset(scp, key):
    for line in scp.read_text().splitlines():
        k, loc = line.split()
        if k == key:
            return loc.rsplit(":", 1)[1]
    raise KeyError(key)


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 20])
def test_stream_parser_any_chunking_mixed_archive(alis, chunk):
    buf = io.BytesIO()
    for i, (k, v) in enumerate(alis[:30]):
        buf.write(k.encode() + b" " + encode_int_vector(v, text=bool(i % 2)))
    buf.write(b"empty_bin " + encode_int_vector([]) + b"empty_txt \n")
    got = list(iter_int_vector_stream(io.BytesIO(buf.getvalue()), "mem", chunk_size=chunk))
    assert [k for k, _ in got] == [k for k, _ in alis[:30]] + ["empty_bin", "empty_txt"]
    for (k, v), (_, g) in zip(alis[:30], got):
        np.testing.assert_array_equal(g, v)
    assert got[-1][1].size == 0 and got[-2][1].size == 0


def test_tolerates_brackets_and_missing_final_newline():
    data = b"u1 [ 1 2 3 ]\nu2 4 5"
    got = list(iter_int_vector_stream(io.BytesIO(data), "mem"))
    assert [(k, v.tolist()) for k, v in got] == [("u1", [1, 2, 3]), ("u2", [4, 5])]


def test_pair_vector_layout():
    assert encode_int_pair_vector([(1, 5), (23, 7)], text=True) == b"1 5 ; 23 7 \n"
    b = encode_int_pair_vector([(1, 5)], text=False)
    assert b == b"\0B\x04\x01\0\0\0\x04\x01\0\0\0\x04\x05\0\0\0"


def test_stdin_and_stdout_forms(alis, tmp_path):
    text = "".join(f"{k} " + "".join(f"{x} " for x in v.tolist()) + "\n" for k, v in alis[:3])
    code = ("import sys; from hybridasr.kaldi.io.intvec import read_int_vectors\n"
            "from hybridasr.kaldi.io.table_writer import IntVectorWriter\n"
            "w = IntVectorWriter('ark,t:-')\n"
            "for k, v in read_int_vectors('ark:-'): w.write(k, v * 2)\n"
            "w.close()\n")
    r = subprocess.run([sys.executable, "-c", code], input=text.encode(), capture_output=True,
                       check=True)
    lines = r.stdout.decode().splitlines()
    assert lines[0].split()[0] == alis[0][0]
    assert [int(x) for x in lines[0].split()[1:]] == (alis[0][1] * 2).tolist()


def test_bad_inputs(tmp_path, alis):
    bad = tmp_path / "bad.ark"
    bad.write_bytes(b"u1 1 2 x3\n")
    with pytest.raises(FormatError, match=r"bad\.ark.*u1.*'x3'"):
        list(read_int_vectors(f"ark:{bad}"))
    cut = tmp_path / "cut.ark"
    cut.write_bytes(b"u1 " + encode_int_vector(alis[0][1])[:-3])
    with pytest.raises(FormatError, match=r"cut\.ark.*u1.*cut short"):
        list(read_int_vectors(f"ark:{cut}"))
    notint = tmp_path / "mat.ark"
    kaldiio.save_ark(str(notint), {"m": np.zeros((2, 3), dtype=np.float32)})
    with pytest.raises(FormatError, match="not an int32 vector"):
        list(read_int_vectors(f"ark:{notint}"))
    corrupt = tmp_path / "corrupt.gz"
    payload = "".join(f"u{i} " + " ".join(str(x) for x in range(i, i + 50)) + "\n"
                      for i in range(500)).encode()
    full = gzip.compress(payload)
    corrupt.write_bytes(full[: len(full) // 2])
    with pytest.raises(FormatError, match="gunzip -c .*corrupt.gz.*failed"):
        list(read_int_vectors(f"ark:gunzip -c {corrupt}|"))
    with pytest.raises(FormatError, match="bad rspecifier"):
        list(read_int_vectors(str(bad)))


def test_writer_leaves_nothing_on_error(tmp_path):
    ark, scp = tmp_path / "x.ark", tmp_path / "x.scp"
    with pytest.raises(RuntimeError):
        with IntVectorWriter(f"ark,scp:{ark},{scp}") as w:
            w.write("a", [1, 2])
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
