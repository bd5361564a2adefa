"""The toolkit's lattice search (``native/lattice_faster.cc``, the algorithm of Kaldi's
``LatticeFasterDecoder``: beam, ``--max-active``/``--min-active``, ``--lattice-beam`` pruning
every ``--prune-interval`` frames) on a graph in OpenFst's const layout, through ctypes."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from hybridasr.decode import native
from hybridasr.errors import FormatError
from hybridasr.kaldi.fst import ConstFstArrays


@dataclass
class RawLattice:
    """The state-level lattice of one utterance: state 0 is the start; arcs ``src -> dst``
    with the graph's input label (0: epsilon) and output label, graph and scaled acoustic
    cost; ``final`` per state (inf: not final)."""
    src: np.ndarray
    dst: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    graph: np.ndarray
    acoustic: np.ndarray
    final: np.ndarray
    reached_final: bool


def available() -> bool:
    return native.load() is not None


class LatticeFasterSearch:
    def __init__(self, graph: ConstFstArrays, beam: float, max_active: int, min_active: int,
                 lattice_beam: float, prune_interval: int, beam_delta: float,
                 prune_scale: float = 0.1):
        lib = native.load()
        if lib is None:
            raise RuntimeError("the C++ lattice decoder could not be built (see the log)")
        self._lib = lib
        self._graph = graph  # the decoder reads these arrays: keep them alive
        self._states = np.ascontiguousarray(graph.states)
        self._arcs = np.ascontiguousarray(graph.arcs)
        self.start = int(graph.start)
        self._handle = lib.hasr_lf_new(
            self._states.ctypes.data, self._arcs.ctypes.data, len(self._states), beam,
            int(min(max_active, 2 ** 31 - 1)), int(min_active), lattice_beam,
            int(prune_interval), beam_delta, prune_scale)

    def close(self) -> None:
        if getattr(self, "_handle", None):
            self._lib.hasr_lf_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def search(self, scaled: np.ndarray, utt: str = "") -> RawLattice | None:
        """``scaled``: [T, P] float32 scaled log-likelihoods (input label k reads column
        k - 1). None when no path survived."""
        m = np.ascontiguousarray(scaled, dtype=np.float32)
        ns, na, fin = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int32()
        rc = self._lib.hasr_lf_decode(self._handle, self.start, m.ctypes.data, m.shape[0],
                                      m.shape[1], ctypes.byref(ns), ctypes.byref(na),
                                      ctypes.byref(fin))
        if rc == 2:
            raise FormatError(f"{utt}: the graph has an input label beyond the {m.shape[1]} "
                              f"columns of the log-likelihoods")
        if rc != 0:
            return None
        n, a = ns.value, na.value
        out = RawLattice(*(np.empty(a, dtype=np.int32) for _ in range(4)),
                         np.empty(a, dtype=np.float32), np.empty(a, dtype=np.float32),
                         np.empty(n, dtype=np.float32), bool(fin.value))
        self._lib.hasr_lf_get(self._handle, *(x.ctypes.data for x in (
            out.src, out.dst, out.ilabel, out.olabel, out.graph, out.acoustic, out.final)))
        return out
