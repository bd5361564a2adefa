"""Kaldi's H transducer (``make-h-transducer``, ``GetHTransducer``): from transition-ids to
the context-dependent phones (input labels of C o LG, described by the ilabel info of
``compose_context``), without HMM self-loops, which ``self_loops.add_self_loops`` adds after
HCLG is determinized and minimized.

Layout, as Kaldi's ``MakeLoopFst``: state 0 is the start and the only final state. Each input
label j of CLG gets a little acceptor of transition-ids — the HMM of its phone window (one
per distinct (phone, pdfs), shared by windows with the same pdfs), or for a disambiguation
symbol (and the pseudo-epsilon ``#-1``, window ``[0]``) one arc with a new "disambiguation
transition-id" (numbered after the model's transition-ids, returned in order) — entered from
state 0 with output label j and left back to state 0 by an epsilon arc from its final state.
An HMM whose start state has one arc and no arc into it shares state 0 (output j on that
arc); otherwise an epsilon arc with output j enters it. A shared HMM reached again costs one
more arc out of state 0: a copy of its entry arc with the new output label.

HMM arc costs: ``-transition_scale * log(p(transition) / (1 - p(self-loop)))`` (Kaldi's
``GetTransitionLogProbIgnoringSelfLoops``), in float32 as Kaldi computes them."""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.kaldi.hmm_topology import NO_PDF
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency

__all__ = ["make_h_transducer", "non_self_loop_log_probs"]


def non_self_loop_log_probs(tm: TransitionModel) -> np.ndarray:
    """log(1 - p(self-loop)) per transition-state (index 0 unused), rounded as Kaldi's
    ``ComputeDerivedOfProbs`` computes it in float (``expf``, ``1.0 - p``, ``logf``; glibc's
    float functions are correctly rounded, as double math rounded to float is); a self-loop
    probability of 1 gives log(1e-10). HCLG's structure depends on these last bits:
    ``minimize_encoded`` quantizes weights, and numpy's float32 exp/log differ from glibc's
    in about a third of the values, so the C library's ``expf``/``logf`` are called."""
    out = np.zeros(tm.num_transition_states + 1, dtype=np.float32)
    for ts in range(1, tm.num_transition_states + 1):
        loop = tm.self_loop_of(ts)
        if loop:
            p = expf(float(tm.log_probs[loop]))
            q = f32(1.0 - p)
            out[ts] = logf(q if q > 0 else f32(1e-10))
    return out


def _libm():
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fns = []
        for name in ("expf", "logf"):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            fns.append(fn)
        return fns
    except (OSError, AttributeError):  # no C math library: double math rounded to float
        return (lambda x: f32(math.exp(x))), (lambda x: f32(math.log(x)))


def f32(x: float) -> float:
    """A double rounded to float (as C++ assigns it to a float)."""
    return float(np.float32(x))


class _HmmFsa:
    """The HMM of one (phone, pdfs) as an acceptor of transition-ids, self-loops left out:
    ``arcs[k] = (tid, cost, from state, to state)``, state 0 the start, ``final`` the last
    (non-emitting) topology state."""

    def __init__(self, tm: TransitionModel, nsl: np.ndarray, phone: int,
                 pdfs: Sequence[int], scale: np.float32):
        entry = tm.topology.topology_for_phone(phone)
        self.num_states = len(entry)
        self.final = len(entry) - 1
        self.arcs: List[Tuple[int, np.float32, int, int]] = []
        for k, st in enumerate(entry):
            if st.forward_pdf_class == NO_PDF:
                if st.transitions:
                    raise FormatError(f"phone {phone}: non-emitting HMM state {k} with "
                                      f"transitions: topology not supported")
                continue
            ts = tm.tuple_to_transition_state(phone, k, pdfs[st.forward_pdf_class],
                                              pdfs[st.self_loop_pdf_class])
            for j, (d, _) in enumerate(st.transitions):
                if d == k:
                    continue
                tid = tm.pair_to_transition_id(ts, j)
                log_prob = np.float32(tm.log_probs[tid]) - nsl[ts]
                self.arcs.append((tid, np.float32(-log_prob) * scale, k, d))
        if self.final == 0 or entry[self.final].forward_pdf_class != NO_PDF:
            raise FormatError(f"phone {phone}: the topology's last state must be a "
                              f"non-emitting final state")
        into_start = any(d == 0 for _, _, _, d in self.arcs)
        self.share_start = sum(1 for a in self.arcs if a[2] == 0) == 1 and not into_start


