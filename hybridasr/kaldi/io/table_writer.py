"""Writing Kaldi tables: the one writer family (matrices, int32 vectors, text values).

Every writer takes a wspecifier (``hybridasr.kaldi.io.specifier``): ``ark:f``, ``ark,t:f``,
``ark,scp:f.ark,f.scp``, ``ark:-`` (stdout), ``ark:| gzip -c > f.gz``. An entry is ``key``, one
space, then the value as Kaldi's holders write it. The scp line of an entry is ``key
<ark>:<offset>`` with the ark's name as given (relative paths stay relative, as Kaldi recipes
expect). Files are written under temporary names and appear on ``close()``, each fsynced
before its rename: the ark first, then the scp, so an interrupted job never leaves a valid scp
pointing into a half-written ark; on an exception inside ``with`` (or ``close(ok=False)`` /
``abort()``) nothing is left behind, temporaries included. A write that fails (a full disk)
raises ``OutputError`` naming the file: ``no space left on device: <file>``.

- :class:`MatrixWriter`: float matrices and vectors (binary as kaldiio writes them, optionally
  compressed with ``compression_method``: 1 is what ``copy-feats --compress=true`` writes, 2
  Kaldi's kSpeechFeature; text as Kaldi's ``Matrix::Write``, 7 significant digits).
  :class:`ArkScpWriter` is the same, given the ark and scp paths instead of a wspecifier.
- :class:`IntVectorWriter`: int32 vectors (alignments, pdfs, word ids) and int32 pairs.
- :class:`TextTableWriter`: one text value per key (``utt2num_frames``, ``utt2dur``): always
  text, whatever ``b``/``t`` say.
"""
from __future__ import annotations

import io
from typing import Optional, Union

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.io.intvec import encode_int_pair_vector, encode_int_vector
from hybridasr.kaldi.io.specifier import WSpecifier, parse_wspecifier
from hybridasr.kaldi.io.streams import OutputStream


class TableWriter:
    """The common part: the output streams, keys, scp lines, commit/abort."""

    def __init__(self, wspecifier: Union[str, WSpecifier]):
        spec = parse_wspecifier(wspecifier) if isinstance(wspecifier, str) else wspecifier
        self.spec = spec
        self.text = spec.text
        self.ark_name, self.scp_name = spec.ark, spec.scp
        self._ark: Optional[OutputStream] = OutputStream(spec.ark)
        self._scp: Optional[OutputStream] = None
        if spec.scp:
            try:
                self._scp = OutputStream(spec.scp)
            except BaseException:
                self._ark.abort()
                raise
        self.num_written = 0

    def _begin(self, key: str) -> int:
        """Writes ``key `` and its scp line; returns the value's offset in the ark (-1 when
        the ark is a stream)."""
        if self._ark is None:
            raise ValueError(f"{self.ark_name}: writer is closed")
        if not key or any(c.isspace() for c in key):
            raise FormatError(f"{self.ark_name}: bad key {key!r} (empty or with whitespace)")
        self._ark.write(key.encode("utf-8") + b" ")
        offset = self._ark.tell() if self._ark.seekable else -1
        if self._scp is not None:
            self._scp.write(f"{key} {self.ark_name}:{offset}\n".encode("utf-8"))
        self.num_written += 1
        return offset

    def _write_value(self, key: str, data: bytes) -> int:
        offset = self._begin(key)
        self._ark.write(data)
        return offset

    def write_encoded(self, key: str, data: bytes) -> int:
        """An entry whose value is already in this table's encoding (``encode``), e.g. one
        object written under many keys without encoding it again."""
        return self._write_value(key, data)

    def close(self, ok: bool = True) -> None:
        """Finishes the files (ark, then scp), or with ``ok=False`` removes them."""
        if not ok:
            return self.abort()
        if self._ark is None:
            return
        ark, scp, self._ark, self._scp = self._ark, self._scp, None, None
        try:
            # both written out first (a full disk fails here, and neither file appears)
            ark.prepare()
            if scp is not None:
                scp.prepare()
            ark.commit()
        except BaseException:
            ark.abort()
            if scp is not None:
                scp.abort()
            raise
        if scp is not None:
            scp.commit()

    def abort(self) -> None:
        """Removes the temporary files; the targets are left as they were."""
        for s in (self._ark, self._scp):
            if s is not None:
                s.abort()
        self._ark = self._scp = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(ok=exc_type is None)
        return False


class MatrixWriter(TableWriter):
    """Writes (key, numpy array) pairs: float32/float64 matrices or vectors (int32 vectors
    too, in binary). ``compression_method`` (kaldiio's numbering) compresses matrices."""

    def __init__(self, wspecifier: Union[str, WSpecifier],
                 compression_method: Optional[int] = None):
        super().__init__(wspecifier)
        if compression_method is not None and self.text:
            self.abort()
            raise ConfigError(f"{self.ark_name}: compressed matrices need a binary archive "
                              f"(drop ',t' from the wspecifier)")
        self.compression_method = compression_method

    def encode(self, array: np.ndarray) -> bytes:
        """The bytes ``write`` would put after the key (for ``write_encoded``)."""
        if self.text:
            return encode_text_matrix(array)
        from kaldiio.matio import write_array

        buf = io.BytesIO()
        write_array(buf, array, compression_method=self.compression_method)
        return buf.getvalue()

    def write(self, key: str, array: np.ndarray) -> int:
        # encoded first, then written through the stream (whose write errors, a full disk,
        # name the file and remove its temporary)
        return self._write_value(key, self.encode(array))


class ArkScpWriter(MatrixWriter):
    """A :class:`MatrixWriter` to binary ``ark`` (and ``scp``) files named by path."""

    def __init__(self, ark: str, scp: Optional[str] = None,
                 compression_method: Optional[int] = None):
        super().__init__(WSpecifier(ark, scp), compression_method)
        self.ark, self.scp = ark, scp


class IntVectorWriter(TableWriter):
    """Writes int32 vectors (``write``) or Int32PairVectors (``write_pairs``, what
    ``ali-to-phones --write-lengths`` writes), text for ``ark,t``."""

    def write(self, key: str, values) -> int:
        """Writes one entry; returns the offset of its value in the ark (what an scp holds)."""
        return self._write_value(key, encode_int_vector(values, self.text))

    def write_pairs(self, key: str, pairs) -> int:
        return self._write_value(key, encode_int_pair_vector(pairs, self.text))


class TextTableWriter(TableWriter):
    """Writes ``key value`` lines; a value that is a list or tuple is joined with spaces."""

    def write(self, key: str, value) -> int:
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        return self._write_value(key, f"{value}\n".encode("utf-8"))


# ------------------------------------------------------------------ text matrices
def _fmt(v: float) -> str:
    """A float as Kaldi's text streams print it (precision 7, C++'s default notation)."""
    return format(v, ".7g")


def encode_text_matrix(array) -> bytes:
    """One matrix or vector as Kaldi writes it in text mode (`` [`` rows ``]``)."""
    arr = np.asarray(array)
    if arr.ndim == 1:
        return (" [ " + "".join(_fmt(v) + " " for v in arr.tolist()) + "]\n").encode()
    if arr.ndim != 2:
        raise ValueError(f"expected a matrix or a vector, got shape {arr.shape}")
    if arr.shape[1] == 0 or arr.shape[0] == 0:
        return b" [ ]\n"
    rows = ["\n  " + "".join(_fmt(v) + " " for v in row) for row in arr.tolist()]
    return (" [" + "".join(rows) + "]\n").encode()
