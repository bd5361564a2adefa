"""HMM self-loops added to a graph without them (Kaldi's ``add-self-loops --reorder=true``,
``AddSelfLoops``), after HCLG was determinized and minimized without them — which keeps the
graph small.

With ``reorder`` the self-loop of a transition-state sits on the state its transition-ids
enter (Kaldi's default for graphs and alignments: a state's forward transition comes before
its self-loops). A state entered by transition-ids of two transition-states cannot hold both
loops, so it is split first (Kaldi's ``MakePrecedingInputSymbolsSameClass``): each non-epsilon
arc into it goes to a new state per transition-state, which has an epsilon arc to it. Then
every state entered by a transition-state with a self-loop gets the loop (cost
``-self_loop_scale * log p(loop)``) and its arcs out and final cost pay
``-self_loop_scale * log(1 - p(loop))``. Epsilons, disambiguation symbols and the start state
count as one class with no loop."""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import INF, FstArrays
from hybridasr.graph.h_transducer import non_self_loop_log_probs
from hybridasr.kaldi.transition_model import TransitionModel

__all__ = ["add_self_loops"]


def add_self_loops(fst: FstArrays, tm: TransitionModel, self_loop_scale: float = 0.1,
                   reorder: bool = True) -> FstArrays:
    if not reorder:
        raise FormatError("add_self_loops: only --reorder=true (Kaldi's default) is built")
    if fst.start < 0:
        raise FormatError("add_self_loops: the graph has no start state (empty graph)")
    ntid = tm.num_transition_ids
    il = fst.ilabel
    is_tid = (il >= 1) & (il <= ntid)
    if np.any(tm.tid_is_self_loop[np.where(is_tid, il, 0)] & is_tid):
        raise FormatError("add_self_loops: the graph already has self-loops")
    cls = np.where(is_tid, tm.tid2tstate[np.where(is_tid, il, 0)], 0).astype(np.int64)
    n = fst.num_states
    # the class entering each state: that of its first arc in arc order; the start state
    # counts as entered by epsilon (class 0) before any arc
    first_cls = np.full(n, -1, dtype=np.int64)
    entered, first_arc = np.unique(fst.dst, return_index=True)
    first_cls[entered] = cls[first_arc]
    first_cls[fst.start] = 0
    bad = np.zeros(n, dtype=bool)
    bad[fst.dst[cls != first_cls[fst.dst]]] = True
    src, dst, weight = fst.src.copy(), fst.dst.copy(), fst.weight.copy()
    ilabel, olabel, final = fst.ilabel, fst.olabel, fst.final.copy()
    new_src, new_dst = [], []
    if bad.any():
        change = np.flatnonzero((il != 0) & bad[dst])
        state_map = {}
        for a in change.tolist():
            key = (int(dst[a]), int(cls[a]))
            ns = state_map.get(key)
            if ns is None:
                ns = state_map[key] = n + len(state_map)
                new_src.append(ns)
                new_dst.append(key[0])
            dst[a] = ns
        extra = len(state_map)
        final = np.concatenate([final, np.full(extra, INF, dtype=np.float32)])
        src = np.concatenate([src, np.array(new_src, dtype=np.int64)])
        dst = np.concatenate([dst, np.array(new_dst, dtype=np.int64)])
        ilabel = np.concatenate([ilabel, np.zeros(extra, dtype=np.int64)])
        olabel = np.concatenate([olabel, np.zeros(extra, dtype=np.int64)])
        weight = np.concatenate([weight, np.zeros(extra, dtype=np.float32)])
        cls = np.concatenate([cls, np.zeros(extra, dtype=np.int64)])
        n += extra
    state_in = np.full(n, -1, dtype=np.int64)
    state_in[fst.start] = 0
    state_in[dst] = cls  # after the split each state is entered by one class
    if np.any((state_in[dst] != cls)):
        raise FormatError("add_self_loops: a state is entered by two transition-states after "
                          "splitting (internal error)")
    scale = np.float32(self_loop_scale)
    nsl = non_self_loop_log_probs(tm)
    tin = np.maximum(state_in, 0)
    fwd = np.where(state_in > 0, -nsl[tin] * scale, np.float32(0)).astype(np.float32)
    weight = (weight + fwd[src]).astype(np.float32)
    final = np.where(final == INF, INF, final + fwd).astype(np.float32)
    loop_tid = np.array([tm.self_loop_of(t) if t > 0 else 0 for t in range(
        tm.num_transition_states + 1)], dtype=np.int64)
    loops = np.flatnonzero((state_in > 0) & (loop_tid[tin] > 0))
    loop_w = (-tm.log_probs[loop_tid[tin[loops]]].astype(np.float32) * scale).astype(np.float32)
    # append each loop after its state's arcs (a stable sort by source keeps arc order)
    src = np.concatenate([src, loops])
    order = np.argsort(src, kind="stable")
    return FstArrays(fst.start, final, src[order],
                     np.concatenate([ilabel, loop_tid[tin[loops]]])[order],
                     np.concatenate([olabel, np.zeros(len(loops), dtype=np.int64)])[order],
                     np.concatenate([weight, loop_w])[order],
                     np.concatenate([dst, loops])[order])
