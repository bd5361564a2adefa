"""Event maps applied to arrays of tree-statistics events: which leaf each event reaches
(``map_events``), leaves replaced (``_map_leaves``) and renumbered (``_renumber``, Kaldi's
``RenumberEventMap``), and the Gaussian objective of the statistics under a map."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.tree import Node
from hybridasr.tree.stats import TreeStats, gauss_objf

_F32 = np.float32


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


def _renumber(tree: Node) -> Tuple[Node, int]:
    leaves = sorted(set(_leaves(tree)))
    mapping = {old: ("CE", new) for new, old in enumerate(leaves)}
    return _map_leaves(tree, mapping), len(leaves)
