"""Reading Kaldi matrix tables (features, CMVN stats, log-likelihoods), with Kaldi's exact
decompression arithmetic.

kaldiio decompresses Kaldi's compressed matrices (``CM``, ``CM2``, ``CM3``) with a slightly
different float evaluation order than Kaldi's ``CompressedMatrix::CopyToMat``, so values can
differ from Kaldi's by an ulp, and a sum over thousands of frames (CMVN stats) by ~1e-6
relative. Here compressed matrices are read with Kaldi's arithmetic (``min + range *
(1/65535.f) * v`` in float for the headers, the percentile interpolation finished in double
as Kaldi's ``CharToFloat`` does) and anything else through kaldiio.

- :func:`read_matrices`: every (key, matrix) of an rspecifier (``scp:``, ``ark:``, ``ark,t:``,
  ``ark:-``, ``ark:cmd|``), in order.
- :func:`iter_feature_scp`: the same for an scp file given by path.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import struct
from typing import Iterator, Optional, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.specifier import parse_rspecifier
from hybridasr.kaldi.io.streams import InputStream, label, split_offset
from hybridasr.kaldi.io.table import iter_map_lines

_F = np.float32


def _uint16_to_float(min_value, range_, v):
    return _F(min_value) + (_F(range_) * _F(1.52590218966964e-05)) * v.astype(_F)


# kaldiio's readers raise all of these on a truncated or corrupt input
_READ_ERRORS = (ValueError, struct.error, AssertionError, EOFError, RuntimeError,
                UnicodeDecodeError)
# Kaldi's uncompressed binary types: numpy dtype, bytes per value, matrix (else vector)
_PLAIN = {b"FM": ("<f4", 4, True), b"DM": ("<f8", 8, True), b"FV": ("<f4", 4, False),
          b"DV": ("<f8", 8, False)}


def _name(fd) -> str:
    name = getattr(fd, "name", None)
    return name if isinstance(name, str) else "<stream>"


def _bytes_left(fd) -> Optional[int]:
    """Bytes from the position to the end of a regular file (None: not known)."""
    try:
        st = os.fstat(fd.fileno())
        return st.st_size - fd.tell() if stat.S_ISREG(st.st_mode) else None
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def _read_exact(fd, n: int, what: str) -> bytes:
    """Exactly ``n`` bytes; a shorter file is a FormatError saying what was cut (checked
    before reading, so a corrupt size never makes a huge allocation)."""
    if n < 0:
        raise FormatError(f"corrupt matrix: negative size of its {what}")
    left = _bytes_left(fd)
    if left is not None and n > left:
        raise FormatError(f"truncated matrix: its {what} needs {n} bytes, the file has "
                          f"{max(left, 0)} left")
    data = fd.read(n)
    if len(data) != n:
        raise FormatError(f"truncated matrix: its {what} needs {n} bytes, got {len(data)}")
    return data


def _decompress(fd, kind: str) -> np.ndarray:
    min_value, range_, rows, cols = struct.unpack("<ffii", _read_exact(fd, 16, "header"))
    if rows < 0 or cols < 0:
        raise FormatError(f"corrupt compressed matrix header ({rows} x {cols})")
    if kind == "CM":
        head = np.frombuffer(_read_exact(fd, 8 * cols, "column headers"),
                             dtype="<u2").reshape(cols, 4)
        p = _uint16_to_float(min_value, range_, head)
        p0, p25, p75, p100 = (p[:, i:i + 1] for i in range(4))
        data = np.frombuffer(_read_exact(fd, rows * cols, f"data ({rows} x {cols})"),
                             dtype=np.uint8).reshape(cols, rows)
        v = data.astype(_F)
        low = p0.astype(np.float64) + ((p25 - p0) * v).astype(np.float64) * (1 / 64.0)
        mid = p25.astype(np.float64) + ((p75 - p25) * (v - _F(64))).astype(np.float64) * (1 / 128.0)
        high = p75.astype(np.float64) + ((p100 - p75) * (v - _F(192))).astype(np.float64) * (1 / 63.0)
        out = np.where(data <= 64, low, np.where(data <= 192, mid, high)).astype(_F)
        return np.ascontiguousarray(out.T)
    if kind == "CM2":
        data = np.frombuffer(_read_exact(fd, 2 * rows * cols, f"data ({rows} x {cols})"),
                             dtype="<u2").reshape(rows, cols)
        return _uint16_to_float(min_value, range_, data)
    data = np.frombuffer(_read_exact(fd, rows * cols, f"data ({rows} x {cols})"),
                         dtype=np.uint8).reshape(rows, cols)
    return _F(min_value) + (_F(range_) * _F(1.0 / 255.0)) * data.astype(_F)


def _read_plain(fd, token: bytes) -> np.ndarray:
    """Kaldi's ``FM``/``DM`` matrices and ``FV``/``DV`` vectors (as kaldiio reads them)."""
    dtype, width, is_matrix = _PLAIN[token]

    def size(what):
        b = _read_exact(fd, 5, what)
        if b[0] != 4:
            raise FormatError(f"corrupt matrix: its {what} has size byte {b[0]}, not 4")
        return struct.unpack("<i", b[1:])[0]

    rows = size("row count")
    cols = size("column count") if is_matrix else 1
    if rows < 0 or cols < 0:
        raise FormatError(f"corrupt matrix header ({rows} x {cols})")
    data = np.frombuffer(_read_exact(fd, rows * cols * width, f"data ({rows} x {cols})"),
                         dtype=dtype)
    return data.reshape(rows, cols) if is_matrix else data


