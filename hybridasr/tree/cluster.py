"""Bottom-up clustering of a tree's leaves, as Kaldi's ``BottomUpClusterer`` /
``CompartmentalizedBottomUpClusterer`` (``tree/cluster-utils.cc``): within each stub leaf
(``ClusterEventMapRestrictedByMap``) and to a number of leaves
(``ClusterEventMapToNClustersRestrictedByMap``)."""
from __future__ import annotations

import heapq
import logging
from typing import Dict, List

import numpy as np

from hybridasr.kaldi.tree import Node
from hybridasr.tree.event_maps import _map_leaves, _objf, _sum_by_leaf, map_events
from hybridasr.tree.stats import TreeStats

log = logging.getLogger(__name__)
_F32 = np.float32


def _distances_to(clusters: np.ndarray, i: int, others: np.ndarray, objf: np.ndarray,
                  var_floor: float) -> np.ndarray:
    """Kaldi's ``Distance`` of cluster i to each of ``others`` (float32, negatives 0)."""
    merged = _objf(clusters[i] + clusters[others], var_floor)
    d = (objf[i] + objf[others]) - merged
    return np.maximum(d, _F32(0))


class _Compartments:
    """Bottom-up clustering in compartments (Kaldi's ``BottomUpClusterer`` for one,
    ``CompartmentalizedBottomUpClusterer`` for several): a shared queue of pair distances,
    stale entries skipped."""

    def __init__(self, points: List[np.ndarray], var_floor: float, thresh: float):
        self.var_floor = var_floor
        self.thresh = _F32(thresh) if np.isfinite(thresh) else np.inf
        self.clusters = [np.array(p, dtype=np.float64) for p in points]
        self.alive = [np.ones(len(p), dtype=bool) for p in points]
        self.assign = [np.arange(len(p)) for p in points]
        self.objf = [_objf(c, var_floor) if len(c) else np.zeros(0, _F32)
                     for c in self.clusters]
        self.dist = [np.zeros((len(p), len(p)), dtype=_F32) for p in points]
        self.nclusters = sum(len(p) for p in points)
        self.heap: list = []
        for c, cl in enumerate(self.clusters):
            for i in range(1, len(cl)):
                d = _distances_to(cl, i, np.arange(i), self.objf[c], var_floor)
                self.dist[c][i, :i] = d
                for j in np.flatnonzero(d <= self.thresh).tolist():
                    self.heap.append((float(d[j]), c, i, j))
        heapq.heapify(self.heap)

    def run(self, min_clust: int) -> float:
        change = _F32(0)
        while self.nclusters > min_clust and self.heap:
            d, c, i, j = heapq.heappop(self.heap)
            alive = self.alive[c]
            if not (alive[i] and alive[j]):
                continue
            cached = self.dist[c][i, j]
            if abs(float(cached) - d) > 1e-5 * abs(d):
                continue
            change = _F32(change - cached)
            self._merge(c, i, j)
        return float(change)

    def _merge(self, c: int, i: int, j: int) -> None:
        cl, alive = self.clusters[c], self.alive[c]
        cl[i] += cl[j]
        alive[j] = False
        self.assign[c][j] = i
        self.nclusters -= 1
        self.objf[c][i] = _objf(cl[i], self.var_floor)[0]
        others = np.flatnonzero(alive)
        others = others[others != i]
        if not len(others):
            return
        d = _distances_to(cl, i, others, self.objf[c], self.var_floor)
        for k, dk in zip(others.tolist(), d.tolist()):
            hi, lo = (i, k) if k < i else (k, i)
            self.dist[c][hi, lo] = dk
            if dk < self.thresh:
                heapq.heappush(self.heap, (dk, c, hi, lo))

    def assignments(self) -> List[np.ndarray]:
        """Per compartment, each point's cluster, clusters renumbered 0.. in index order."""
        out = []
        for c in range(len(self.clusters)):
            alive, assign = self.alive[c], self.assign[c]
            number = np.full(len(alive), -1)
            number[alive] = np.arange(int(alive.sum()))
            res = np.empty(len(alive), dtype=np.int64)
            for p in range(len(alive)):
                q = p
                while assign[q] != q:
                    q = assign[q]
                res[p] = number[q]
            out.append(res)
        return out


def _groups(stats_rows: np.ndarray, restrict_leaves: np.ndarray, tree_leaves: np.ndarray):
    """Per stub leaf (index = stub leaf, up to the largest with statistics): the sorted leaves
    of the tree holding statistics there, and their summed rows (None for an empty one)."""
    size = int(restrict_leaves.max()) + 1 if len(restrict_leaves) else 0
    out = [None] * size
    order = np.argsort(restrict_leaves, kind="stable")
    sl = restrict_leaves[order]
    starts = np.flatnonzero(np.concatenate([[True], sl[1:] != sl[:-1]])) if len(sl) else []
    ends = list(starts[1:]) + [len(sl)]
    for s, e in zip(list(starts), ends):
        sel = order[s:e]
        out[int(sl[s])] = _sum_by_leaf(tree_leaves[sel], stats_rows[sel])
    return out


def _cluster_restricted(tree: Node, stub: Node, stats: TreeStats, thresh: float):
    """Kaldi's ``ClusterEventMapRestrictedByMap``: (new map, number of leaves removed,
    objective change)."""
    rows = stats.stacked()
    groups = _groups(rows, map_events(stub, stats.events), map_events(tree, stats.events))
    mapping: Dict[int, Node] = {}
    removed, change = 0, 0.0
    for g in groups:
        if g is None:
            continue
        leaves, sums = g
        comp = _Compartments([sums], stats.var_floor, thresh)
        change += comp.run(0)
        assign = comp.assignments()[0]
        removed += len(leaves) - (int(assign.max()) + 1)
        for k, leaf in enumerate(leaves.tolist()):
            mapping[leaf] = ("CE", int(leaves[assign[k]]))
    return _map_leaves(tree, mapping), removed, change


def _cluster_to_n(tree: Node, stub: Node, stats: TreeStats, required: int):
    """Kaldi's ``ClusterEventMapToNClustersRestrictedByMap``: (new map, leaves removed)."""
    rows = stats.stacked()
    groups = _groups(rows, map_events(stub, stats.events), map_events(tree, stats.events))
    if required < len(groups):
        log.warning("number of leaves required (%d) is less than the size of the map: not "
                    "rounding", required)
        return tree, 0
    nonempty_required = required - sum(1 for g in groups if g is None)
    present = [g for g in groups if g is not None]
    total = sum(len(g[0]) for g in present)
    if nonempty_required > total:
        log.warning("cannot get %d leaves: %d non-empty leaves required but there are %d",
                    required, nonempty_required, total)
        return tree, 0
    comp = _Compartments([g[1] for g in present], stats.var_floor, np.inf)
    comp.run(nonempty_required)
    mapping: Dict[int, Node] = {}
    removed = 0
    for (leaves, _), assign in zip(present, comp.assignments()):
        removed += len(leaves) - (int(assign.max()) + 1)
        for k, leaf in enumerate(leaves.tolist()):
            mapping[leaf] = ("CE", int(leaves[assign[k]]))
    return _map_leaves(tree, mapping), removed
