"""The ``ilabels_N_P`` file of Kaldi's ``fstcomposecontext`` (``WriteILabelInfo``): for each
input label of C o LG, its phone window (length N), ``[-d]`` for disambiguation symbol d, or
``[]`` for epsilon (label 0). Kaldi writes it in binary (``\\0B``, an int32 count, then one
integer vector per label); ``make-h-transducer`` reads it."""
from __future__ import annotations

import io
from typing import List, Sequence

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter, read_kaldi_object

__all__ = ["read_ilabel_info", "write_ilabel_info", "ilabel_info_bytes"]


def _read(r: KaldiObjectReader) -> List[List[int]]:
    n = r.read_int32("the number of input labels")
    if n < 1:
        raise FormatError(f"{r.name}: {n} input labels in an ilabel-info file (label 0, "
                          f"epsilon, is always there)")
    info = [r.read_int32_vector(f"the phone window of input label {i}") for i in range(n)]
    if info[0]:
        raise FormatError(f"{r.name}: input label 0 must be epsilon (an empty window), "
                          f"got {info[0]}")
    return info


def read_ilabel_info(path: str) -> List[List[int]]:
    """Reads Kaldi's ilabel-info file (binary or text)."""
    return read_kaldi_object(path, _read, "ilabel info")


def ilabel_info_bytes(info: Sequence[Sequence[int]], binary: bool = True) -> bytes:
    """The file's bytes, as Kaldi's ``WriteILabelInfo`` writes them."""
    f = io.BytesIO()
    w = KaldiObjectWriter(f, binary)
    w.int32(len(info))
    for window in info:
        w.int32_vector(list(window))
    return f.getvalue()


def write_ilabel_info(info: Sequence[Sequence[int]], path: str, binary: bool = True) -> None:
    """Writes the file atomically (a temporary, fsynced, renamed)."""
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(path, "wb") as f:
        f.write(ilabel_info_bytes(info, binary))
