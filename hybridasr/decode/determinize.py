"""Pruned lattice determinization: a decoder's state-level lattice (arcs with one transition-id
and maybe a word, weights (graph, acoustic)) to a ``CompactLattice`` with one path per word
sequence, the best of the state-level paths with those words (its weight and its
transition-ids), keeping only word sequences within ``beam`` of the best path.

This is what Kaldi's ``DeterminizeLatticePhonePruned`` (``latgen-faster-mapped
--determinize-lattice=true``) computes, done here as: forward-backward pruning of the input to
``beam`` (Kaldi's ``PruneLattice``), then, given the transition model's phone boundaries
(``phone_boundaries``), determinization on words and phones together, as Kaldi does first,
and last word-level determinization in the CompactLattice semiring (Kaldi's
``LatticeDeterminizer``: subsets of (state, residual transition-ids, residual weight),
closure over word-less arcs, a common weight and the common prefix of the transition-ids
moved onto each output arc). Kaldi also prunes during determinization; that only saves work:
its word sequences and their best weights are the ones here (alignments can differ only
between paths of exactly equal cost). Kaldi's ``--max-mem`` is ``max_states`` here: when it
is hit the beam is narrowed (x0.75) and the determinization redone, as Kaldi does.
"""
from __future__ import annotations

import heapq
import logging
from typing import Callable, Dict, List, Tuple, TypeVar

import numpy as np

from hybridasr.errors import HybridAsrError
from hybridasr.kaldi.lattice import INF, Arc, CompactLattice

log = logging.getLogger(__name__)

T = TypeVar("T")

_QUANT = 1.0 / 1024  # Kaldi's determinization delta: residual weights this close are equal


class TooLarge(Exception):
    """A determinization passed its number of states."""


def prune_lattice(lat: CompactLattice, beam: float) -> CompactLattice:
    """Arcs and finals on some path within ``beam`` of the best (total cost graph +
    acoustic), unreachable and dead states dropped (renumbered in topological order)."""
    order = lat.topological_order()
    alpha = {lat.start: 0.0} if order else {}
    for s in order:
        a0 = alpha.get(s)
        if a0 is None:
            continue
        for a in lat.arcs[s]:
            c = a0 + a.graph + a.acoustic
            if c < alpha.get(a.next, INF):
                alpha[a.next] = c
    beta: Dict[int, float] = {}
    for s in reversed(order):
        b = sum(lat.finals[s][:2]) if s in lat.finals else INF
        for a in lat.arcs[s]:
            b = min(b, a.graph + a.acoustic + beta.get(a.next, INF))
        beta[s] = b
    out = CompactLattice()
    if not order or beta[lat.start] == INF:
        return out
    limit = beta[lat.start] + beam
    keep = [s for s in order if s in alpha and alpha[s] + beta[s] <= limit]
    new_id = {s: i for i, s in enumerate(keep)}
    out.arcs = [[] for _ in keep]
    out.start = 0
    for s in keep:
        for a in lat.arcs[s]:
            if a.next in new_id and alpha[s] + a.graph + a.acoustic + beta[a.next] <= limit:
                out.arcs[new_id[s]].append(Arc(a.word, a.graph, a.acoustic, a.tids,
                                               new_id[a.next]))
        if s in lat.finals and alpha[s] + sum(lat.finals[s][:2]) <= limit:
            out.finals[new_id[s]] = lat.finals[s]
    return out


def _better(g1, a1, g2, a2) -> bool:
    """Kaldi's LatticeWeight order: lower total cost, then lower graph cost."""
    t1, t2 = g1 + a1, g2 + a2
    return t1 < t2 or (t1 == t2 and g1 < g2)


def _materialize(cell) -> Tuple[int, ...]:
    """A transition-id string kept as a chain of (tid, rest) cells."""
    out = []
    while cell is not None:
        out.append(cell[0])
        cell = cell[1]
    return tuple(out)


