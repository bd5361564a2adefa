"""Reading the alignments of a Kaldi alignment dir (``exp/tri3_ali``: ``ali.{1..nj}.gz``,
``num_jobs``, ``final.mdl``), one job after the other, never all in memory at once.

The gzipped archives are decompressed in-process (a corrupt or truncated gzip raises
FormatError naming the file); each holds a text or binary int32-vector archive.
"""
from __future__ import annotations

import gzip
import os
import re
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


def alignment_files(ali_dir: str, prefix: str = "ali") -> List[str]:
    """``ali.1.gz`` .. ``ali.<num_jobs>.gz`` (``prefix`` ``lat``: a lattice dir's
    ``lat.*.gz``), as Kaldi's scripts read them. Each must exist, and the dir may hold no
    other ``<prefix>.<n>.gz``: Kaldi would leave those out silently (a ``num_jobs`` that
    disagrees with the files drops data), so that is an error naming both."""
    nj = num_jobs(ali_dir)
    files = []
    for j in range(1, nj + 1):
        path = os.path.join(ali_dir, f"{prefix}.{j}.gz")
        if not os.path.isfile(path):
            raise FormatError(f"{ali_dir}: num_jobs says {nj} but {path} does not exist")
        files.append(path)
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.gz")
    try:
        present = sorted(int(m.group(1)) for m in map(pattern.fullmatch, os.listdir(ali_dir))
                         if m)
    except OSError:
        present = []
    extra = [n for n in present if not 1 <= n <= nj]
    if extra:
        names = ", ".join(f"{prefix}.{n}.gz" for n in extra[:5]) + \
            (", ..." if len(extra) > 5 else "")
        raise FormatError(
            f"{os.path.join(ali_dir, 'num_jobs')} says {nj}, but {ali_dir} also holds {names} "
            f"({len(present)} {prefix}.*.gz files in all): Kaldi's scripts read only "
            f"{prefix}.1..{nj}.gz and would leave the others out: if all are of one run, write "
            f"{max(present)} into num_jobs, else remove the files of the older run")
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
