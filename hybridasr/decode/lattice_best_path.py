"""Best paths of Kaldi lattices: what ``lattice-scale --lm-scale --acoustic-scale |
lattice-add-penalty | lattice-best-path`` give, for many weights in one pass over the lattice
(``score.sh``'s LM-weight x word-insertion-penalty sweep)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from hybridasr.kaldi.lattice import INF, CompactLattice


@dataclass
class BestPath:
    words: List[int]
    tids: List[int]
    graph_cost: float
    acoustic_cost: float


def best_paths(lat: CompactLattice, lm_scales: Sequence[float], acoustic_scales: Sequence[float],
               penalties: Sequence[float]) -> List[Optional[BestPath]]:
    """The best path under each (lm scale, acoustic scale, word insertion penalty) at once:
    ``lattice-scale --lm-scale --acoustic-scale | lattice-add-penalty | lattice-best-path``.
    Costs returned are those of the unscaled lattice. None where no final state is reached."""
    lm = np.asarray(lm_scales, dtype=np.float64)
    ac = np.asarray(acoustic_scales, dtype=np.float64)
    wip = np.asarray(penalties, dtype=np.float64)
    k = len(lm)
    order = lat.topological_order()
    if not order:
        return [None] * k
    cost = {lat.start: np.zeros(k)}
    back: Dict[int, list] = {lat.start: [None] * k}  # per weight: (prev state, arc) or None
    for s in order:
        cs = cost.get(s)
        if cs is None:
            continue
        for a in lat.arcs[s]:
            c = cs + lm * a.graph + ac * a.acoustic + (wip if a.word else 0.0)
            old = cost.get(a.next)
            if old is None:
                cost[a.next] = c
                back[a.next] = [(s, a)] * k
                continue
            better = np.flatnonzero(c < old)
            if len(better):
                old[better] = c[better]
                b = back[a.next]
                for i in better.tolist():
                    b[i] = (s, a)
    best = np.full(k, INF)
    best_state = [-1] * k
    for s, (g, a, _) in lat.finals.items():
        if s not in cost:
            continue
        c = cost[s] + lm * g + ac * a
        for i in np.flatnonzero(c < best).tolist():
            best[i], best_state[i] = c[i], s
    out: List[Optional[BestPath]] = []
    for i in range(k):
        s = best_state[i]
        if s < 0:
            out.append(None)
            continue
        g, a, tids = lat.finals[s]
        words, strings, gc, acc = [], [tids], g, a
        while back[s][i] is not None:
            s, arc = back[s][i]
            if arc.word:
                words.append(arc.word)
            strings.append(arc.tids)
            gc += arc.graph
            acc += arc.acoustic
        words.reverse()
        strings.reverse()
        out.append(BestPath(words, [t for st in strings for t in st], gc, acc))
    return out


def best_path(lat: CompactLattice, lm_scale: float = 1.0, acoustic_scale: float = 1.0,
              word_ins_penalty: float = 0.0) -> Optional[BestPath]:
    return best_paths(lat, [lm_scale], [acoustic_scale], [word_ins_penalty])[0]
