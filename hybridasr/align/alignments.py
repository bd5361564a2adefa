"""Reading the alignments of a Kaldi alignment dir (``exp/tri3_ali``: ``ali.{1..nj}.gz``,
``num_jobs``, ``final.mdl``), one job after the other, never all in memory at once.

The gzipped archives are decompressed in-process (a corrupt or truncated gzip raises
FormatError naming the file); each holds a text or binary int32-vector archive.
"""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Iterator, List, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import iter_int_vector_stream


def num_jobs(ali_dir: str) -> int:
    path = os.path.join(ali_dir, "num_jobs")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror} (not a Kaldi alignment dir?)") \
            from None
    if not text.isdigit() or int(text) < 1:
        raise FormatError(f"{path}: expected a positive integer, got {text[:40]!r}")
    return int(text)


def alignment_files(ali_dir: str) -> List[str]:
    """``ali.1.gz`` .. ``ali.<num_jobs>.gz`` (each must exist)."""
    files = []
    for j in range(1, num_jobs(ali_dir) + 1):
        path = os.path.join(ali_dir, f"ali.{j}.gz")
        if not os.path.isfile(path):
            raise FormatError(f"{ali_dir}: num_jobs says {num_jobs(ali_dir)} but {path} "
                              f"does not exist")
        files.append(path)
    return files


class _CheckedGzip:
    """A gzip reader whose errors become FormatError naming the file."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._f = gzip.open(path, "rb")
        except OSError as e:
            raise FormatError(f"cannot open {path}: {e.strerror}") from None

    def read(self, n: int = -1) -> bytes:
        try:
            return self._f.read(n)
        except (OSError, EOFError, zlib.error) as e:
            raise FormatError(f"{self.path}: corrupt gzip file ({e})") from None

    def close(self) -> None:
        self._f.close()


def iter_alignment_file(path: str) -> Iterator[Tuple[str, np.ndarray]]:
    """(utterance, transition-ids) from one ``ali.N.gz`` (or an uncompressed archive)."""
    if path.endswith(".gz"):
        f = _CheckedGzip(path)
    else:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise FormatError(f"cannot open {path}: {e.strerror}") from None
    try:
        yield from iter_int_vector_stream(f, path)
    finally:
        f.close()


def iter_alignment_dir(ali_dir: str) -> Iterator[Tuple[str, str, np.ndarray]]:
    """(file, utterance, transition-ids) over all jobs of an alignment dir, job by job;
    an utterance in two jobs is an error."""
    seen = set()
    for path in alignment_files(ali_dir):
        for utt, ali in iter_alignment_file(path):
            if utt in seen:
                raise FormatError(f"{path}: utterance {utt} is aligned twice in {ali_dir}")
            seen.add(utt)
            yield path, utt, ali