class _Closures:
    """Word-less closures, each state's computed once: for a state ``s``, every state with a
    word arc or a final weight (Kaldi's ConvertToMinimal) that ``s`` reaches through
    word-less arcs, with the best (graph, acoustic, transition-ids) of the way. One pass over
    the lattice from the last state back (states are numbered in topological order:
    ``prune_lattice``) merges each arc's successor's closure into its source's, the strings
    shared as chains of (tid, rest) cells. The closure of a determinization subset is the
    best over its elements of these (a shortest path from several sources splits by source),
    so the lattice between two words is walked once, not once per subset that holds it."""

    def __init__(self, lat: CompactLattice):
        n = lat.num_states
        useful = [bool(s in lat.finals or any(a.word for a in arcs))
                  for s, arcs in enumerate(lat.arcs)]
        memo: List[Dict[int, Tuple]] = [None] * n  # type: ignore[list-item]
        for s in range(n - 1, -1, -1):
            m: Dict[int, Tuple] = {s: (0.0, 0.0, None)} if useful[s] else {}
            for arc in lat.arcs[s]:
                if arc.word:
                    continue
                ag, aa, tids = arc.graph, arc.acoustic, arc.tids
                for u, (g, a, cell) in memo[arc.next].items():
                    g2, a2 = ag + g, aa + a
                    old = m.get(u)
                    if old is None or _better(g2, a2, old[0], old[1]):
                        for tid in reversed(tids):
                            cell = (tid, cell)
                        m[u] = (g2, a2, cell)
            memo[s] = m
        self.memo = memo

    def of_subset(self, elems: Dict[int, Tuple]) -> Dict[int, Tuple]:
        """{state: (graph, acoustic, tids)} elements -> their closure, the same form."""
        best: Dict[int, Tuple] = {}
        memo = self.memo
        for s, (g0, a0, t0) in elems.items():
            for u, (g, a, cell) in memo[s].items():
                g2, a2 = g0 + g, a0 + a
                old = best.get(u)
                if old is None or _better(g2, a2, old[0], old[1]):
                    best[u] = (g2, a2, t0, cell)
        return {u: (g, a, t0 + _materialize(cell)) for u, (g, a, t0, cell) in best.items()}


def _common_prefix(strings: List[Tuple[int, ...]]) -> int:
    first = min(strings, key=len)
    n = len(first)
    for s in strings:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def _backward_costs(lat: CompactLattice) -> List[float]:
    """Each state's best total cost (graph + acoustic) to a final state; states are numbered
    in topological order (``prune_lattice``)."""
    beta = [INF] * lat.num_states
    for s in range(lat.num_states - 1, -1, -1):
        b = sum(lat.finals[s][:2]) if s in lat.finals else INF
        for arc in lat.arcs[s]:
            c = arc.graph + arc.acoustic + beta[arc.next]
            if c < b:
                b = c
        beta[s] = b
    return beta


def _determinize(lat: CompactLattice, max_states: int, beam: float = INF) -> CompactLattice:
    """Word-level determinization of ``lat`` (states in topological order). With a ``beam``,
    pruned as Kaldi's DeterminizeLatticePruned: output states are expanded best first (their
    cost so far plus the best completion of their subset, from the input's backward costs)
    and one whose best path through it is more than ``beam`` worse than the best path is not
    made, so word sequences far outside the beam, which an arc-pruned lattice still combines,
    do not multiply the subsets."""
    out = CompactLattice()
    if lat.start < 0:
        return out
    subsets: Dict[Tuple, int] = {}
    elems_of: List[Dict[int, Tuple]] = []
    forward: List[float] = []  # best cost from the output's start found so far
    rest: List[float] = []  # best completion of each subset in the input
    beta = _backward_costs(lat)
    limit = beta[lat.start] + beam
    heap: List[Tuple[float, int]] = []

    def reach(elems: Dict[int, Tuple], cost: float) -> int:
        """The output state of a subset reached at ``cost``; -1 if it lies outside the
        beam."""
        key = tuple(sorted((s, round(g / _QUANT), round(a / _QUANT), t)
                           for s, (g, a, t) in elems.items()))
        sid = subsets.get(key)
        completion = (min(g + a + beta[s] for s, (g, a, _) in elems.items()) if sid is None
                      else rest[sid])
        if cost + completion > limit:
            return -1
        if sid is None:
            if len(subsets) >= max_states:
                raise TooLarge
            sid = subsets[key] = out.add_state()
            elems_of.append(elems)
            forward.append(cost)
            rest.append(completion)
            heapq.heappush(heap, (cost + completion, sid))
        elif cost < forward[sid]:  # a better way in, found before it was expanded
            forward[sid] = cost
            heapq.heappush(heap, (cost + completion, sid))
        return sid

    closures = _Closures(lat)
    word_arcs = [[(a.word, a.next, a.graph, a.acoustic, a.tids) for a in arcs if a.word]
                 for arcs in lat.arcs]
    finals = lat.finals
    out.start = reach(closures.of_subset({lat.start: (0.0, 0.0, ())}), 0.0)
    expanded = set()
    while heap:
        _, sid = heapq.heappop(heap)
        if sid in expanded:
            continue
        expanded.add(sid)
        elems, here = elems_of[sid], forward[sid]
        best_final = None
        by_word: Dict[int, Dict[int, Tuple]] = {}
        for s, (g, a, t) in elems.items():
            if s in finals:
                fg, fa, ft = finals[s]
                if best_final is None or _better(g + fg, a + fa, best_final[0], best_final[1]):
                    best_final = (g + fg, a + fa, t + ft)
            for word, nxt_state, ag, aa, tids in word_arcs[s]:
                nxt = by_word.get(word)
                if nxt is None:
                    nxt = by_word[word] = {}
                g2, a2 = g + ag, a + aa
                old = nxt.get(nxt_state)
                if old is None or _better(g2, a2, old[0], old[1]):
                    nxt[nxt_state] = (g2, a2, t + tids)
        if best_final is not None:
            out.finals[sid] = best_final
        for word in sorted(by_word):
            nxt = closures.of_subset(by_word[word])
            if not nxt:
                continue
            g0, a0, _ = min(nxt.values(), key=lambda e: (e[0] + e[1], e[0]))
            n = _common_prefix([e[2] for e in nxt.values()])
            prefix = next(iter(nxt.values()))[2][:n]
            residual = {s: (g - g0, a - a0, t[n:]) for s, (g, a, t) in nxt.items()}
            dest = reach(residual, here + g0 + a0)
            if dest >= 0:
                out.arcs[sid].append(Arc(word, g0, a0, prefix, dest))
    return out


