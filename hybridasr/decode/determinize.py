"""Pruned lattice determinization: a decoder's state-level lattice (arcs with one transition-id
and maybe a word, weights (graph, acoustic)) to a ``CompactLattice`` with one path per word
sequence, the best of the state-level paths with those words (its weight and its
transition-ids), keeping only word sequences within ``beam`` of the best path.

This is what Kaldi's ``DeterminizeLatticePhonePruned`` (``latgen-faster-mapped
--determinize-lattice=true``) computes, done here as: forward-backward pruning of the input to
``beam`` (Kaldi's ``PruneLattice``), then word-level determinization in the CompactLattice
semiring (Kaldi's ``LatticeDeterminizer``: subsets of (state, residual transition-ids,
residual weight), epsilon closure over word-less arcs, a common weight and the common prefix
of the transition-ids moved onto each output arc). Kaldi prunes during determinization and
goes through phones first; both only save work: its word sequences and their best weights
are the ones here (alignments can differ only between paths of exactly equal cost). Kaldi's
``--max-mem`` is ``max_states`` here: when it is hit the beam is narrowed (x0.75) and the
determinization redone, as Kaldi does.
"""
from __future__ import annotations

import heapq
import logging
from typing import Dict, List, Tuple

from hybridasr.kaldi.lattice import INF, Arc, CompactLattice

log = logging.getLogger(__name__)

_QUANT = 1.0 / 1024  # Kaldi's determinization delta: residual weights this close are equal


class _TooLarge(Exception):
    pass


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


def _closure(lat: CompactLattice, elems: Dict[int, Tuple]) -> Dict[int, Tuple]:
    """Follows word-less arcs from each element (state -> (graph, acoustic, tids)), keeping
    the best element per state. States are numbered in topological order (``prune_lattice``),
    so taking them smallest first settles each before it is followed."""
    heap = list(elems)
    heapq.heapify(heap)
    seen = set()
    while heap:
        s = heapq.heappop(heap)
        if s in seen:
            continue
        seen.add(s)
        g, a, t = elems[s]
        for arc in lat.arcs[s]:
            if arc.word:
                continue
            g2, a2 = g + arc.graph, a + arc.acoustic
            old = elems.get(arc.next)
            if old is None or _better(g2, a2, old[0], old[1]):
                elems[arc.next] = (g2, a2, t + arc.tids)
                heapq.heappush(heap, arc.next)
    return elems


def _common_prefix(strings: List[Tuple[int, ...]]) -> int:
    first = min(strings, key=len)
    n = len(first)
    for s in strings:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def _determinize(lat: CompactLattice, max_states: int) -> CompactLattice:
    out = CompactLattice()
    if lat.start < 0:
        return out
    subsets: Dict[Tuple, int] = {}
    queue: List[Dict[int, Tuple]] = []

    def state_of(elems: Dict[int, Tuple]) -> int:
        key = tuple(sorted((s, round(g / _QUANT), round(a / _QUANT), t)
                           for s, (g, a, t) in elems.items()))
        sid = subsets.get(key)
        if sid is None:
            if len(subsets) >= max_states:
                raise _TooLarge
            sid = subsets[key] = out.add_state()
            queue.append(elems)
        return sid

    useful = [bool(s in lat.finals or any(a.word for a in arcs))
              for s, arcs in enumerate(lat.arcs)]

    def minimal(elems: Dict[int, Tuple]) -> Dict[int, Tuple]:
        """Only states with a word arc or a final weight (Kaldi's ConvertToMinimal): the
        transition-ids up to them are common to the subset and move onto the arc."""
        return {s: e for s, e in elems.items() if useful[s]}

    out.start = state_of(minimal(_closure(lat, {lat.start: (0.0, 0.0, ())})))
    done = 0
    while done < len(queue):
        sid, elems = done, queue[done]
        done += 1
        best_final = None
        by_word: Dict[int, Dict[int, Tuple]] = {}
        for s, (g, a, t) in elems.items():
            if s in lat.finals:
                fg, fa, ft = lat.finals[s]
                if best_final is None or _better(g + fg, a + fa, best_final[0], best_final[1]):
                    best_final = (g + fg, a + fa, t + ft)
            for arc in lat.arcs[s]:
                if not arc.word:
                    continue
                nxt = by_word.setdefault(arc.word, {})
                g2, a2 = g + arc.graph, a + arc.acoustic
                old = nxt.get(arc.next)
                if old is None or _better(g2, a2, old[0], old[1]):
                    nxt[arc.next] = (g2, a2, t + arc.tids)
        if best_final is not None:
            out.finals[sid] = best_final
        for word in sorted(by_word):
            nxt = minimal(_closure(lat, by_word[word]))
            if not nxt:
                continue
            g0, a0, _ = min(nxt.values(), key=lambda e: (e[0] + e[1], e[0]))
            n = _common_prefix([e[2] for e in nxt.values()])
            prefix = next(iter(nxt.values()))[2][:n]
            residual = {s: (g - g0, a - a0, t[n:]) for s, (g, a, t) in nxt.items()}
            out.arcs[sid].append(Arc(word, g0, a0, prefix, state_of(residual)))
    return out


def determinize_lattice_pruned(lat: CompactLattice, beam: float,
                               max_states: int = 100000) -> CompactLattice:
    """The pruned, word-determinized CompactLattice of a state-level lattice."""
    while True:
        try:
            return _determinize(prune_lattice(lat, beam), max_states)
        except _TooLarge:
            beam *= 0.75
            log.warning("lattice determinization reached %d states: beam narrowed to %.3f",
                        max_states, beam)
