"""Kaldi's basic object I/O (``base/io-funcs``): tokens, int32/float scalars, integer vectors.

A Kaldi object file is binary when it starts with ``\\0B``, text otherwise. In binary mode a
token is ``<Name>`` followed by one space; an int32 is a size byte (4) and 4 little-endian bytes;
a float a size byte (4 or 8) and the value; an integer vector is a size byte, a raw int32
count and the raw elements. In text mode everything is whitespace-separated words and an
integer vector is ``[ 1 2 3 ]``.

``KaldiObjectReader`` reads from a file object *incrementally* (a model may be followed by
hundreds of megabytes of AmDiagGmm or nnet that the caller does not want), and every error
names the file and what was expected there. ``KaldiObjectWriter`` writes the same layouts.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, List, Optional

import numpy as np

from hybridasr.errors import FormatError

BINARY_HEADER = b"\0B"


class KaldiObjectReader:
    """Reads Kaldi basic types from ``f`` (opened in binary mode), binary or text."""

    def __init__(self, f: BinaryIO, name: str, binary: Optional[bool] = None):
        self.f, self.name = f, name
        if binary is None:
            head = f.read(2)
            binary = head == BINARY_HEADER
            if not binary:
                self._text_prefix = head
        if not binary and not hasattr(self, "_text_prefix"):
            self._text_prefix = b""
        self.binary = binary
        self._words: Optional[Iterator[bytes]] = None if binary else self._text_words()

    # ---- text mode: a stream of whitespace-separated words, read a line at a time ----
    def _text_words(self) -> Iterator[bytes]:
        first = True
        while True:
            line = self.f.readline()
            if first:
                line, first = self._text_prefix + line, False
            if not line:
                return
            for w in line.split():
                yield w

    def _next_word(self, what: str) -> bytes:
        assert self._words is not None
        try:
            return next(self._words)
        except StopIteration:
            raise FormatError(f"{self.name}: unexpected end of file while reading {what} "
                              f"(truncated file?)") from None

    # ---- binary helpers ----
    def _read_exact(self, n: int, what: str) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise FormatError(f"{self.name}: unexpected end of file while reading {what} "
                              f"(truncated file?)")
        return b

    # ---- public API ----
    def read_token(self, what: str = "a token") -> str:
        if not self.binary:
            return self._next_word(what).decode("utf-8", "replace")
        chars = []
        c = self._read_exact(1, what)
        while c.isspace():  # Kaldi's `is >> token` skips leading whitespace
            c = self._read_exact(1, what)
        while not c.isspace():
            chars.append(c)
            if len(chars) > 256:
                raise FormatError(f"{self.name}: expected {what}, found binary garbage "
                                  f"(not a Kaldi object file?)")
            c = self._read_exact(1, what)
        return b"".join(chars).decode("utf-8", "replace")

    def expect_token(self, token: str, context: str = "") -> None:
        got = self.read_token(f"token {token}")
        if got != token:
            where = f" in {context}" if context else ""
            raise FormatError(f"{self.name}: expected token {token}{where}, got {got[:40]!r}")

    def read_int32(self, what: str = "an int32") -> int:
        if not self.binary:
            w = self._next_word(what)
            try:
                return int(w)
            except ValueError:
                raise FormatError(f"{self.name}: expected {what} (an integer), "
                                  f"got {w[:40]!r}") from None
        b = self._read_exact(5, what)
        if b[0] != 4:
            raise FormatError(f"{self.name}: expected {what} (int32 size byte 4), "
                              f"got size byte {b[0]}")
        return struct.unpack("<i", b[1:])[0]

    def read_float(self, what: str = "a float") -> float:
        if not self.binary:
            w = self._next_word(what)
            try:
                return float(w)
            except ValueError:
                raise FormatError(f"{self.name}: expected {what} (a number), "
                                  f"got {w[:40]!r}") from None
        size = self._read_exact(1, what)[0]
        if size == 4:
            return struct.unpack("<f", self._read_exact(4, what))[0]
        if size == 8:
            return struct.unpack("<d", self._read_exact(8, what))[0]
        raise FormatError(f"{self.name}: expected {what} (float size byte 4 or 8), got {size}")

    def read_int32_vector(self, what: str = "an integer vector") -> List[int]:
        """Kaldi's ``ReadIntegerVector`` for int32."""
        if not self.binary:
            w = self._next_word(what)
            if w != b"[":
                raise FormatError(f"{self.name}: expected '[' starting {what}, got {w[:40]!r}")
            out = []
            while True:
                w = self._next_word(what)
                if w == b"]":
                    return out
                try:
                    out.append(int(w))
                except ValueError:
                    raise FormatError(f"{self.name}: expected an integer in {what}, "
                                      f"got {w[:40]!r}") from None
        size = self._read_exact(1, what)[0]
        if size != 4:
            raise FormatError(f"{self.name}: expected {what} of int32 (size byte 4), got {size}")
        (n,) = struct.unpack("<i", self._read_exact(4, what))
        if n < 0 or n > 100_000_000:
            raise FormatError(f"{self.name}: bad length {n} of {what}")
        return np.frombuffer(self._read_exact(4 * n, what), dtype="<i4").astype(int).tolist()

    def read_float_vector(self, what: str = "a vector") -> np.ndarray:
        """Kaldi's ``Vector<float>::Read`` (``FV``/``DV`` in binary, ``[ ... ]`` in text)."""
        if not self.binary:
            w = self._next_word(what)
            if w != b"[":
                raise FormatError(f"{self.name}: expected '[' starting {what}, got {w[:40]!r}")
            vals = []
            while True:
                w = self._next_word(what)
                if w == b"]":
                    return np.array(vals, dtype=np.float64)
                try:
                    vals.append(float(w))
                except ValueError:
                    raise FormatError(f"{self.name}: expected a number in {what}, "
                                      f"got {w[:40]!r}") from None
        token = self.read_token(what)
        if token not in ("FV", "DV"):
            raise FormatError(f"{self.name}: expected FV or DV starting {what}, got {token!r}")
        n = self.read_int32(f"length of {what}")
        if n < 0 or n > 1_000_000_000:
            raise FormatError(f"{self.name}: bad length {n} of {what}")
        dtype = "<f4" if token == "FV" else "<f8"
        itemsize = 4 if token == "FV" else 8
        return np.frombuffer(self._read_exact(itemsize * n, what), dtype=dtype).astype(np.float64)