def _relabel(lat: CompactLattice, labels) -> CompactLattice:
    """The lattice with each arc's word replaced by ``labels(word, tids)`` (0: none)."""
    out = CompactLattice(lat.start, finals=lat.finals)
    out.arcs = [[Arc(labels(a.word, a.tids), a.graph, a.acoustic, a.tids, a.next) for a in arcs]
                for arcs in lat.arcs]
    return out


def phone_boundaries(tm) -> np.ndarray:
    """Per transition-id of a ``TransitionModel``: its phone where it leaves the phone's
    first HMM state (once in every instance of a phone, as Kaldi's
    DeterminizeLatticeInsertPhones marks them), else 0."""
    marks = np.where((tm.tid2hmm_state == 0) & ~np.asarray(tm.tid_is_self_loop, bool),
                     tm.tid2phone, 0)
    return np.maximum(marks, 0).astype(np.int64)


def _phone_pass(lat: CompactLattice, beam: float, max_states: int,
                phone_of_tid) -> CompactLattice:
    """Determinization on words and phone boundaries together (Kaldi's phone-first
    DeterminizeLatticePhonePruned): word-less closures stop at the next phone, so subsets stay
    small, and the lattice the word pass gets is far smaller than the state-level one. It
    keeps the best path of every (word, phone) sequence, so of every word sequence too."""
    pairs: Dict[Tuple[int, int], int] = {}
    marks = phone_of_tid.tolist()
    n = len(marks)

    def label(word: int, tids: Tuple[int, ...]) -> int:
        phone = max((marks[t] for t in tids if t < n), default=0)
        if not word and not phone:
            return 0
        return pairs.setdefault((word, phone), len(pairs) + 1)

    det = _determinize(prune_lattice(_relabel(lat, label), beam), max_states, beam)
    words = [0] * (len(pairs) + 1)
    for (word, _), i in pairs.items():
        words[i] = word
    return _relabel(det, lambda i, _: words[i])


def determinize_lattice_pruned(lat: CompactLattice, beam: float, max_states: int = 100000,
                               phone_of_tid=None) -> CompactLattice:
    """The pruned, word-determinized CompactLattice of a state-level lattice;
    ``phone_of_tid`` (``phone_boundaries``) determinizes on phones first, as Kaldi does: the
    same word sequences and best weights, found with a fraction of the work."""
    def attempt(beam: float) -> CompactLattice:
        if phone_of_tid is not None:
            phones = _phone_pass(lat, beam, max_states, phone_of_tid)
            return _determinize(prune_lattice(phones, INF), max_states, beam)
        return _determinize(prune_lattice(lat, beam), max_states, beam)

    return with_narrowing_beam(attempt, beam, max_states)


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