def make_h_transducer(ilabel_info: Sequence[Sequence[int]], tree: ContextDependency,
                      tm: TransitionModel, transition_scale: float = 1.0
                      ) -> Tuple[FstArrays, List[int]]:
    """H (input transition-ids, output CLG's input labels) and the disambiguation
    transition-ids it introduced (Kaldi's ``disambig_tid.int``)."""
    if not ilabel_info or len(ilabel_info[0]) != 0:
        raise FormatError("ilabel info: label 0 must be epsilon (an empty window)")
    if tree.num_pdfs > tm.num_pdfs:
        raise FormatError(f"the tree {tree.name} has {tree.num_pdfs} pdfs, the model "
                          f"{tm.name} {tm.num_pdfs}: they do not belong together")
    scale = np.float32(transition_scale)
    nsl = non_self_loop_log_probs(tm)
    hmms: Dict[Tuple[int, Tuple[int, ...]], _HmmFsa] = {}
    entry_arc: Dict[int, Tuple[int, np.float32, int]] = {}  # id(hmm) -> (ilabel, w, dest)
    arcs: List[List[tuple]] = [[]]  # arcs[state] = [(ilabel, olabel, weight, next)]
    disambig: List[int] = []
    next_disambig = tm.num_transition_ids + 1
    n, p = tree.context_width, tree.central_position
    for j in range(1, len(ilabel_info)):
        window = [int(x) for x in ilabel_info[j]]
        if not window:
            raise FormatError(f"ilabel info: input label {j} has an empty window")
        if window[0] < 0 or (window[0] == 0 and len(window) == 1):
            if len(window) != 1:
                raise FormatError(f"ilabel info: input label {j} {window} is for grammar "
                                  f"FSTs (nonterminals), which are not supported")
            tid = next_disambig
            next_disambig += 1
            disambig.append(tid)
            s = len(arcs)
            arcs.append([(0, 0, 0.0, 0)])  # its final state, back to the loop state
            arcs[0].append((tid, j, 0.0, s))
            continue
        if len(window) != n:
            raise FormatError(f"ilabel info: input label {j} has window {window}, the tree "
                              f"{tree.name} has context width {n}: the graph's context does "
                              f"not match the tree")
        phone = window[p]
        if phone <= 0:
            raise FormatError(f"ilabel info: input label {j} {window} has no central phone")
        hmm = _hmm_for(window, phone, tree, tm, nsl, scale, hmms)
        cached = entry_arc.get(id(hmm))
        if cached is not None:
            arcs[0].append((cached[0], j, cached[1], cached[2]))
            continue
        state_map = []
        for k in range(hmm.num_states):
            if k == 0 and hmm.share_start:
                state_map.append(0)
            else:
                state_map.append(len(arcs))
                arcs.append([])
        if not hmm.share_start:
            entry_arc[id(hmm)] = (0, np.float32(0.0), state_map[0])
            arcs[0].append((0, j, 0.0, state_map[0]))
        for k in range(hmm.num_states):
            for tid, w, frm, to in hmm.arcs:
                if frm != k:
                    continue
                shared = k == 0 and hmm.share_start
                arcs[state_map[k]].append((tid, j if shared else 0, w, state_map[to]))
                if shared:
                    entry_arc[id(hmm)] = (tid, w, state_map[to])
            if k == hmm.final:
                arcs[state_map[k]].append((0, 0, 0.0, 0))
    final = np.full(len(arcs), np.inf, dtype=np.float32)
    final[0] = 0.0
    return FstArrays.from_lists(0, final, arcs), disambig


def _hmm_for(window, phone, tree, tm, nsl, scale, hmms) -> _HmmFsa:
    entry = tm.topology.topology_for_phone(phone)
    n_classes = 1 + max(max(s.forward_pdf_class, s.self_loop_pdf_class) for s in entry)
    pdfs = []
    for c in range(n_classes):
        pdf = tree.compute(window, c)
        if pdf is None:
            raise FormatError(f"the tree {tree.name} has no pdf for phone window {window}, "
                              f"pdf-class {c}: the tree does not belong to this lang dir")
        pdfs.append(pdf)
    key = (phone, tuple(pdfs))
    hmm = hmms.get(key)
    if hmm is None:
        hmm = hmms[key] = _HmmFsa(tm, nsl, phone, pdfs, scale)
    return hmm


expf, logf = _libm()
