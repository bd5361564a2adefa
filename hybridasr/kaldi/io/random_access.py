"""Random access by key over an scp, as Kaldi's ``RandomAccessTableReader`` on ``scp:``.

The scp is read once (key -> where); a value is read when asked for, from archives kept open
per process (``hybridasr.kaldi.io.open_files``), so a loader worker reading thousands of
utterances opens each ark once. Matrices are decoded with Kaldi's exact arithmetic
(``matrix_reader.read_matrix_at``), so training reads the same numbers as decoding and
Kaldi's binaries; entries that are not ``ark:offset`` (a row range, a pipe, a plain file) go
through ``matrix_reader.read_matrix_rx`` (row ranges Kaldi-exact too, pipes through kaldiio).
The object pickles without open files (each worker opens its own).
"""
from __future__ import annotations

import struct
from typing import Callable, Dict, Iterator, List

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.open_files import OpenFiles
from hybridasr.kaldi.io.streams import split_offset
from hybridasr.kaldi.io.table import iter_map_lines

class ScpTable:
    """Values of one kind (see :func:`matrices`, :func:`int_vectors`) by key."""

    def __init__(self, scp: str, read_at: Callable, read_other: Callable, what: str):
        self.scp, self.what = scp, what
        self._read_at, self._read_other = read_at, read_other
        self._archives: List[str] = []
        # compact at 100,000s of entries: one dict (key -> row) and three arrays
        self._row: Dict[str, int] = {}
        archive, offset, lineno = [], [], []
        self._other: Dict[int, str] = {}  # rows that are not ark:offset -> their rxfilename
        index: Dict[str, int] = {}
        for n, key, rx in iter_map_lines(scp):
            if key in self._row:
                raise FormatError(f"{scp}:{n}: duplicate key {key!r}")
            at = split_offset(rx)
            self._row[key] = len(lineno)
            lineno.append(n)
            if at is None:
                self._other[len(lineno) - 1] = rx
                archive.append(-1)
                offset.append(0)
            else:
                i = index.get(at[0])
                if i is None:
                    i = index[at[0]] = len(self._archives)
                    self._archives.append(at[0])
                archive.append(i)
                offset.append(at[1])
        self._archive = np.asarray(archive, dtype=np.int32)
        self._offset = np.asarray(offset, dtype=np.int64)
        self._lineno = np.asarray(lineno, dtype=np.int64)
        self._files = OpenFiles()

    def keys(self):
        return self._row.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, key) -> bool:
        return key in self._row

    def location(self, key: str) -> str:
        """Where ``key``'s value is: ``<ark>:<offset>`` or the scp entry (for messages)."""
        row = self._row[key]
        arch = int(self._archive[row])
        if arch >= 0:
            return f"{self._archives[arch]}:{int(self._offset[row])}"
        return self._other[row]

    def __getitem__(self, key: str):
        row = self._row[key]  # KeyError for an unknown key, as a dict
        arch = int(self._archive[row])
        try:
            if arch >= 0:
                return self._read_at(self._files, self._archives[arch], int(self._offset[row]),
                                     key)
            return self._read_other(self._files, self._other[row])
        except FormatError as e:
            raise FormatError(f"{self.scp}:{self._lineno[row]}: {key}: {e}") from None
        except (OSError, ValueError, struct.error, AssertionError, EOFError,
                RuntimeError) as e:  # kaldiio's readers raise all of these on bad input
            raise FormatError(f"{self.scp}:{self._lineno[row]}: cannot read {self.what} "
                              f"{key} at {self.location(key)}: "
                              f"{str(e) or type(e).__name__}") from None

    def items(self):
        for k in self._row:
            yield k, self[k]

    def close(self) -> None:
        self._files.close()

    def __enter__(self) -> "ScpTable":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _matrix_at(files: OpenFiles, path: str, offset: int, key: str) -> np.ndarray:
    from hybridasr.kaldi.io.matrix_reader import read_matrix_at

    return read_matrix_at(files.file(path), offset)


def _matrix_other(files: OpenFiles, rx: str) -> np.ndarray:
    from hybridasr.kaldi.io.matrix_reader import read_matrix_rx

    return read_matrix_rx(rx, files)


def _int_vector_at(files: OpenFiles, path: str, offset: int, key: str) -> np.ndarray:
    from hybridasr.kaldi.io.intvec import read_int_vector_at

    return read_int_vector_at(files.file(path), offset, path, key)


def _int_vector_other(files: OpenFiles, rx: str) -> np.ndarray:
    raise FormatError(f"expected '<ark>:<offset>' for an int32 vector, got {rx!r}")


def matrices(scp: str) -> ScpTable:
    """Float matrices (and vectors) of an scp: features, CMVN stats, log-likelihoods."""
    return ScpTable(scp, _matrix_at, _matrix_other, "matrix")


def int_vectors(scp: str) -> ScpTable:
    """Int32 vectors of an scp: alignments, pdf targets."""
    return ScpTable(scp, _int_vector_at, _int_vector_other, "int32 vector")
