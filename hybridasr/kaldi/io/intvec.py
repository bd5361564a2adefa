"""Kaldi int32-vector archives (alignments, pdf targets, phone sequences), text and binary.

Layouts, as Kaldi's ``BasicVectorHolder<int32>`` writes them after ``key`` and one space:
- binary: ``\\0B``, the length as an int32 (size byte 4 + 4 bytes little-endian), then each
  element the same way (5 bytes an element);
- text (``ark,t:``): the numbers separated by spaces, each followed by a space, then a
  newline: ``utt1 3 3 7 \\n``. No brackets (Kaldi's int-vector reader rejects them; when
  reading we tolerate a ``[ ... ]`` that other writers put around).
An archive may mix both. Reading streams through the input in large chunks, so a pipe over
many gzipped jobs never sits in memory whole; each value is decoded with one numpy call.
Writing: ``encode_int_vector`` here, the archive itself by
``hybridasr.kaldi.io.table_writer.IntVectorWriter``.
"""
from __future__ import annotations

import struct
from collections import OrderedDict
from typing import BinaryIO, Dict, Iterator, List, Optional, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.specifier import parse_rspecifier
from hybridasr.kaldi.io.streams import InputStream, label, split_offset

_REC = np.dtype([("size", "i1"), ("value", "<i4")])
_WS = b" \t\n\r\v\f"
_CHUNK = 1 << 22


# ------------------------------------------------------------------ decoding one value
def _decode_at(buf, pos: int, end: int, name: str, key: str) -> Tuple[Optional[np.ndarray], int]:
    """Decodes the value starting at ``buf[pos]`` (just after ``key ``). Returns (array, new
    position), or (None, pos) if ``buf[:end]`` does not hold the whole value yet."""
    avail = end - pos
    if avail < 2 and (avail <= 0 or buf[pos] == 0):
        return None, pos
    if buf[pos] == 0 and buf[pos + 1] == 66:  # "\0B": binary
        if avail < 7:
            return None, pos
        if buf[pos + 2] != 4:
            raise FormatError(f"{name}: entry {key!r}: not an int32 vector "
                              f"(size byte {buf[pos + 2]}; a matrix or float vector?)")
        (n,) = struct.unpack_from("<i", buf, pos + 3)
        if n < 0:
            raise FormatError(f"{name}: entry {key!r}: negative length {n}")
        start = pos + 7
        stop = start + 5 * n
        if stop > end:
            return None, pos
        rec = np.frombuffer(buf, dtype=_REC, count=n, offset=start)
        if n and not (rec["size"] == 4).all():
            raise FormatError(f"{name}: entry {key!r}: corrupt int32 vector "
                              f"(bad size byte inside)")
        return rec["value"].astype(np.int32), stop
    nl = buf.find(b"\n", pos, end)
    if nl < 0:
        return None, pos
    return _parse_text_values(bytes(buf[pos:nl]), name, key), nl + 1


def _parse_text_values(line: bytes, name: str, key: str) -> np.ndarray:
    words = line.split()
    if words and words[0] == b"[":
        if words[-1] != b"]":
            raise FormatError(f"{name}: entry {key!r}: '[' without closing ']'")
        words = words[1:-1]
    try:
        return np.array([int(w) for w in words], dtype=np.int32)
    except (ValueError, OverflowError):
        bad = next((w for w in words if not w.lstrip(b"-").isdigit()), words[0])
        raise FormatError(f"{name}: entry {key!r}: expected integers, got "
                          f"{bad[:40].decode('utf-8', 'replace')!r}") from None


# ------------------------------------------------------------------ streaming reader
_MAX_KEY = 4096


class _Chunks:
    """A sliding window over a stream: ``buf[pos:]`` is what is unread."""

    def __init__(self, f: BinaryIO, chunk_size: int):
        self.f, self.chunk_size = f, chunk_size
        self.buf, self.pos, self.eof = b"", 0, False

    def refill(self) -> int:
        """Reads more; returns how far existing indices moved left (-1 at end of input)."""
        if self.eof:
            return -1
        more = self.f.read(self.chunk_size)
        if not more:
            self.eof = True
            return -1
        shift = self.pos
        self.buf = self.buf[self.pos:] + more
        self.pos = 0
        return shift


def iter_int_vector_stream(f: BinaryIO, name: str,
                           chunk_size: int = _CHUNK) -> Iterator[Tuple[str, np.ndarray]]:
    """Yields (key, int32 array) from an archive stream (binary, text or mixed)."""
    c = _Chunks(f, chunk_size)
    while True:
        while True:  # skip whitespace between entries
            buf, n = c.buf, len(c.buf)
            pos = c.pos
            while pos < n and buf[pos] in _WS:
                pos += 1
            c.pos = pos
            if pos < n or c.refill() < 0:
                break
        if c.pos >= len(c.buf):
            return
        while True:  # the key ends at a space (or a newline: an empty text entry)
            pos, buf = c.pos, c.buf
            lim = min(len(buf), pos + _MAX_KEY)
            sp = buf.find(b" ", pos, lim)
            nl = buf.find(b"\n", pos, sp if sp >= 0 else lim)
            if nl >= 0:
                sp = nl
            if sp >= 0:
                break
            if lim - pos >= _MAX_KEY:
                raise FormatError(f"{name}: no key at {buf[pos:pos + 40]!r}: not a Kaldi "
                                  f"archive (or a corrupt one)?")
            if c.refill() < 0:
                raise FormatError(f"{name}: unexpected end of archive after "
                                  f"{buf[pos:pos + 40]!r} (truncated?)")
        key = buf[pos:sp].decode("utf-8", "replace")
        if buf[sp] == 10:
            c.pos = sp + 1
            yield key, np.zeros(0, dtype=np.int32)
            continue
        vpos = sp + 1
        while True:
            value, newpos = _decode_at(c.buf, vpos, len(c.buf), name, key)
            if value is not None:
                break
            shift = c.refill()
            if shift < 0:
                if vpos < len(c.buf) and c.buf[vpos] != 0:  # last text line, no newline
                    value, newpos = _parse_text_values(c.buf[vpos:], name, key), len(c.buf)
                    break
                raise FormatError(f"{name}: entry {key!r} is cut short (truncated archive?)")
            vpos -= shift
        c.pos = newpos
        yield key, value


