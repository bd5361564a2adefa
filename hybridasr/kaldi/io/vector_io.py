"""Kaldi ``Vector`` files (``ali_train_pdf.counts``, ``*.occs``, priors): ``[ c0 c1 ... ]``.

Text, as Kaldi's ``Vector::Write`` puts it: `` [ 54 27 57 ]`` and a newline; binary: ``\\0B``,
``FV `` or ``DV ``, the length, the raw values. Reading accepts both; writing keeps integer
values as integers and other values in their shortest exact decimal form.
"""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter
from hybridasr.utils.atomic import atomic_path


def read_kaldi_vector(path: str) -> np.ndarray:
    """A Kaldi vector file, text or binary, as float64."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    with f:
        return KaldiObjectReader(f, path).read_float_vector("a Kaldi vector [ ... ]")


def format_kaldi_vector(values) -> str:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"a Kaldi vector is one-dimensional, got shape {arr.shape}")
    single = arr.dtype == np.float32
    words = []
    for v in arr.astype(np.float64).tolist():
        if v.is_integer() and abs(v) < 2 ** 53:
            words.append(str(int(v)))
        else:  # the shortest text that reads back exactly (at the array's precision)
            words.append(str(np.float32(v)) if single else repr(v))
    return " [ " + "".join(w + " " for w in words) + "]\n"


def write_kaldi_vector(path: str, values, binary: bool = False) -> None:
    """Writes a Kaldi vector file atomically (text by default; binary as ``DV``)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if binary:
            arr = np.asarray(values, dtype="<f8")
            w = KaldiObjectWriter(f, binary=True)
            w.token("DV")
            w.int32(len(arr))
            f.write(arr.tobytes())
        else:
            f.write(format_kaldi_vector(values).encode())
