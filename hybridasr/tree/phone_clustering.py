"""Phone clustering for tree questions: Kaldi's ``cluster-phones`` (its questions mode).

``cluster_phones`` is Kaldi's ``AutomaticallyObtainQuestions``: the statistics of the chosen
pdf-classes (default 1, the middle state of a 3-state HMM) are pooled per phone set of
``phones/sets.int``, and the sets are clustered top-down into a binary tree (``TreeCluster``:
each node split in two by k-means with 10 tries, each try started from a pseudo-random
assignment and refined point by point, ``RefineClusters``); every node of the tree but the root
is a question (its set of phones), the top-level ones first, then the original sets. The
pseudo-random numbers are glibc's ``rand()`` from its default seed, which Kaldi's ``Rand()``
calls in a fresh ``cluster-phones`` process, so the starting points are Kaldi's. The questions
are compiled for the tree by ``hybridasr.tree.questions``.
"""
from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.options import option
from hybridasr.tree.stats import TreeStats, gauss_objf

__all__ = ["ClusterPhonesOptions", "parse_pdf_class_list", "GlibcRand", "cluster_phones",
           "tree_cluster"]

log = logging.getLogger(__name__)

_F32 = np.float32


@dataclass
class ClusterPhonesOptions:
    """``cluster-phones``' option (its questions mode)."""
    pdf_class_list: str = option("1", "colon-separated pdf-classes whose statistics cluster "
                                      "the phones (1: the middle state of a 3-state HMM)")


def parse_pdf_class_list(text: str) -> List[int]:
    try:
        out = sorted({int(w) for w in text.split(":") if w.strip()})
    except ValueError:
        out = []
    if not out or out[0] < 0:
        raise ConfigError(f"--pdf-class-list={text}: expected a colon-separated list of "
                          f"pdf-classes, e.g. 1 or 0:1:2")
    return out


class GlibcRand:
    """glibc's ``rand()`` (the TYPE_3 additive feedback generator behind ``random()``) from
    ``srand(seed)``; a process that never calls ``srand`` has seed 1."""

    def __init__(self, seed: int = 1):
        seed = seed or 1
        r = [0] * 34
        r[0] = seed
        for i in range(1, 31):
            hi, lo = divmod(r[i - 1], 127773)
            word = 16807 * lo - 2836 * hi
            if word < 0:
                word += 2147483647
            r[i] = word
        for i in range(31, 34):
            r[i] = r[i - 31]
        self._r = r
        for _ in range(310):
            self._next()

    def _next(self) -> int:
        r = self._r
        v = (r[-31] + r[-3]) & 0xFFFFFFFF
        r.append(v)
        if len(r) > 64:
            del r[:-34]
        return v

    def __call__(self) -> int:
        return self._next() >> 1