def read_int_vectors(rspecifier: str) -> Iterator[Tuple[str, np.ndarray]]:
    """Yields (key, int32 array) from an rspecifier (``ark:...``, ``ark,t:...``, ``scp:...``,
    ``ark:gunzip -c ali.*.gz|``), raising FormatError naming the input on bad data or when the
    input command fails."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        with InputStream(spec.rxfilename) as scp:
            lines = scp.read().decode("utf-8").splitlines()
        yield from _iter_scp(lines, spec.rxfilename)
        return
    stream = InputStream(spec.rxfilename)
    ok = False
    try:
        for item in iter_int_vector_stream(stream.f, label(spec.rxfilename)):
            yield item
        ok = True
    finally:
        stream.close(check=ok)


# ------------------------------------------------------------------ random access (scp)
def read_int_vector_at(f: BinaryIO, offset: int, path: str, key: str) -> np.ndarray:
    """The int32 vector at ``offset`` of an open archive, read with ``seek`` + ``read`` (random
    access: nothing else of the archive is read or mapped)."""
    f.seek(offset)
    head = f.read(7)
    if head[:2] == b"\0B" and len(head) == 7 and head[2] == 4:
        (n,) = struct.unpack_from("<i", head, 3)
        buf = head + f.read(5 * max(n, 0))
    elif head[:2] == b"\0B":
        buf = head  # _decode_at names what is wrong
    else:
        f.seek(offset)
        buf = f.readline()
    return decode_int_vector_at(buf, 0, path, key)


def decode_int_vector_at(buf, offset: int, path: str, key: str) -> np.ndarray:
    """The int32 vector at ``buf[offset]`` (an archive in memory, e.g. mapped by
    ``OpenFiles.mapping``): binary or text, a final text line without newline included."""
    value, _ = _decode_at(buf, offset, len(buf), path, key)
    if value is None:
        if offset < len(buf) and buf[offset] != 0:  # a final text line without newline
            return _parse_text_values(bytes(buf[offset:]), path, key)
        raise FormatError(f"entry {key!r} at {path}:{offset} is cut short (truncated archive?)")
    return value


def _split_scp_line(line: str, scp: str, lineno: int) -> Tuple[str, str, int]:
    parts = line.split(None, 1)
    if len(parts) != 2:
        raise FormatError(f"{scp}:{lineno}: expected '<key> <ark>:<offset>', got {line!r}")
    key, loc = parts[0], parts[1].strip()
    at = split_offset(loc)
    if at is None:
        raise FormatError(f"{scp}:{lineno}: expected '<ark>:<offset>' after {key!r}, got {loc!r}")
    return key, at[0], at[1]


def _iter_scp(lines: List[str], scp: str) -> Iterator[Tuple[str, np.ndarray]]:
    from hybridasr.kaldi.io.open_files import OpenFiles

    with OpenFiles() as files:
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            key, path, off = _split_scp_line(line, scp, lineno)
            try:
                value = decode_int_vector_at(files.mapping(path), off, path, key)
            except FormatError as e:
                raise FormatError(f"{scp}:{lineno}: {e}") from None
            yield key, value


def read_int_vector_scp(scp_path: str) -> "OrderedDict[str, np.ndarray]":
    """Reads every entry an scp lists (file order); errors name the scp line."""
    try:
        with open(scp_path, "r", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FormatError(f"cannot read {scp_path}: {e.strerror}") from None
    out: "OrderedDict[str, np.ndarray]" = OrderedDict()
    for key, value in _iter_scp(lines, scp_path):
        if key in out:
            raise FormatError(f"{scp_path}: duplicate key {key!r}")
        out[key] = value
    return out


# ------------------------------------------------------------------ writing
def encode_int_vector(values, text: bool = False) -> bytes:
    """The bytes of one value as Kaldi writes it (without the key)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"an int32 vector must be one-dimensional, got shape {arr.shape}")
    if text:
        return ("".join(f"{v} " for v in arr.tolist()) + "\n").encode()
    rec = np.empty(len(arr), dtype=_REC)
    rec["size"] = 4
    rec["value"] = arr
    return b"\0B\x04" + struct.pack("<i", len(arr)) + rec.tobytes()


def encode_int_pair_vector(pairs, text: bool = False) -> bytes:
    """One ``Int32PairVector`` value (``ali-to-phones --write-lengths``): text ``1 5 ; 23 7 \\n``;
    binary: the number of pairs, then both numbers of each pair, as int32s."""
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if text:
        return (" ; ".join(f"{a} {b}" for a, b in arr.tolist()) + (" \n" if len(arr) else "\n")
                ).encode()
    rec = np.empty(2 * len(arr), dtype=_REC)
    rec["size"] = 4
    rec["value"] = arr.reshape(-1)
    return b"\0B\x04" + struct.pack("<i", len(arr)) + rec.tobytes()
