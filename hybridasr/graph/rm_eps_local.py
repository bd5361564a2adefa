"""Kaldi's ``fstrmepslocal`` (``RemoveEpsLocalSpecial``): removes epsilon arcs only where
that does not add states or blow up the graph — an epsilon arc into a state with one arc in
and several out (pattern 1: the arcs out that can combine with it are copied onto its source
state) or into a state with one arc out (pattern 2) — and reweights so that the graph stays
stochastic in the log semiring. ``mkgraph.sh`` runs it on HCLGa after the disambiguation
transition-ids became epsilons. Arcs added to a state are visited too; states left
unreachable are removed (``connect``).

Written here because kaldifst has no binding for it."""
from __future__ import annotations

import math
from typing import List

import numpy as np

from hybridasr.graph.arrays import FstArrays

__all__ = ["rm_eps_local"]

INF = math.inf


def _log_plus(a: float, b: float) -> float:
    """Log-semiring sum of two float costs, -log(e^-a + e^-b), rounded as OpenFst's
    ``LogWeight`` ``Plus`` (float difference, double log1p/exp, float result)."""
    if a == INF:
        return b
    if b == INF:
        return a
    if a > b:
        a, b = b, a
    return _f32(a - math.log1p(math.exp(-_f32(b - a))))


class _Remover:
    def __init__(self, fst: FstArrays):
        self.arcs: List[List[list]] = fst.to_lists()
        self.final = [float(x) for x in fst.final.tolist()]
        self.start = fst.start
        self.dead = len(self.arcs)  # deleted arcs point here (never coaccessible)
        self.arcs.append([])
        self.final.append(INF)
        n = len(self.arcs)
        self.n_in = [0] * n
        self.n_out = [0] * n
        self.n_in[self.start] += 1
        for s, state in enumerate(self.arcs):
            if self.final[s] != INF:
                self.n_out[s] += 1
            for a in state:
                self.n_in[a[3]] += 1
                self.n_out[s] += 1

    @staticmethod
    def _combine(a, b):
        if (a[0] != 0 and b[0] != 0) or (a[1] != 0 and b[1] != 0):
            return None
        return [a[0] or b[0], a[1] or b[1], _f32(a[2] + b[2]), b[3]]

    def run(self) -> None:
        for s in range(len(self.arcs)):
            pos = 0
            while pos < len(self.arcs[s]):
                self._remove(s, pos)
                pos += 1

    def _remove(self, s: int, pos: int) -> None:
        arc = self.arcs[s][pos]
        nxt = arc[3]
        if nxt == self.dead or nxt == s:
            return
        if self.n_in[nxt] == 1 and self.n_out[nxt] > 1:
            self._pattern1(s, pos, arc)
        elif self.n_out[nxt] == 1:
            self._pattern2(s, pos, arc)

    def _reweight(self, s: int, pos: int, reweight: float) -> None:
        arc = self.arcs[s][pos]
        arc[2] = _f32(arc[2] + reweight)
        nxt = arc[3]
        for b in self.arcs[nxt]:
            if b[3] != self.dead:
                b[2] = _f32(b[2] - reweight)
        if self.final[nxt] != INF:
            self.final[nxt] = _f32(self.final[nxt] - reweight)

    def _pattern1(self, s: int, pos: int, arc) -> None:
        nxt = arc[3]
        removed = kept = INF
        to_add = []
        for b in self.arcs[nxt]:
            if b[3] == self.dead:
                continue
            c = self._combine(arc, b)
            if c is not None:
                removed = _log_plus(removed, b[2])
                self.n_out[nxt] -= 1
                self.n_in[b[3]] -= 1
                b[3] = self.dead
                to_add.append(c)
            else:
                kept = _log_plus(kept, b[2])
        fin = self.final[nxt]
        if fin != INF:
            if arc[0] == 0 and arc[1] == 0:
                removed = _log_plus(removed, fin)
                if self.final[s] == INF:
                    self.n_out[s] += 1
                self.final[s] = _f32(_min(self.final[s], arc[2] + fin))
                self.n_out[nxt] -= 1
                self.final[nxt] = INF
            else:
                kept = _log_plus(kept, fin)
        if removed != INF:
            if kept == INF:
                self.n_out[s] -= 1
                self.n_in[nxt] -= 1
                arc[3] = self.dead
            else:
                total = _log_plus(removed, kept)
                self._reweight(s, pos, _f32(kept - total))
        for c in to_add:
            self.n_out[s] += 1
            self.n_in[c[3]] += 1
            self.arcs[s].append(c)

    def _pattern2(self, s: int, pos: int, arc) -> None:
        nxt = arc[3]
        can_delete_next = self.n_in[nxt] == 1
        delete_arc = False
        fin = self.final[nxt]
        if fin != INF:
            if arc[0] == 0 and arc[1] == 0:
                if self.final[s] == INF:
                    self.n_out[s] += 1
                self.final[s] = _f32(_min(self.final[s], arc[2] + fin))
                delete_arc = True
                if can_delete_next:
                    self.n_out[nxt] -= 1
                    self.final[nxt] = INF
        else:
            b = next(b for b in self.arcs[nxt] if b[3] != self.dead)
            c = self._combine(arc, b)
            if c is not None:
                delete_arc = True
                if can_delete_next:
                    self.n_out[nxt] -= 1
                    self.n_in[b[3]] -= 1
                    b[3] = self.dead
                self.n_out[s] += 1
                self.n_in[c[3]] += 1
                self.arcs[s].append(c)
        if delete_arc:
            self.n_out[s] -= 1
            self.n_in[nxt] -= 1
            arc[3] = self.dead

    def result(self) -> FstArrays:
        """The FST with deleted arcs and states no longer on a path removed (OpenFst's
        ``Connect``, as Kaldi's RemoveEpsLocal ends)."""
        import kaldifst

        arcs = [[tuple(a) for a in state] for state in self.arcs]
        fst = FstArrays.from_lists(self.start, self.final, arcs).to_fst()
        kaldifst.connect(fst)
        return FstArrays.from_fst(fst)


def _f32(x: float) -> float:
    return float(np.float32(x))


def _min(a: float, b: float) -> float:
    return a if a < b else b


def rm_eps_local(fst: FstArrays) -> FstArrays:
    """Local epsilon removal that keeps log-semiring stochasticity (``fstrmepslocal``)."""
    if fst.start < 0:
        return fst
    r = _Remover(fst)
    r.run()
    return r.result()