def _read_token(fd) -> bytes:
    """A Kaldi binary type token (``FM``, ``CM2``, ...) and its space."""
    token = b""
    while True:
        c = fd.read(1)
        if not c:
            raise FormatError("truncated matrix: the file ends in its type token")
        if c == b" ":
            return token
        token += c
        if len(token) > 4:
            raise FormatError(f"corrupt matrix: type token starts {token!r}")


def _read_matrix_at(fd, offset: int) -> np.ndarray:
    fd.seek(offset)
    head = fd.read(3)
    if head[:2] == b"\0B" and head[2:] != b"\4":  # binary, not an int32 vector
        fd.seek(offset + 2)
        token = _read_token(fd)
        if token in (b"CM", b"CM2", b"CM3"):
            return _decompress(fd, token.decode())
        if token in _PLAIN:
            return _read_plain(fd, token)
        raise FormatError(f"not a Kaldi float matrix or vector (type {token!r})")
    if len(head) == 0:
        raise FormatError("truncated: nothing at this offset (the file ends before it)")
    from kaldiio.matio import read_kaldi  # a text matrix (ark,t) and other objects

    fd.seek(offset)
    return np.asarray(read_kaldi(fd))


def read_matrix_at(fd, offset: int) -> np.ndarray:
    """The matrix at ``offset`` of an open binary ark (Kaldi-exact for compressed ones); a
    truncated or corrupt one is a FormatError naming the file and the offset."""
    try:
        return _read_matrix_at(fd, offset)
    except FormatError as e:
        raise FormatError(f"{_name(fd)}: matrix at offset {offset}: {e}") from None
    except _READ_ERRORS as e:
        raise FormatError(f"{_name(fd)}: matrix at offset {offset}: truncated or corrupt "
                          f"({str(e) or type(e).__name__})") from None


_RANGE = re.compile(r"^(.*):(\d+)\[(\d+):(\d+)(?:,(\d+):(\d+))?\]$")


def split_range(rxfilename: str) -> Optional[Tuple[str, int, slice, slice]]:
    """``file.ark:123[0:9]`` / ``file.ark:123[0:9,0:12]`` (Kaldi's inclusive row and column
    ranges) -> (file, offset, rows, cols); None for any other rxfilename."""
    m = _RANGE.match(rxfilename.strip())
    if not m:
        return None
    path, off, r0, r1, c0, c1 = m.groups()
    rows = slice(int(r0), int(r1) + 1)
    cols = slice(int(c0), int(c1) + 1) if c0 is not None else slice(None)
    return path, int(off), rows, cols


