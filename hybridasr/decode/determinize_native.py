"""Pruned lattice determinization in C++ (``native/lattice_determinize.cc``, the twin of
``hybridasr.decode.determinize``: the same passes, phones first then words, the same order of
weights and residual strings) for the raw lattices of the toolkit's C++ search, as arrays
from end to end: only the determinized lattice becomes Python objects."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hybridasr.decode import native
from hybridasr.decode.determinize import TooLarge, with_narrowing_beam
from hybridasr.decode.lattice_faster import RawLattice
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import INF, Arc, CompactLattice

_TOO_LARGE, _CYCLE = 3, 4  # hasr_det_run's codes (0: done)


@dataclass
class ArrayLattice:
    """Arcs ``src -> dst`` with a label, costs and a string ``tids[str_off:str_off+str_len]``;
    per state a final cost (inf: not final) and a final string the same way."""
    start: int
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray
    graph: np.ndarray
    acoustic: np.ndarray
    str_off: np.ndarray
    str_len: np.ndarray
    final_graph: np.ndarray
    final_acoustic: np.ndarray
    final_off: np.ndarray
    final_len: np.ndarray
    tids: np.ndarray

    @property
    def num_states(self) -> int:
        return len(self.final_graph)


def from_raw(raw: RawLattice, labels: np.ndarray, tids: np.ndarray) -> ArrayLattice:
    """A search's raw lattice: one transition-id (or none: 0) per arc."""
    n = len(raw.final)
    has = tids > 0
    str_len = has.astype(np.int32)
    str_off = (np.cumsum(str_len) - str_len).astype(np.int64)
    return ArrayLattice(0, raw.src.astype(np.int32), raw.dst.astype(np.int32),
                        labels.astype(np.int32), raw.graph.astype(np.float64),
                        raw.acoustic.astype(np.float64), str_off, str_len,
                        raw.final.astype(np.float64), np.zeros(n), np.zeros(n, np.int64),
                        np.zeros(n, np.int32), tids[has].astype(np.int64))


def determinize(lat: ArrayLattice, prune_beam: float, beam: float,
                max_states: int) -> ArrayLattice:
    """Pruned to ``prune_beam``, then determinized on the labels within ``beam``; TooLarge
    past ``max_states`` states."""
    lib = native.load()
    if lib is None:
        raise RuntimeError("the toolkit's C++ library could not be built (see the log)")
    arrays = [np.ascontiguousarray(x) for x in (
        lat.src, lat.dst, lat.label, lat.graph, lat.acoustic, lat.str_off, lat.str_len,
        lat.final_graph, lat.final_acoustic, lat.final_off, lat.final_len, lat.tids)]
    handle = ctypes.c_void_p()
    rc = lib.hasr_det_run(lat.num_states, lat.start, len(lat.src),
                          *(x.ctypes.data for x in arrays),
                          min(prune_beam, 1e30), min(beam, 1e30), int(max_states),
                          ctypes.byref(handle))
    try:
        if rc == _TOO_LARGE:
            raise TooLarge
        if rc == _CYCLE:
            raise FormatError("the lattice has a cycle (not a decoder's lattice)")
        ns, start, na, nt = (ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int64(),
                             ctypes.c_int64())
        lib.hasr_det_sizes(handle, ctypes.byref(ns), ctypes.byref(start), ctypes.byref(na),
                           ctypes.byref(nt))
        n, a = ns.value, na.value
        out = ArrayLattice(start.value, np.empty(a, np.int32), np.empty(a, np.int32),
                           np.empty(a, np.int32), np.empty(a), np.empty(a),
                           np.empty(a, np.int64), np.empty(a, np.int32), np.empty(n),
                           np.empty(n), np.empty(n, np.int64), np.empty(n, np.int32),
                           np.empty(nt.value, np.int64))
        lib.hasr_det_get(handle, *(x.ctypes.data for x in (
            out.src, out.dst, out.label, out.graph, out.acoustic, out.str_off, out.str_len,
            out.final_graph, out.final_acoustic, out.final_off, out.final_len, out.tids)))
        return out
    finally:
        lib.hasr_det_free(handle)


def to_compact(lat: ArrayLattice, words: Optional[np.ndarray] = None) -> CompactLattice:
    """The CompactLattice of ``lat``, labels mapped through ``words`` when given."""
    out = CompactLattice(lat.start, [[] for _ in range(lat.num_states)])
    if lat.start < 0:
        return CompactLattice()
    tids = lat.tids.tolist()
    labels = (words[lat.label] if words is not None else lat.label).tolist()
    for s, d, w, g, a, o, n in zip(lat.src.tolist(), lat.dst.tolist(), labels,
                                   lat.graph.tolist(), lat.acoustic.tolist(),
                                   lat.str_off.tolist(), lat.str_len.tolist()):
        out.arcs[s].append(Arc(w, g, a, tuple(tids[o:o + n]), d))
    for s in np.flatnonzero(lat.final_graph < INF).tolist():
        o, n = int(lat.final_off[s]), int(lat.final_len[s])
        out.finals[s] = (float(lat.final_graph[s]), float(lat.final_acoustic[s]),
                         tuple(tids[o:o + n]))
    return out


def determinize_raw(raw: RawLattice, pair_tid: np.ndarray, pair_word: np.ndarray,
                    beam: float, max_states: int,
                    phone_of_tid: Optional[np.ndarray] = None) -> CompactLattice:
    """``determinize.determinize_lattice_pruned`` of a raw search lattice (arcs labelled
    with the relabelled graph's pair ids): phones first when ``phone_of_tid`` is given."""
    tids = pair_tid[raw.olabel]
    words = pair_word[raw.olabel]
    if phone_of_tid is None:
        return with_narrowing_beam(
            lambda b: to_compact(determinize(from_raw(raw, words, tids), b, b, max_states)),
            beam, max_states)
    marks = np.asarray(phone_of_tid, dtype=np.int64)
    phone = np.where(tids < len(marks), marks[np.minimum(tids, len(marks) - 1)], 0)
    keys, labels = np.unique((words.astype(np.int64) << 32) | phone, return_inverse=True)
    if not len(keys) or keys[0] != 0:  # label 0 stays "no word, no phone"
        keys, labels = np.concatenate([[0], keys]), labels + 1
    by_phones = from_raw(raw, labels, tids)

    def attempt(b: float) -> CompactLattice:
        phones = determinize(by_phones, b, b, max_states)
        phones.label = (keys >> 32)[phones.label].astype(np.int32)
        return to_compact(determinize(phones, INF, b, max_states))

    return with_narrowing_beam(attempt, beam, max_states)
