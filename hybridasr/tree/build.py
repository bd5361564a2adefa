"""Decision-tree building, as Kaldi's ``build-tree`` (``BuildTree`` in ``tree/build-tree.cc``,
``tree/build-tree-utils.cc``, ``tree/cluster-utils.cc``).

1. The stub map (``GetStubMap``) from ``phones/roots.int``: a leaf per root phone set
   ("shared": one for all its pdf-classes) or per set and pdf-class ("not-shared").
2. Greedy splitting (``SplitDecisionTree``): every leaf knows its best question (the key and
   question set of largest likelihood gain, ``FindBestSplitForKey`` over the compiled
   questions, keys in order -1, 0, 1, ...; a key that some event of the leaf lacks, e.g. the
   context of a context-independent phone, is not asked); the best split of all is done while
   its gain exceeds ``--thresh`` and there are fewer than ``--max-leaves`` leaves. The phones
   of "not-split" roots are not split (their statistics are left out of this stage). As
   Kaldi's, the split state is a tree per stub leaf, each in one priority queue.
3. Clustering (``ClusterEventMapRestrictedByMap``): within each stub leaf, leaves are merged
   bottom-up while the likelihood loss is below ``--cluster-thresh`` (-1: the smallest gain of
   any split made; 0: no clustering), then (``--round-num-leaves``) merged further, across
   stub leaves by smallest loss, to a multiple of 8 leaves.
4. Renumbering (``RenumberEventMap``): leaves numbered 0.. in the order of their old ids.

The objective is Kaldi's ``GaussClusterable`` (statistics in double, objectives as float),
and float32 arithmetic is kept where Kaldi does it in float (gains, distances), so choices
between nearly equal questions fall as in Kaldi's. The result is a ``ContextDependency`` with
the toolkit's event-map tuples, and a report (leaves, splits, objective per frame).
"""
from __future__ import annotations

import heapq
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.hmm_topology import HmmTopology
from hybridasr.kaldi.tree import ContextDependency, Node
from hybridasr.options import option
from hybridasr.tree.model import num_pdf_classes
from hybridasr.tree.questions import Questions
from hybridasr.tree.stats import TreeStats, gauss_objf
from hybridasr.tree.stub_map import stub_map

__all__ = ["BuildTreeOptions", "Roots", "read_roots", "build_tree", "build_from_lang",
           "map_events", "objf_given_map", "BuildReport"]

log = logging.getLogger(__name__)
_F32 = np.float32


@dataclass
class BuildTreeOptions:
    """``build-tree``'s options, with Kaldi's defaults."""
    max_leaves: int = option(0, "most leaves of the tree (0: no limit, only --thresh)",
                             minimum=0)
    thresh: float = option(300.0, "log-likelihood gain a split must exceed")
    cluster_thresh: float = option(-1.0, "log-likelihood loss below which leaves are merged "
                                         "after splitting (0: no clustering; -1: the "
                                         "smallest split's gain)")
    round_num_leaves: bool = option(True, "merge leaves further to a multiple of 8")

    def check(self) -> None:
        if self.thresh <= 0 and self.max_leaves <= 0:
            raise ConfigError("--thresh must be positive or --max-leaves set (as Kaldi)")


@dataclass
class Roots:
    """``phones/roots.int``: phone sets sharing a tree root, and their flags."""
    phone_sets: List[List[int]]
    shared: List[bool]
    split: List[bool]


