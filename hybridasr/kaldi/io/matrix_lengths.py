"""Matrix lengths without reading the matrices (Kaldi's ``feat-to-len``): from
``utt2num_frames`` or the ark headers.

A binary Kaldi matrix at ``ark:offset`` starts ``\\0B``, a type token (``FM ``, ``DM ``,
``CM ``, ``CM2 ``, ``CM3 ``) and then the row count: after a size byte for FM/DM, after two
floats (min, range) for compressed matrices. Anything else (text arks, pipes, row ranges) is
loaded with kaldiio to get its shape.
"""
from __future__ import annotations

import struct
from collections import OrderedDict
from typing import BinaryIO, Optional

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.matrix_reader import read_matrices
from hybridasr.kaldi.io.open_files import OpenFiles
from hybridasr.kaldi.io.specifier import parse_rspecifier
from hybridasr.kaldi.io.streams import split_offset
from hybridasr.kaldi.io.table import iter_map_lines, read_int_map


def _rows_from_header(f: BinaryIO) -> Optional[int]:
    head = f.read(2)
    if not head:
        raise FormatError("truncated: the file ends before this offset")
    if head != b"\0B":
        return None
    token = b""
    while len(token) < 5:
        c = f.read(1)
        if not c or c == b" ":
            break
        token += c
    if token in (b"FM", b"DM"):
        size, rows = struct.unpack("<bi", _read_exact(f, 5))
        return rows if size == 4 else None
    if token in (b"CM", b"CM2", b"CM3"):
        _, _, rows, _ = struct.unpack("<ffii", _read_exact(f, 16))
        return rows
    return None


def _read_exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise FormatError("truncated matrix header: the file ends inside it")
    return data


def read_scp_lengths(feats_scp: str) -> "OrderedDict[str, int]":
    """Number of rows of every matrix an scp names (headers only where possible)."""
    out: "OrderedDict[str, int]" = OrderedDict()
    fallback = []
    with OpenFiles() as files:
        for lineno, utt, rx in iter_map_lines(feats_scp):
            at = split_offset(rx)
            rows = None
            if at is not None:
                path, offset = at
                try:
                    f = files.file(path)
                except FormatError as e:
                    raise FormatError(f"{feats_scp}:{lineno}: {e} (for {utt})") from None
                f.seek(offset)
                try:
                    rows = _rows_from_header(f)
                except FormatError as e:
                    raise FormatError(f"{feats_scp}:{lineno}: {utt}: {path}: matrix at offset "
                                      f"{offset}: {e}") from None
            if rows is None:
                fallback.append((lineno, utt, rx))
            out[utt] = rows if rows is not None else -1
    if fallback:
        import kaldiio

        for lineno, utt, rx in fallback:
            try:
                out[utt] = int(kaldiio.load_mat(rx).shape[0])
            except Exception as e:  # kaldiio raises many kinds
                raise FormatError(f"{feats_scp}:{lineno}: cannot read {rx} for {utt}: "
                                  f"truncated or corrupt ({str(e) or type(e).__name__})") \
                    from None
    return out


def read_lengths(feats_scp: str, utt2num_frames: Optional[str] = None) -> "OrderedDict[str, int]":
    """Lengths of the utterances in ``feats_scp`` (from ``utt2num_frames`` when given)."""
    if utt2num_frames:
        lengths = read_int_map(utt2num_frames)
        keys = [utt for _, utt, _ in iter_map_lines(feats_scp)]
        missing = [k for k in keys if k not in lengths]
        if missing:
            raise FormatError(f"{utt2num_frames}: no entry for utterance {missing[0]} of "
                              f"{feats_scp} ({len(missing)} missing)")
        return OrderedDict((k, lengths[k]) for k in keys)
    return read_scp_lengths(feats_scp)


def feat_lengths(rspecifier: str) -> "OrderedDict[str, int]":
    """Rows of every matrix of ``scp:feats.scp`` (headers only where possible) or of an
    archive (read whole), as Kaldi's ``feat-to-len``."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        return read_scp_lengths(spec.rxfilename)
    return OrderedDict((k, int(m.shape[0])) for k, m in read_matrices(rspecifier))


def feat_length_of_file(rxfilename: str) -> int:
    """Rows of the single matrix in a file (``feat-to-len <rxfilename>``)."""
    import kaldiio

    try:
        return int(kaldiio.load_mat(rxfilename).shape[0])
    except Exception as e:  # noqa: BLE001 - kaldiio raises many kinds
        raise FormatError(f"cannot read a matrix from {rxfilename}: "
                          f"{str(e) or type(e).__name__}") from None
