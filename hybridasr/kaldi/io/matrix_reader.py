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

import os
import re
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


def _decompress(fd, kind: str) -> np.ndarray:
    min_value, range_, rows, cols = struct.unpack("<ffii", fd.read(16))
    if kind == "CM":
        head = np.frombuffer(fd.read(8 * cols), dtype="<u2").reshape(cols, 4)
        p = _uint16_to_float(min_value, range_, head)
        p0, p25, p75, p100 = (p[:, i:i + 1] for i in range(4))
        data = np.frombuffer(fd.read(rows * cols), dtype=np.uint8).reshape(cols, rows)
        v = data.astype(_F)
        low = p0.astype(np.float64) + ((p25 - p0) * v).astype(np.float64) * (1 / 64.0)
        mid = p25.astype(np.float64) + ((p75 - p25) * (v - _F(64))).astype(np.float64) * (1 / 128.0)
        high = p75.astype(np.float64) + ((p100 - p75) * (v - _F(192))).astype(np.float64) * (1 / 63.0)
        out = np.where(data <= 64, low, np.where(data <= 192, mid, high)).astype(_F)
        return np.ascontiguousarray(out.T)
    if kind == "CM2":
        data = np.frombuffer(fd.read(2 * rows * cols), dtype="<u2").reshape(rows, cols)
        return _uint16_to_float(min_value, range_, data)
    data = np.frombuffer(fd.read(rows * cols), dtype=np.uint8).reshape(rows, cols)
    return _F(min_value) + (_F(range_) * _F(1.0 / 255.0)) * data.astype(_F)


def read_matrix_at(fd, offset: int) -> np.ndarray:
    """The matrix at ``offset`` of an open binary ark (Kaldi-exact for compressed ones)."""
    fd.seek(offset)
    head = fd.read(2)
    if head == b"\0B":
        token = fd.read(3)
        if token in (b"CM ", b"CM2", b"CM3"):
            kind = token.decode().strip()
            if kind != "CM":
                fd.read(1)  # the space after CM2/CM3
            return _decompress(fd, kind)
    from kaldiio.matio import read_kaldi

    fd.seek(offset)
    return np.asarray(read_kaldi(fd))


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
        raise FormatError(f"cannot read {rx}: {e}") from None


def iter_feature_scp(scp: str) -> Iterator[Tuple[str, np.ndarray]]:
    """(utt, matrix) for each line of a feats.scp (``read_matrix_rx``: Kaldi-exact for
    ``ark:offset`` entries and their row ranges, kaldiio for pipes)."""
    from hybridasr.kaldi.io.open_files import OpenFiles

    with OpenFiles() as files:
        for lineno, key, value in iter_map_lines(scp):
            try:
                mat = read_matrix_rx(value, files)
            except FormatError as e:
                raise FormatError(f"{scp}:{lineno}: {key}: {e}") from None
            except (ValueError, struct.error) as e:
                raise FormatError(f"{scp}:{lineno}: cannot read {key} at {value}: "
                                  f"{e}") from None
            yield key, mat


def read_matrices(rspecifier: str) -> Iterator[Tuple[str, np.ndarray]]:
    """(key, matrix) pairs of an rspecifier: ``scp:`` through :func:`iter_feature_scp`, an
    archive (binary or text, a file, ``-`` or a pipe) sequentially through kaldiio. Errors name
    the input; a failed input command raises FormatError."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        if spec.rxfilename == "-" or spec.rxfilename.endswith("|"):
            raise FormatError(f"{rspecifier!r}: an scp must be a file here")
        yield from iter_feature_scp(spec.rxfilename)
        return
    from kaldiio.matio import load_ark

    stream = InputStream(spec.rxfilename)
    ok = False
    try:
        try:
            for key, mat in load_ark(stream.f):
                yield key, np.asarray(mat)
        except (OSError, ValueError, struct.error, UnicodeDecodeError) as e:
            raise FormatError(f"cannot read {label(spec.rxfilename)}: {e}") from None
        ok = True
    finally:
        stream.close(check=ok)
