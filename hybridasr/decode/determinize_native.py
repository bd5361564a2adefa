"""Pruned lattice determinization, the toolkit's one determinizer: C++
(``native/lattice_determinize.cc``) on the raw lattices of the toolkit's C++ search, as arrays
from end to end (only the determinized lattice becomes Python objects).

What Kaldi's ``DeterminizeLatticePhonePruned`` (``latgen-faster-mapped
--determinize-lattice=true``) computes: the state-level lattice pruned to the beam (Kaldi's
``PruneLattice``), determinized on words and phone boundaries together (Kaldi's phone-first
pass, given ``phone_boundaries``), then on words (Kaldi's ``LatticeDeterminizer`` in the
CompactLattice semiring: subsets of (state, residual transition-ids, residual weight)), each
pass best first within the beam of the best path. The result has one path per word sequence
within the beam: the best state-level path with those words (its weight and transition-ids).
Kaldi's ``--max-mem`` is ``max_states`` here: when it is hit the beam is narrowed (x0.75) and
the determinization redone, as Kaldi does. Without a C++ compiler there is no determinizer:
decoding is 1-best (``decode_faster_mapped.py``; see docs/decoding.md).
"""
from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

import numpy as np

from hybridasr.decode import native
from hybridasr.decode.lattice_faster import RawLattice
from hybridasr.errors import FormatError, HybridAsrError
from hybridasr.kaldi.lattice import INF, Arc, CompactLattice

log = logging.getLogger(__name__)

T = TypeVar("T")

_TOO_LARGE, _CYCLE = 3, 4  # hasr_det_run's codes (0: done)


class TooLarge(Exception):
    """A determinization passed its number of states."""


def phone_boundaries(tm) -> np.ndarray:
    """Per transition-id of a ``TransitionModel``: its phone where it leaves the phone's
    first HMM state (once in every instance of a phone, as Kaldi's
    DeterminizeLatticeInsertPhones marks them), else 0."""
    marks = np.where((tm.tid2hmm_state == 0) & ~np.asarray(tm.tid_is_self_loop, bool),
                     tm.tid2phone, 0)
    return np.maximum(marks, 0).astype(np.int64)


def with_narrowing_beam(attempt: Callable[[float], T], beam: float, max_states: int) -> T:
    """``attempt(beam)``, the beam narrowed by a quarter each time the lattice passes
    ``max_states`` states (TooLarge), as Kaldi's DeterminizeLatticePruned does past
    ``--max-mem``."""
    while True:
        try:
            return attempt(beam)
        except TooLarge:
            if beam < 1e-3:
                raise HybridAsrError(
                    f"lattice determinization: not even the best path fits in {max_states} "
                    f"states (raise --max-mem)")
            beam *= 0.75
            log.warning("lattice determinization reached %d states: beam narrowed to %.3f",
                        max_states, beam)


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
    """Pruned to ``prune_beam``, then determinized on the labels within ``beam`` (``beam`` <
    0: only pruned, states renumbered in topological order); TooLarge past ``max_states``
    states."""
    lib = native.load()
    if lib is None:
        raise HybridAsrError(f"lattice determinization needs the toolkit's C++ library, "
                             f"which cannot be built: {native.unavailable_reason()}")
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


def state_level(raw: RawLattice, pair_tid: np.ndarray, pair_word: np.ndarray,
                beam: float = INF) -> CompactLattice:
    """A raw search lattice (arcs labelled with the relabelled graph's pair ids) as a
    state-level CompactLattice, one transition-id (or none) and a word (or 0) per arc, pruned
    to ``beam`` (forward-backward, as Kaldi's PruneLattice) and connected."""
    lat = from_raw(raw, pair_word[raw.olabel], pair_tid[raw.olabel])
    return to_compact(determinize(lat, beam, -1.0, 0))


def determinize_raw(raw: RawLattice, pair_tid: np.ndarray, pair_word: np.ndarray,
                    beam: float, max_states: int,
                    phone_of_tid: Optional[np.ndarray] = None,
                    word_determinize: bool = True) -> CompactLattice:
    """The pruned, word-determinized CompactLattice of a raw search lattice (arcs labelled
    with the relabelled graph's pair ids): phones first when ``phone_of_tid``
    (``phone_boundaries``) is given, as Kaldi does (the same word sequences and best
    weights, found with a fraction of the work), else on words alone. Without
    ``word_determinize`` (Kaldi's ``--word-determinize=false``, needs ``phone_of_tid``) the
    lattice is determinized on (word, phone) sequences only: one path, its best alignment,
    for each sequence of phones, so that alternative pronunciations and optional silences
    stay (the lattices of training graphs that Kaldi's chain recipes read)."""
    tids = pair_tid[raw.olabel]
    words = pair_word[raw.olabel]
    if not word_determinize and phone_of_tid is None:
        raise ValueError("word_determinize=False needs phone_of_tid (phone_boundaries)")
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
        if not word_determinize:
            return to_compact(phones)
        return to_compact(determinize(phones, INF, b, max_states))

    return with_narrowing_beam(attempt, beam, max_states)