def read_roots(path: str) -> Roots:
    """Kaldi's ``ReadRootsFile``: ``shared|not-shared split|not-split phone...`` lines."""
    if not os.path.isfile(path):
        raise FormatError(f"missing roots file {path} (a lang dir's phones/roots.int)")
    sets, shared, split = [], [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if len(words) < 3 or words[0] not in ("shared", "not-shared") or \
                    words[1] not in ("split", "not-split"):
                raise FormatError(f"{path}:{n}: bad line in roots file (expected "
                                  f"'shared|not-shared split|not-split <phones>'): "
                                  f"{line.strip()[:80]!r}")
            try:
                phones = sorted(int(w) for w in words[2:])
            except ValueError:
                raise FormatError(f"{path}:{n}: phones must be integers: "
                                  f"{line.strip()[:80]!r}") from None
            if phones[0] <= 0 or len(set(phones)) != len(phones):
                raise FormatError(f"{path}:{n}: non-positive or duplicate phone-ids")
            sets.append(phones)
            shared.append(words[0] == "shared")
            split.append(words[1] == "split")
    if not sets:
        raise FormatError(f"{path}: empty roots file")
    return Roots(sets, shared, split)


# ------------------------------------------------------------------ event maps over arrays
class _SetCache:
    def __init__(self):
        self._arrays: Dict[int, np.ndarray] = {}

    def __call__(self, node) -> np.ndarray:
        a = self._arrays.get(id(node))
        if a is None:
            a = self._arrays[id(node)] = np.array(sorted(node[2]), dtype=np.int64)
        return a


def map_events(root: Node, events: np.ndarray, rows: Optional[np.ndarray] = None) -> np.ndarray:
    """The leaf of each event row (``events``: pdf-class then window, -1 for an absent key)
    under an event map; -1 where the map has no answer (NULL, a value out of a table, or a
    key the event lacks). ``rows``: which rows (default all)."""
    rows = np.arange(len(events)) if rows is None else np.asarray(rows)
    out = np.full(len(rows), -1, dtype=np.int64)
    sets = _SetCache()
    stack = [(root, np.arange(len(rows)))]
    while stack:
        node, pos = stack.pop()
        if node is None or not len(pos):
            continue
        kind = node[0]
        if kind == "CE":
            out[pos] = node[1]
            continue
        vals = events[rows[pos], node[1] + 1]
        if kind == "TE":
            table = node[2]
            ok = (vals >= 0) & (vals < len(table))
            pos, vals = pos[ok], vals[ok]
            if not len(pos):
                continue
            order = np.argsort(vals, kind="stable")
            sv = vals[order]
            starts = np.flatnonzero(np.concatenate([[True], sv[1:] != sv[:-1]]))
            ends = np.append(starts[1:], len(sv))
            for s, e in zip(starts.tolist(), ends.tolist()):
                stack.append((table[int(sv[s])], pos[order[s:e]]))
        else:
            present = vals >= 0
            pos, vals = pos[present], vals[present]
            yes = np.isin(vals, sets(node))
            stack.append((node[3], pos[yes]))
            stack.append((node[4], pos[~yes]))
    return out


def _map_leaves(root: Node, mapping: Dict[int, Node]) -> Node:
    """A copy of ``root`` with each leaf ``CE(l)`` replaced by ``mapping[l]`` where given
    (Kaldi's ``EventMap::Copy(mapping)``)."""
    # iterative post-order rebuild (trees can be deep)
    result: Dict[int, Node] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if node is None:
            continue
        if node[0] == "CE":
            result[id(node)] = mapping.get(node[1], node)
            continue
        children = node[2] if node[0] == "TE" else [node[3], node[4]]
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c is not None)
            continue
        new = [None if c is None else result[id(c)] for c in children]
        result[id(node)] = ("TE", node[1], new) if node[0] == "TE" else \
            ("SE", node[1], node[2], new[0], new[1])
    return None if root is None else result[id(root)]


def _leaves(root: Node) -> List[int]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if node[0] == "CE":
            out.append(node[1])
        elif node[0] == "TE":
            stack.extend(node[2])
        else:
            stack.extend(node[3:5])
    return out


def _objf(rows: np.ndarray, var_floor: float) -> np.ndarray:
    """float32 objectives of stacked [count, sums, sumsqs] rows."""
    rows = np.atleast_2d(rows)
    d = (rows.shape[1] - 1) // 2
    return gauss_objf(rows[:, 0], rows[:, 1:1 + d], rows[:, 1 + d:], var_floor).astype(_F32)


def _sum_by_leaf(leaves: np.ndarray, rows: np.ndarray):
    """(sorted leaves with statistics, their summed rows)."""
    order = np.argsort(leaves, kind="stable")
    sl = leaves[order]
    starts = np.flatnonzero(np.concatenate([[True], sl[1:] != sl[:-1]]))
    return sl[starts], np.add.reduceat(rows[order], starts, axis=0)


def objf_given_map(stats: TreeStats, root: Node) -> float:
    """Kaldi's ``ObjfGivenMap``: the summed objective of the statistics pooled per leaf."""
    leaves = map_events(root, stats.events)
    if (leaves < 0).any():
        bad = stats.events[np.flatnonzero(leaves < 0)[0]]
        raise FormatError(f"the tree has no answer for event {_event_str(bad)}")
    _, rows = _sum_by_leaf(leaves, stats.stacked())
    return float(np.sum(_objf(rows, stats.var_floor), dtype=_F32))


def _event_str(ev) -> str:
    parts = [f"pdf-class {int(ev[0])}"]
    parts += [f"pos{j}={int(v)}" for j, v in enumerate(ev[1:]) if v >= 0]
    return "(" + ", ".join(parts) + ")"