# ------------------------------------------------------------------ Gaussian clusters
class _Gauss:
    """Stacked Gaussian statistics [count, sums, sums of squares] and Kaldi's float
    objective of them."""

    def __init__(self, var_floor: float):
        self.var_floor = var_floor

    def objf(self, rows: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(rows)
        d = (rows.shape[1] - 1) // 2
        return gauss_objf(rows[:, 0], rows[:, 1:1 + d], rows[:, 1 + d:],
                          self.var_floor).astype(_F32)

    def objf1(self, row: np.ndarray) -> np.float32:
        return self.objf(row)[0]


def _refine_two(g: _Gauss, points: np.ndarray, clusters: np.ndarray,
                assign: np.ndarray, num_iters: int) -> np.float32:
    """Kaldi's ``RefineClusters`` for two clusters (where every other cluster is a candidate,
    as Kaldi's top-n is then 2): each point in turn moves to the other cluster when that
    improves the summed objective, for up to ``num_iters`` passes or until none moves.
    Updates ``clusters`` and ``assign``; returns the improvement. The points up to the next
    one that moves are evaluated together (the clusters do not change in between)."""
    ans = _F32(0)
    objf = g.objf(clusters)
    n = len(points)
    for _ in range(num_iters):
        moved = False
        p = 0
        while p < n:
            idx = np.arange(p, n)
            own = assign[idx]
            other = 1 - own
            own_minus = g.objf(clusters[own] - points[idx])
            other_plus = g.objf(clusters[other] + points[idx])
            impr = ((other_plus + own_minus) - objf[other]) - objf[own]
            hits = np.flatnonzero(impr > 0)
            if not len(hits):
                break
            k = int(idx[hits[0]])
            ans = _F32(ans + impr[hits[0]])
            o = int(assign[k])
            assign[k] = 1 - o
            clusters[o] -= points[k]
            clusters[1 - o] += points[k]
            objf = g.objf(clusters)
            moved = True
            p = k + 1
        if not moved:
            break
    return ans


def _kmeans2(g: _Gauss, points: np.ndarray, rand: GlibcRand, num_tries: int = 10,
             num_iters: int = 20, refine_iters: int = 100):
    """Kaldi's ``ClusterKMeans`` with two clusters: (improvement, clusters, assignments) of
    the best of ``num_tries`` tries."""
    n = len(points)
    best = None
    for t in range(num_tries):
        if n == 1:
            skip = 1
        else:
            skip = 1 + rand() % (n - 1)
            while math.gcd(skip, n) != 1:
                if skip == n - 1:
                    skip = 0
                skip += 1
        assign = np.zeros(n, dtype=np.int64)
        clusters = np.zeros((2, points.shape[1]))
        i = j = 0
        for _ in range(n):
            clusters[j] += points[i]
            assign[i] = j
            i = (i + skip) % n
            j = (j + 1) % 2
        total = clusters.sum(axis=0)
        obj = g.objf(clusters)
        ans = _F32(_F32(obj[0] + obj[1]) - g.objf1(total))
        for _ in range(num_iters):
            impr = _refine_two(g, points, clusters, assign, refine_iters)
            ans = _F32(ans + impr)
            if impr == 0:
                break
        if t == 0 or ans > best[0]:
            best = (ans, clusters.copy(), assign.copy())
    return best


def tree_cluster(points: np.ndarray, max_clust: int, var_floor: float,
                 rand: Optional[GlibcRand] = None, num_tries: int = 10, thresh: float = 0.0):
    """Kaldi's ``TreeCluster`` (binary, k-means at each node): (assignments of points to leaf
    clusters, parent of each cluster, number of leaves). Clusters are numbered as Kaldi's:
    leaves first, then the non-leaves with the root last; the root is its own parent."""
    g = _Gauss(var_floor)
    rand = rand or GlibcRand()
    points = np.asarray(points, dtype=np.float64)

    class Node:
        __slots__ = ("is_leaf", "index", "parent", "points", "best", "assign", "children",
                     "serial")

    leaf_nodes: List[Node] = []
    nonleaf_nodes: List[Node] = []
    queue: list = []
    serial = [0]

    def find_best_split(node: Node) -> None:
        node.best, node.assign = _F32(0), None
        if len(node.points) == 0:
            log.warning("tree clustering: leaf with no data")
            return
        if len(node.points) <= 1:
            return
        impr, _, assign = _kmeans2(g, points[node.points], rand, num_tries=num_tries)
        node.best, node.assign = impr, assign
        if impr > thresh:
            heapq.heappush(queue, (-float(impr), -node.serial, node))

    def new_node(parent, pts) -> Node:
        nd = Node()
        nd.is_leaf, nd.parent, nd.points, nd.children = True, parent, pts, []
        nd.serial = serial[0]
        serial[0] += 1
        return nd

    if len(points) == 0:
        return [], [], 0
    top = new_node(None, list(range(len(points))))
    top.index = 0
    leaf_nodes.append(top)
    find_best_split(top)
    while len(leaf_nodes) < max_clust and queue:
        _, _, node = heapq.heappop(queue)
        children = []
        for c in range(2):
            child = new_node(node, [p for p, a in zip(node.points, node.assign) if a == c])
            if c == 0:
                child.index = node.index
                leaf_nodes[child.index] = child
            else:
                child.index = len(leaf_nodes)
                leaf_nodes.append(child)
            children.append(child)
        node.children, node.points, node.assign = children, [], None
        node.is_leaf = False
        node.index = len(nonleaf_nodes)
        nonleaf_nodes.append(node)
        for child in children:
            find_best_split(child)

    n_leaf, n_non = len(leaf_nodes), len(nonleaf_nodes)

    def out_index(nd: Node) -> int:
        return nd.index if nd.is_leaf else n_leaf + n_non - 1 - nd.index

    assignments = [-1] * len(points)
    for li, nd in enumerate(leaf_nodes):
        for p in nd.points:
            assignments[p] = li
    parents = [0] * (n_leaf + n_non)
    for li, nd in enumerate(leaf_nodes):
        parents[li] = 0 if nd.parent is None else out_index(nd.parent)
    for nd in nonleaf_nodes:
        idx = out_index(nd)
        parents[idx] = idx if nd.parent is None else out_index(nd.parent)
    return assignments, parents, n_leaf


def cluster_phones(stats: TreeStats, phone_sets: Sequence[Sequence[int]],
                   pdf_classes: Sequence[int] = (1,),
                   central_position: Optional[int] = None) -> List[List[int]]:
    """Kaldi's ``cluster-phones`` in its "questions" mode (``AutomaticallyObtainQuestions``):
    the questions (phone sets) of a top-down clustering of ``phone_sets`` by the pooled
    statistics of ``pdf_classes``."""
    p = stats.central_position if central_position is None else int(central_position)
    sets = []
    for s in phone_sets:
        s = sorted(s)
        if not s:
            raise FormatError("cluster-phones: an empty phone set")
        if len(set(s)) != len(s):
            raise FormatError(f"cluster-phones: phone set {s} has duplicate phones")
        sets.append(s)
    phones = sorted(x for s in sets for x in s)
    if not phones:
        raise FormatError("cluster-phones: no phones given")
    if len(set(phones)) != len(phones):
        raise FormatError("cluster-phones: phones are present in more than one phone set")
    pdf_classes = sorted(set(int(c) for c in pdf_classes))
    if not pdf_classes:
        raise FormatError("cluster-phones: no pdf-classes to cluster on")
    keep = np.isin(stats.pdf_classes, pdf_classes)
    if keep.sum() * 10 < stats.num_events:
        log.warning("after keeping only the statistics of pdf-classes %s, most of them are "
                    "gone (%d of %d events left): a topology whose middle state is not "
                    "pdf-class 1 needs --pdf-class-list", pdf_classes, int(keep.sum()),
                    stats.num_events)
    rows = stats.stacked()[keep]
    central = stats.events[keep, 1 + p]
    if (central < 0).any():
        raise FormatError(f"{stats.name}: events without the central phone (key {p})")
    size = max(int(central.max()) + 1 if len(central) else 0, phones[-1] + 1)
    per_phone = np.zeros((size, rows.shape[1]))
    np.add.at(per_phone, central, rows)
    stray = sorted(set(np.flatnonzero(per_phone[:, 0] > 0).tolist()) - set(phones))
    for ph in stray:
        log.warning("phone %d is present in the statistics but in no phone set", ph)
    per_set = np.stack([per_phone[s].sum(axis=0) for s in sets])
    no_data = [s for s, row in zip(sets, per_set) if row[0] == 0.0]
    for s in no_data:
        log.warning("cluster-phones: no statistics for phone set %s", " ".join(map(str, s)))
    if len(no_data) + 1 >= len(sets):
        log.warning("all or all but one of the phone sets have no data with pdf-classes %s",
                    pdf_classes)
    assignments, parents, num_leaves = tree_cluster(per_set, len(sets), stats.var_floor)
    return _sets_of_phones(sets, assignments, parents, num_leaves)


def _sets_of_phones(sets, assignments, parents, num_leaves) -> List[List[int]]:
    """Kaldi's ``ObtainSetsOfPhones``."""
    raw: List[List[int]] = [[] for _ in parents]
    for i, c in enumerate(assignments):
        raw[c].extend(sets[i])
    for j, parent in enumerate(parents):
        raw[j].sort()
        if parent < len(parents) - 1:
            raw[parent].extend(raw[j])
    raw.reverse()
    raw.extend(list(s) for s in sets)
    seen, out = set(), []
    for s in raw:
        t = tuple(s)
        if t in seen:
            continue
        seen.add(t)
        if s:
            out.append(list(s))
    return out