def read_ranged_at(fd, offset: int, rows: slice, cols: slice, rx: str) -> np.ndarray:
    """The row/column range of the matrix at ``offset`` (Kaldi-exact decompression)."""
    mat = read_matrix_at(fd, offset)
    if rows.stop > mat.shape[0] or (cols.stop is not None and cols.stop > mat.shape[1]):
        raise FormatError(f"{rx}: range outside the {mat.shape[0]}x{mat.shape[1]} matrix")
    return np.ascontiguousarray(mat[rows, cols])


def read_matrix_rx(rx: str, files) -> np.ndarray:
    """The matrix an scp entry names: ``ark:offset`` (with or without a range) from the open
    archives ``files`` (``OpenFiles``), anything else (a pipe, a plain file) through kaldiio."""
    at = split_offset(rx)
    if at is not None:
        return read_matrix_at(files.file(at[0]), at[1])
    ranged = split_range(rx)
    if ranged is not None:
        path, offset, rows, cols = ranged
        return read_ranged_at(files.file(path), offset, rows, cols, rx)
    import kaldiio

    try:
        return np.asarray(kaldiio.load_mat(rx))
    except Exception as e:  # noqa: BLE001 - kaldiio raises many kinds
        raise FormatError(f"cannot read {rx}: {str(e) or type(e).__name__}") from None


def iter_feature_scp(scp: str, base: str = "") -> Iterator[Tuple[str, np.ndarray]]:
    """(utt, matrix) for each line of a feats.scp (``read_matrix_rx``: Kaldi-exact for
    ``ark:offset`` entries and their row ranges, kaldiio for pipes). ``base``: the dir that
    relative archive paths are relative to (Kaldi's s5 dir; default: the current one)."""
    from hybridasr.kaldi.io.open_files import OpenFiles

    with OpenFiles() as files:
        for lineno, key, value in iter_map_lines(scp):
            yield key, read_scp_entry(scp, lineno, key, value, files, base)


def read_scp_entry(scp: str, lineno: int, key: str, value: str, files,
                   base: str = "") -> np.ndarray:
    """The matrix of one line of ``scp`` (``value``: its rxfilename, relative to ``base``
    where it is a relative path; ``files``: ``OpenFiles``); errors name ``scp:lineno`` and
    the key."""
    if base and not value.endswith("|") and not os.path.isabs(value):
        value = os.path.join(base, value)
    try:
        return read_matrix_rx(value, files)
    except FormatError as e:
        raise FormatError(f"{scp}:{lineno}: {key}: {e}") from None
    except _READ_ERRORS as e:
        raise FormatError(f"{scp}:{lineno}: cannot read {key} at {value}: "
                          f"{str(e) or type(e).__name__}") from None


def read_matrices(rspecifier: str, base: str = "") -> Iterator[Tuple[str, np.ndarray]]:
    """(key, matrix) pairs of an rspecifier: ``scp:`` through :func:`iter_feature_scp` (its
    relative entries relative to ``base`` where given), an archive (binary or text, a file,
    ``-`` or a pipe) sequentially through kaldiio. Errors name the input; a failed input
    command raises FormatError."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        if spec.rxfilename == "-" or spec.rxfilename.endswith("|"):
            raise FormatError(f"{rspecifier!r}: an scp must be a file here")
        yield from iter_feature_scp(spec.rxfilename, base)
        return
    from kaldiio.matio import load_ark

    stream = InputStream(spec.rxfilename)
    ok = False
    count, last = 0, None
    try:
        try:
            for key, mat in load_ark(stream.f):
                count, last = count + 1, key
                yield key, np.asarray(mat)
        except (OSError,) + _READ_ERRORS as e:
            where = (f"after its entry {count} ({last})" if last is not None else
                     "at its first entry")
            if not stream.is_pipe:
                with contextlib.suppress(OSError, ValueError):
                    where += f", near byte {stream.f.tell()}"
            raise FormatError(f"cannot read {label(spec.rxfilename)}: truncated or corrupt "
                              f"{where} ({str(e) or type(e).__name__})") from None
        ok = True
    finally:
        stream.close(check=ok)