# ------------------------------------------------------------------ splitting
class _Splitter:
    """Kaldi's ``DecisionTreeSplitter``: a leaf (with its events and best split) or a split
    node with two children."""
    __slots__ = ("leaf", "idx", "best", "key", "qset", "yes", "no")


class _TreeGrower:
    def __init__(self, stats: TreeStats, questions: Questions):
        self.events = stats.events
        self.rows = stats.stacked()
        self.var_floor = stats.var_floor
        self.keys = [k for k in questions.keys() if k >= -1]
        for k, (iters, _) in questions.refine.items():
            if iters > 0:
                raise ConfigError(f"{questions.name}: question refinement (num-iters-refine "
                                  f"{iters} for key {k}) is not supported; compile the "
                                  f"questions with 0 (compile-questions' default)")
        bad = [k for k in self.keys if k + 1 >= self.events.shape[1]]
        if bad:
            raise FormatError(f"{questions.name}: questions for keys {bad}, but the statistics "
                              f"have context width {stats.context_width}")
        width = max(int(self.events[:, 1:].max(initial=0)),
                    max((v for k in self.keys for q in questions[k] for v in q), default=0),
                    int(self.events[:, 0].max(initial=0))) + 1
        self.qsets: Dict[int, List[Tuple[int, ...]]] = {}
        self.qmat: Dict[int, np.ndarray] = {}
        for k in self.keys:
            qs = questions[k]
            m = np.zeros((len(qs), width))
            for i, q in enumerate(qs):
                vals = [v for v in q if 0 <= v < width]
                m[i, vals] = 1.0
            self.qsets[k] = qs
            self.qmat[k] = m

    def new(self, leaf: int, idx: np.ndarray) -> _Splitter:
        s = _Splitter()
        s.leaf, s.idx, s.yes, s.no = leaf, idx, None, None
        s.best, s.key, s.qset = _F32(0), None, None
        self._find_best_split(s)
        return s

    def _find_best_split(self, s: _Splitter) -> None:
        idx = s.idx
        if len(idx) <= 1 or not self.keys:
            return
        rows = self.rows[idx]
        for key in self.keys:
            qm = self.qmat[key]
            if not len(qm):
                continue
            vals = self.events[idx, key + 1]
            if (vals < 0).any():
                continue  # a key some event lacks cannot be asked (Kaldi's PossibleValues)
            order = np.argsort(vals, kind="stable")
            sv = vals[order]
            starts = np.flatnonzero(np.concatenate([[True], sv[1:] != sv[:-1]]))
            if len(starts) == 1:
                continue  # one value: every question leaves one side empty (gain 0)
            uniq = sv[starts]
            per_value = np.add.reduceat(rows[order], starts, axis=0)
            q = qm[:, uniq]
            nyes = q.sum(axis=1)
            yes = q @ per_value
            no = (1.0 - q) @ per_value
            total = per_value.sum(axis=0)
            gain = (_objf(yes, self.var_floor) + _objf(no, self.var_floor)) - \
                _objf(total, self.var_floor)[0]
            gain[(nyes == 0) | (nyes == len(uniq))] = 0
            i = int(np.argmax(gain))
            if gain[i] > s.best:
                s.best, s.key, s.qset = gain[i], key, self.qsets[key][i]

    def split(self, s: _Splitter, next_leaf: int) -> int:
        """Kaldi's ``DoSplit``: splits the best leaf under ``s``; returns the next free leaf."""
        path = []
        while s.yes is not None:
            path.append(s)
            s = s.yes if s.yes.best >= s.no.best else s.no
        vals = self.events[s.idx, s.key + 1]
        mask = np.isin(vals, np.asarray(s.qset, dtype=np.int64))
        s.yes = self.new(s.leaf, s.idx[mask])
        s.no = self.new(next_leaf, s.idx[~mask])
        s.leaf, s.idx = -1, None
        s.best = max(s.yes.best, s.no.best)
        for p in reversed(path):
            p.best = max(p.yes.best, p.no.best)
        return next_leaf + 1

    @staticmethod
    def to_map(s: _Splitter) -> Node:
        result: Dict[int, Node] = {}
        stack = [(s, False)]
        while stack:
            node, done = stack.pop()
            if node.yes is None:
                result[id(node)] = ("CE", node.leaf)
            elif not done:
                stack.extend([(node, True), (node.yes, False), (node.no, False)])
            else:
                result[id(node)] = ("SE", node.key, frozenset(node.qset), result[id(node.yes)],
                                    result[id(node.no)])
        return result[id(s)]


# ------------------------------------------------------------------ bottom-up clustering
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


def _renumber(tree: Node) -> Tuple[Node, int]:
    leaves = sorted(set(_leaves(tree)))
    mapping = {old: ("CE", new) for new, old in enumerate(leaves)}
    return _map_leaves(tree, mapping), len(leaves)


