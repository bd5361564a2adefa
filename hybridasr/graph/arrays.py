"""An FST as numpy arrays, for the graph steps kaldifst has no binding for (the H
transducer, HMM self-loops, Kaldi's push-special, remove-eps-local, rmsymbols).

``FstArrays`` holds a start state, final costs (``inf``: not final) and the arcs grouped by
source state in order (``src`` non-decreasing; within a state, arc order as in the FST).
It comes from and goes to kaldifst through the ``const`` layout (``hybridasr.kaldi.fst``),
so no per-arc Python runs on the way."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.fst import const_fst_arrays, const_fst_bytes

__all__ = ["FstArrays"]

INF = np.float32(np.inf)


@dataclass
class FstArrays:
    start: int
    final: np.ndarray    # float32 [num_states]
    src: np.ndarray      # int64 [num_arcs], non-decreasing
    ilabel: np.ndarray   # int64
    olabel: np.ndarray   # int64
    weight: np.ndarray   # float32
    dst: np.ndarray      # int64

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.src)

    @classmethod
    def from_lists(cls, start: int, final, arcs: List[List[tuple]]) -> "FstArrays":
        """From per-state arc lists ``arcs[s] = [(ilabel, olabel, weight, next), ...]``."""
        counts = np.array([len(a) for a in arcs], dtype=np.int64)
        flat = [a for state in arcs for a in state]
        table = np.array(flat, dtype=np.float64).reshape(-1, 4)
        return cls(int(start), np.asarray(final, dtype=np.float32),
                   np.repeat(np.arange(len(arcs)), counts), table[:, 0].astype(np.int64),
                   table[:, 1].astype(np.int64), table[:, 2].astype(np.float32),
                   table[:, 3].astype(np.int64))

    def to_lists(self) -> List[List[list]]:
        """Per-state arc lists ``[[ilabel, olabel, weight, next], ...]`` (Python floats)."""
        out: List[List[list]] = [[] for _ in range(self.num_states)]
        for s, i, o, w, d in zip(self.src.tolist(), self.ilabel.tolist(), self.olabel.tolist(),
                                 self.weight.tolist(), self.dst.tolist()):
            out[s].append([i, o, w, d])
        return out

    @classmethod
    def from_fst(cls, fst, path: Optional[str] = None) -> "FstArrays":
        """From a kaldifst FST (``path``: the const file it was read from, if any)."""
        c = const_fst_arrays(fst, path)
        narcs = c.states[:, 2].astype(np.int64)
        arcs = c.arcs
        return cls(int(c.start), c.states[:, 0].copy().view(np.float32),
                   np.repeat(np.arange(len(narcs)), narcs), arcs[:, 0].astype(np.int64),
                   arcs[:, 1].astype(np.int64), arcs[:, 2].copy().view(np.float32),
                   arcs[:, 3].astype(np.int64))

    def const_bytes(self) -> bytes:
        first = np.zeros(self.num_states + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=self.num_states), out=first[1:])
        return const_fst_bytes(self.start, self.final, first, self.ilabel, self.olabel,
                               self.weight, self.dst)

    def to_fst(self, vector: bool = True):
        """A kaldifst ``StdVectorFst`` (or the ``StdFst`` const, with ``vector=False``)."""
        import kaldifst

        if self.num_arcs and np.any(np.diff(self.src) < 0):
            raise ValueError("FstArrays: arcs are not grouped by source state")
        with tempfile.TemporaryDirectory(prefix="hybridasr-fst-") as d:
            tmp = os.path.join(d, "a.fst")
            with open(tmp, "wb") as f:
                f.write(self.const_bytes())
            fst = kaldifst.StdFst.read(tmp)
        if fst is None:
            raise FormatError("kaldifst could not read an FST made from arrays")
        return kaldifst.StdVectorFst(fst) if vector else fst

    def write_const(self, path: str) -> None:
        """Writes the FST as an OpenFst ``const`` file (Kaldi's ``HCLG.fst``), atomically."""
        from hybridasr.utils.atomic import atomic_open

        with atomic_open(path, "wb") as f:
            f.write(self.const_bytes())