class KaldiObjectWriter:
    """Writes Kaldi basic types to ``f`` in the layout Kaldi's ``Write`` functions use."""

    def __init__(self, f: BinaryIO, binary: bool, write_header: bool = True):
        self.f, self.binary = f, binary
        if binary and write_header:
            f.write(BINARY_HEADER)

    def raw_text(self, s: str) -> None:
        """Text-mode layout characters (newlines); nothing in binary mode."""
        if not self.binary:
            self.f.write(s.encode())

    def token(self, token: str) -> None:
        self.f.write(token.encode() + b" ")

    def int32(self, v: int) -> None:
        if self.binary:
            self.f.write(b"\x04" + struct.pack("<i", int(v)))
        else:
            self.f.write(f"{int(v)} ".encode())

    def float(self, v: float) -> None:
        if self.binary:
            self.f.write(b"\x04" + struct.pack("<f", float(v)))
        else:
            self.f.write(f"{_fmt_float(v)} ".encode())

    def int32_vector(self, values) -> None:
        if self.binary:
            arr = np.asarray(values, dtype="<i4")
            self.f.write(b"\x04" + struct.pack("<i", len(arr)) + arr.tobytes())
        else:
            self.f.write(("[ " + "".join(f"{int(v)} " for v in values) + "]\n").encode())

    def float_vector(self, values) -> None:
        arr = np.asarray(values, dtype="<f4")
        if self.binary:
            self.token("FV")
            self.int32(len(arr))
            self.f.write(arr.tobytes())
        else:
            self.f.write((" [ " + "".join(f"{_fmt_float(v)} " for v in arr) + "]\n").encode())


def _fmt_float(v: float) -> str:
    """Shortest text that reads back as the same float32."""
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return str(np.float32(v))


def read_kaldi_object(rxfilename: str, read, what: str):
    """``read(KaldiObjectReader)`` on an rxfilename (a file, ``-`` or ``cmd |``): the object at
    its head (``TransitionModel.read``, ``ContextDependency.read``); nothing past it is read, so
    a pipe's command may die of SIGPIPE (not an error). ``what`` names it in errors."""
    from hybridasr.kaldi.io.streams import InputStream

    try:
        stream = InputStream(rxfilename)
    except FormatError as e:
        raise FormatError(f"cannot read {what}: {e}") from None
    try:
        return read(KaldiObjectReader(stream.f, rxfilename))
    finally:
        stream.close(check=False)