# ------------------------------------------------------------------ the whole build
@dataclass
class BuildReport:
    """What ``build_tree`` did (Kaldi's build-tree log, as numbers)."""
    num_events: int = 0
    frames: float = 0.0
    frames_split_phones: float = 0.0
    stub_leaves: int = 0
    splits: int = 0
    leaves_after_split: int = 0
    like_impr_per_frame: float = 0.0
    smallest_split: float = 0.0
    cluster_thresh: float = 0.0
    removed_by_clustering: int = 0
    removed_by_rounding: int = 0
    num_leaves: int = 0
    objf_change_clustering_per_frame: float = 0.0
    objf_per_frame_stub: float = 0.0
    objf_per_frame: float = 0.0
    objf_gain_per_frame: float = 0.0
    unseen_phones: List[int] = field(default_factory=list)
    low_count_pdfs: int = 0


def build_tree(stats: TreeStats, questions: Questions, roots: Roots, topo: HmmTopology,
               options: Optional[BuildTreeOptions] = None,
               name: str = "<tree>") -> Tuple[ContextDependency, BuildReport]:
    """Kaldi's ``build-tree <stats> <roots> <questions> <topo> <tree>``: the tree (N and P
    of the statistics) and a report."""
    opts = options or BuildTreeOptions()
    opts.check()
    if not stats.num_events:
        raise FormatError(f"{stats.name}: no statistics to build a tree from")
    n, p = stats.context_width, stats.central_position
    rep = BuildReport(num_events=stats.num_events)
    all_phones = sorted(x for s in roots.phone_sets for x in s)
    if len(set(all_phones)) != len(all_phones):
        raise FormatError("roots file: a phone is in more than one root")
    if all_phones != sorted(topo.phones):
        log.warning("the phone sets of the roots file and the topology's phones differ")
    central = stats.central_phones
    seen = sorted(set(central.tolist()))
    stray = sorted(set(seen) - set(all_phones))
    if stray:
        raise FormatError(f"phone {stray[0]} appears in the statistics but is not listed in "
                          f"the roots file")
    rep.unseen_phones = sorted(set(all_phones) - set(seen))
    if rep.unseen_phones:
        log.warning("saw no statistics for phones %s", " ".join(map(str, rep.unseen_phones)))

    p2n = num_pdf_classes(topo)
    stub, num_leaves = stub_map(p, roots.phone_sets, p2n, roots.shared)
    rep.stub_leaves = num_leaves
    log.info("before building the tree, the map has %d leaves", num_leaves)

    nonsplit = sorted(x for s, sp in zip(roots.phone_sets, roots.split) if not sp for x in s)
    keep = ~np.isin(central, nonsplit)
    filtered = TreeStats(n, p, stats.var_floor, stats.events[keep], stats.counts[keep],
                         stats.sums[keep], stats.sumsqs[keep], name=stats.name)

    # --- splitting
    stub_of = map_events(stub, filtered.events)
    if (stub_of < 0).any():
        ev = filtered.events[np.flatnonzero(stub_of < 0)[0]]
        raise FormatError(f"the roots' stub map has no answer for event {_event_str(ev)}: "
                          f"check that --context-width/--central-position match the "
                          f"statistics and that context-independent phones do not share "
                          f"roots with others")
    if (map_events(stub, stats.events) < 0).any():
        ev = stats.events[np.flatnonzero(map_events(stub, stats.events) < 0)[0]]
        raise FormatError(f"the roots' stub map has no answer for event {_event_str(ev)}")
    grower = _TreeGrower(filtered, questions)
    size = int(stub_of.max()) + 1 if len(stub_of) else 0
    order = np.argsort(stub_of, kind="stable")
    bounds = np.searchsorted(stub_of[order], np.arange(size + 1))
    builders = [grower.new(i, order[bounds[i]:bounds[i + 1]]) for i in range(size)]
    heap = [(-float(b.best), -i) for i, b in enumerate(builders)]
    heapq.heapify(heap)
    like_impr, smallest = _F32(0), _F32(1.0e20)
    thresh = _F32(opts.thresh)
    while heap and _F32(-heap[0][0]) > thresh and \
            (opts.max_leaves <= 0 or num_leaves < opts.max_leaves):
        best, i = _F32(-heap[0][0]), -heap[0][1]
        smallest = min(smallest, best)
        like_impr = _F32(like_impr + best)
        num_leaves = grower.split(builders[i], num_leaves)
        heapq.heapreplace(heap, (-float(builders[i].best), -i))
        rep.splits += 1
    rep.leaves_after_split = num_leaves
    log.info("split %d times, %d leaves now", rep.splits, num_leaves)
    tree_split = _map_leaves(stub, {i: _TreeGrower.to_map(b) for i, b in enumerate(builders)})

    rep.frames = float(np.sum(stats.counts, dtype=_F32))
    rep.frames_split_phones = float(np.sum(filtered.counts, dtype=_F32))
    rep.like_impr_per_frame = float(like_impr) / rep.frames
    rep.smallest_split = float(smallest)
    cluster_thresh = opts.cluster_thresh
    if cluster_thresh < 0:
        cluster_thresh = float(smallest)
        log.info("clustering threshold set to the smallest split, %g", cluster_thresh)
    rep.cluster_thresh = cluster_thresh
    objf_before = objf_given_map(stats, tree_split)
    tree = tree_split
    if cluster_thresh != 0.0:
        tree, removed, _ = _cluster_restricted(tree_split, stub, stats, cluster_thresh)
        rep.removed_by_clustering = removed
        log.info("clustering removed %d leaves", removed)
        base = num_leaves - removed
    else:
        base = num_leaves
    if opts.round_num_leaves:
        required = (base // 8) * 8
        tree, rounded = _cluster_to_n(tree, stub, stats, required)
        rep.removed_by_rounding = rounded
        if rounded:
            log.info("rounded the number of leaves to a multiple of 8 by removing %d", rounded)
    if cluster_thresh != 0.0 or opts.round_num_leaves:
        tree, rep.num_leaves = _renumber(tree)
    else:
        rep.num_leaves = num_leaves
    objf_after = objf_given_map(stats, tree)
    rep.objf_change_clustering_per_frame = (objf_after - objf_before) / rep.frames
    rep.objf_per_frame_stub = objf_given_map(stats, stub) / rep.frames
    rep.objf_per_frame = objf_after / rep.frames
    rep.objf_gain_per_frame = rep.objf_per_frame - rep.objf_per_frame_stub
    counts = np.bincount(map_events(tree, stats.events), weights=stats.counts,
                         minlength=rep.num_leaves)
    rep.low_count_pdfs = int(((counts < 100.0) & (counts > 0)).sum())
    log.info("%d leaves; objective %.4f per frame (stub %.4f), split gain %.4f per frame "
             "over %.0f frames, clustering change %.4f per frame", rep.num_leaves,
             rep.objf_per_frame, rep.objf_per_frame_stub, rep.like_impr_per_frame,
             rep.frames, rep.objf_change_clustering_per_frame)
    return ContextDependency(n, p, tree, name=name), rep


def build_from_lang(stats: TreeStats, lang_dir: str, options: Optional[BuildTreeOptions] = None,
                    pdf_classes: Sequence[int] = (1,), questions_file: Optional[str] = None,
                    name: str = "<tree>"):
    """What Kaldi's ``train_deltas.sh`` runs to make a tree from ``stats`` and a lang dir:
    ``cluster-phones`` over ``phones/sets.int`` (or the questions of ``questions_file``, a
    ``questions.int``), plus ``phones/extra_questions.int``, ``compile-questions`` with the
    ``topo``, ``build-tree`` with ``phones/roots.int``. Returns (tree, the phone questions
    as a list of sets, the compiled ``Questions``, the ``BuildReport``)."""
    from hybridasr.kaldi.io.table import read_int_lists
    from hybridasr.tree.model import read_topology
    from hybridasr.tree.questions import cluster_phones, compile_questions, read_questions_int

    if not os.path.isdir(lang_dir):
        raise FormatError(f"missing lang dir {lang_dir}")
    topo = read_topology(os.path.join(lang_dir, "topo"))
    roots = read_roots(os.path.join(lang_dir, "phones", "roots.int"))
    if questions_file:
        qlist = read_questions_int(questions_file)
        qname = questions_file
    else:
        sets_path = os.path.join(lang_dir, "phones", "sets.int")
        if not os.path.isfile(sets_path):
            raise FormatError(f"missing file {sets_path} (the phone sets cluster-phones "
                              f"clusters into questions)")
        qlist = cluster_phones(stats, read_int_lists(sets_path), pdf_classes)
        extra = os.path.join(lang_dir, "phones", "extra_questions.int")
        if os.path.isfile(extra):
            qlist += read_int_lists(extra)
        else:
            log.warning("no %s: only the clustered questions are used", extra)
        qname = "<cluster-phones questions>"
    compiled = compile_questions(qlist, topo, stats.context_width, name=qname)
    tree, report = build_tree(stats, compiled, roots, topo, options, name=name)
    return tree, qlist, compiled, report
