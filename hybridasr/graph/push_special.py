"""Kaldi's ``fstpushspecial`` (``PushSpecial``, Hannemann and Povey, ICASSP 2013): reweights
an FST so that every state's outgoing probability mass (arcs plus final probability, seen as
an arc back to the start state) sums to the same value lambda, the top eigenvalue of the
transition matrix, found by power iteration ``v <- P v + 0.1 v``. The paths' weights do not
change (up to the constant that start and final absorb); this is what ``mkgraph.sh`` does to
LG so that later determinization and minimization see "stochastic" weights.

Written here on numpy because kaldifst has no binding for it."""
from __future__ import annotations

import logging

import numpy as np

from hybridasr.graph.arrays import INF, FstArrays

__all__ = ["push_special"]

log = logging.getLogger(__name__)

KDELTA = 1.0 / 1024  # Kaldi's fst::kDelta, fstpushspecial's --delta


def push_special(fst: FstArrays, delta: float = KDELTA, max_iter: int = 200) -> FstArrays:
    """The reweighted FST. Sums are taken in Kaldi's order and rounded as Kaldi rounds them
    (double sums of float ``expf`` terms, weights back to float), so the result is Kaldi's
    to the bit: HCLG's size depends on it (``minimize_encoded`` quantizes weights)."""
    from hybridasr.graph.h_transducer import expf

    n = fst.num_states
    if n == 0:
        return fst
    init = fst.start
    final = fst.final
    is_final = final != INF
    fin_states = np.flatnonzero(is_final)
    # Kaldi's pred_ lists: for s ascending, each arc of s into its target, then s's final
    # probability into the start state; visited target by target in that order
    target = np.concatenate([fst.dst, np.full(len(fin_states), init)])
    source = np.concatenate([fst.src, fin_states])
    made_at = np.concatenate([np.arange(fst.num_arcs) + np.searchsorted(fin_states, fst.src),
                              np.arange(len(fin_states)) +
                              np.searchsorted(fst.src, fin_states, side="right")])
    prob_arc = np.array([expf(-x) for x in fst.weight.tolist()], dtype=np.float64)
    prob_fin = np.array([expf(-x) for x in final[fin_states].tolist()], dtype=np.float64)
    prob = np.concatenate([prob_arc, prob_fin])
    order = np.lexsort((made_at, target))
    target, source, prob = target[order], source[order], prob[order]

    def error(occ):  # Kaldi's TestAccuracy: arcs of each state in order, then final
        sums = np.zeros(n)
        np.add.at(sums, fst.src, prob_arc * occ[fst.dst] / occ[fst.src])
        sums[fin_states] += prob_fin * occ[init] / occ[fin_states]
        return float(np.log(sums.max() / sums.min()))

    occ = np.full(n, 1.0 / np.sqrt(n))
    converged = False
    for it in range(max_iter):
        new = 0.1 * occ
        np.add.at(new, source, occ[target] * prob)
        lam = np.sqrt(np.cumsum(new * new)[-1])
        occ = new * (1.0 / lam)
        if it % 5 == 0 and it > 0 and error(occ) <= delta:
            converged = True
            break
    if not converged:
        log.warning("push-special: %d iterations without converging: the weights are "
                    "pushed inexactly", max_iter)
    with np.errstate(divide="ignore"):
        pot = -np.log(occ)
    if not np.all(np.isfinite(pot)):
        log.warning("push-special: %d states with zero or infinite potential",
                    int((~np.isfinite(pot)).sum()))
    weight = ((fst.weight.astype(np.float64) + pot[fst.dst]) - pot[fst.src]).astype(np.float32)
    shift = (pot[init] - pot).astype(np.float32)
    new_final = np.where(is_final, final + shift, INF).astype(np.float32)
    return FstArrays(fst.start, new_final, fst.src, fst.ilabel, fst.olabel, weight, fst.dst)
