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
from hybridasr.tree.stats import TreeStats
from hybridasr.tree.cluster import _cluster_restricted, _cluster_to_n
from hybridasr.tree.event_maps import (_event_str, _map_leaves, _objf, _renumber, map_events,
                                       objf_given_map)
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
    from hybridasr.tree.phone_clustering import cluster_phones
    from hybridasr.tree.questions import compile_questions, read_questions_int

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
