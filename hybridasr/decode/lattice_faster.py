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


def _bind(lib) -> None:
    """The argument types of the incremental entry points (set once on the library)."""
    if getattr(lib, "_hasr_lf_online", False):
        return
    p, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
    lib.hasr_lf_init.restype = None
    lib.hasr_lf_init.argtypes = [p, i32]
    lib.hasr_lf_advance.restype = ctypes.c_int
    lib.hasr_lf_advance.argtypes = [p, p, i32, i32]
    lib.hasr_lf_num_frames.restype = i32
    lib.hasr_lf_num_frames.argtypes = [p]
    lib.hasr_lf_partial.restype = i64
    lib.hasr_lf_partial.argtypes = [p, p, i64, ctypes.c_int32]
    lib.hasr_lf_finish.restype = ctypes.c_int
    lib.hasr_lf_finish.argtypes = [p, ctypes.POINTER(i64), ctypes.POINTER(i64),
                                   ctypes.POINTER(ctypes.c_int32)]
    lib._hasr_lf_online = True


class LatticeFasterSearch:
    """One utterance at a time, whole (``search``) or incrementally: ``start``, ``advance``
    with more frames (``partial_best_olabels`` between), ``finish``."""

    def __init__(self, graph: ConstFstArrays, beam: float, max_active: int, min_active: int,
                 lattice_beam: float, prune_interval: int, beam_delta: float,
                 prune_scale: float = 0.1):
        lib = native.load()
        if lib is None:
            raise RuntimeError("the C++ lattice decoder could not be built (see the log)")
        _bind(lib)
        self._lib = lib
        self._graph = graph  # the decoder reads these arrays: keep them alive
        self._states = np.ascontiguousarray(graph.states)
        self._arcs = np.ascontiguousarray(graph.arcs)
        self.start_state = int(graph.start)
        self._failed = 0  # the code of a failed advance (1: no token survived; 2: bad label)
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

    def start(self) -> None:
        """Begins an utterance (Kaldi's InitDecoding)."""
        self._lib.hasr_lf_init(self._handle, self.start_state)
        self._failed = 0

    def advance(self, scaled: np.ndarray, utt: str = "") -> None:
        """Decodes more frames: ``scaled`` [n, P] float32 scaled log-likelihoods (n >= 0;
        input label k reads column k - 1). FormatError on an input label beyond the columns;
        once no token survives, later frames are ignored and ``finish`` gives None."""
        m = np.ascontiguousarray(scaled, dtype=np.float32)
        if m.ndim != 2:
            raise ValueError(f"{utt}: log-likelihoods must be [frames, columns], not {m.shape}")
        rc = self._lib.hasr_lf_advance(self._handle, m.ctypes.data, m.shape[0], m.shape[1])
        if rc == 2:
            self._failed = 2
            raise FormatError(f"{utt}: the graph has an input label beyond the {m.shape[1]} "
                              f"columns of the log-likelihoods")
        if rc == 1:
            self._failed = 1
        elif rc == 3:
            raise RuntimeError("LatticeFasterSearch.advance: no utterance begun (call start)")

    @property
    def num_frames_decoded(self) -> int:
        return int(self._lib.hasr_lf_num_frames(self._handle))

    def partial_best_olabels(self, use_final: bool = False) -> list[int]:
        """The graph's output labels (0s dropped) of the best path so far, ending at the best
        token of the last decoded frame, final weights not used (the best predecessors'
        chain); on ``LatticeDecoder``'s pdf graph they are (transition-id, word) pair ids.
        ``use_final``: ending at the token best with its final weight (where a final state
        was reached): the whole utterance's best path at the search's scale."""
        buf = np.empty(64, dtype=np.int32)
        flag = int(bool(use_final))
        n = self._lib.hasr_lf_partial(self._handle, buf.ctypes.data, len(buf), flag)
        if n > len(buf):
            buf = np.empty(n, dtype=np.int32)
            n = self._lib.hasr_lf_partial(self._handle, buf.ctypes.data, len(buf), flag)
        return [int(x) for x in buf[:n]]

    def finish(self, utt: str = "") -> RawLattice | None:
        """Final pruning (Kaldi's FinalizeDecoding) and the raw lattice; None when no path
        survived."""
        ns, na, fin = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int32()
        rc = self._lib.hasr_lf_finish(self._handle, ctypes.byref(ns), ctypes.byref(na),
                                      ctypes.byref(fin))
        if rc == 3:
            raise RuntimeError("LatticeFasterSearch.finish: no utterance begun (call start)")
        if rc != 0:
            return None
        n, a = ns.value, na.value
        out = RawLattice(*(np.empty(a, dtype=np.int32) for _ in range(4)),
                         np.empty(a, dtype=np.float32), np.empty(a, dtype=np.float32),
                         np.empty(n, dtype=np.float32), bool(fin.value))
        self._lib.hasr_lf_get(self._handle, *(x.ctypes.data for x in (
            out.src, out.dst, out.ilabel, out.olabel, out.graph, out.acoustic, out.final)))
        return out

    def search(self, scaled: np.ndarray, utt: str = "") -> RawLattice | None:
        """``scaled``: [T, P] float32 scaled log-likelihoods (input label k reads column
        k - 1). None when no path survived."""
        self.start()
        self.advance(scaled, utt)
        return self.finish(utt)
