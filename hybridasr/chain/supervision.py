"""Chain supervision (numerator graphs) from phone alignments, as Kaldi's
``chain/chain-supervision.cc``: ``AlignmentToProtoSupervision`` gives, per frame at the
subsampled rate, the phones allowed there (each phone from ``left_tolerance`` input frames
before its start to ``right_tolerance`` after its end, mapped to output frames by
``ceil(t / factor)``); ``ProtoSupervisionToSupervision`` composes the phone sequence with the
context (the tree's windows, 0 at the utterance edges) and the HMMs (self-loops reordered, as
``AddSelfLoops --reorder=true``: a state's forward pdf on its first frame, its self-loop pdf
after) and keeps only the paths whose every frame's phone is allowed at that frame (Kaldi's
``TimeEnforcerFst``). The result is time-synchronous (each state has one frame), an
epsilon-free acceptor of pdf-id + 1 with weights 0, determinized and minimized as Kaldi's, so
each pdf sequence is one path; ``supervision.frames[s]`` is the frame of state s.

``split_supervision`` cuts a frame range out of it as Kaldi's ``SupervisionSplitter``: the
states at the range's first frame become initial (one new start state, their arcs copied to
it: Kaldi's epsilons then ``RmEpsilon``), arcs leaving the range go to one final state, then
determinize and minimize. The chunks of one width batch in ``NumGraphs.from_fsts``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Sequence, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.kaldi.hmm_topology import NO_PDF
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency
from hybridasr.options import option
from hybridasr.tree.stats import phone_windows

__all__ = ["SupervisionOptions", "Supervision", "proto_supervision", "make_supervision",
           "alignment_supervision", "split_supervision"]


@dataclass
class SupervisionOptions:
    """Kaldi's ``SupervisionOptions`` (chain-get-supervision)."""
    left_tolerance: int = option(5, "left tolerance for shift in phone position relative to "
                                    "the alignment (input frames)", minimum=0)
    right_tolerance: int = option(5, "right tolerance for shift in phone position relative "
                                     "to the alignment (input frames)", minimum=0)
    frame_subsampling_factor: int = option(1, "frame subsampling factor of the model (chain "
                                              "recipes: 3)", minimum=1)

    def check(self) -> None:
        if min(self.left_tolerance, self.right_tolerance) < 0 or \
                self.frame_subsampling_factor < 1 or \
                self.left_tolerance + self.right_tolerance + 1 < self.frame_subsampling_factor:
            raise ConfigError(f"chain supervision: need tolerances >= 0 and --left-tolerance + "
                              f"--right-tolerance + 1 >= --frame-subsampling-factor, got "
                              f"{self.left_tolerance}, {self.right_tolerance}, "
                              f"{self.frame_subsampling_factor}")


@dataclass
class Supervision:
    fst: FstArrays           # labels pdf-id + 1, states numbered in frame order
    frames: np.ndarray       # frame of each state (0 .. num_frames)
    num_frames: int          # at the subsampled rate


def proto_supervision(phones: Sequence[int], durations: Sequence[int],
                      opts: SupervisionOptions) -> List[FrozenSet[int]]:
    """``AlignmentToProtoSupervision``: the allowed phones of each output frame."""
    opts.check()
    if not len(phones) or len(phones) != len(durations) or min(durations) <= 0 or \
            min(phones) <= 0:
        raise FormatError("chain supervision: need a non-empty phone sequence with positive "
                          "phones and durations")
    factor = opts.frame_subsampling_factor
    total = int(sum(durations))
    allowed: List[set] = [set() for _ in range((total + factor - 1) // factor)]
    cur = 0
    for phone, dur in zip(phones, durations):
        t0 = max(0, cur - opts.left_tolerance)
        t1 = min(total, cur + dur + opts.right_tolerance)
        for t in range((t0 + factor - 1) // factor, (t1 + factor - 1) // factor):
            allowed[t].add(int(phone))
        cur += dur
    return [frozenset(a) for a in allowed]


def _hmm_arcs(tree: ContextDependency, tm: TransitionModel, phones: Sequence[int]):
    """The reordered HMM of the phone sequence: nodes (instance, state); per node its
    self-loop pdf (or -1) and its successors [(node, forward pdf of the successor)]; the
    entry node with its pdf; the nodes that may end the utterance."""
    topo = tm.topology
    windows = phone_windows(np.asarray(phones), tree.context_width, tree.central_position)
    fwd: Dict[Tuple[int, int], int] = {}
    loop: Dict[Tuple[int, int], int] = {}
    exits: Dict[Tuple[int, int], List[int]] = {}
    for i, (ph, win) in enumerate(zip(phones, windows.tolist())):
        entry = topo.topology_for_phone(int(ph))
        if entry[0].forward_pdf_class == NO_PDF:
            raise FormatError(f"phone {ph}: HMMs starting in a non-emitting state are not "
                              f"supported")
        for s, st in enumerate(entry[:-1]):
            f = tree.compute(win, st.forward_pdf_class)
            lp = tree.compute(win, st.self_loop_pdf_class)
            if f is None or lp is None:
                raise FormatError(f"the tree {tree.name} has no pdf for phone window {win}")
            fwd[(i, s)] = f
            loop[(i, s)] = lp if any(d == s for d, _ in st.transitions) else -1
            exits[(i, s)] = sorted({d for d, _ in st.transitions if d != s})
    last = len(entry) - 1 if len(phones) else 0
    return fwd, loop, exits, topo, last


def make_supervision(phones: Sequence[int], durations: Sequence[int],
                     tree: ContextDependency, tm: TransitionModel,
                     opts: SupervisionOptions = SupervisionOptions()) -> Supervision:
    """The numerator graph of an alignment given as phones and their durations (input
    frames); an error naming the reason when no path fits the tolerances."""
    allowed = proto_supervision(phones, durations, opts)
    fwd, loop, exits, topo, _ = _hmm_arcs(tree, tm, phones)
    n_inst = len(phones)
    final_of = {i: len(topo.topology_for_phone(int(phones[i]))) - 1 for i in range(n_inst)}

    def successors(node):
        i, s = node
        for d in exits[node]:
            if d == final_of[i]:
                if i + 1 < n_inst:
                    yield (i + 1, 0)
            else:
                yield (i, d)

    num_t = len(allowed)
    # forward: states (t, node); arcs (t, src node, pdf, dst node)
    layer = {}
    start_ok = int(phones[0]) in allowed[0]
    arcs: List[Tuple[int, tuple, int, tuple]] = []
    if start_ok:
        layer = {(0, 0)}
        arcs.append((0, None, fwd[(0, 0)], (0, 0)))
    for t in range(1, num_t):
        nxt = set()
        ok = allowed[t]
        for node in layer:
            if loop[node] >= 0 and int(phones[node[0]]) in ok:
                arcs.append((t, node, loop[node], node))
                nxt.add(node)
            for d in successors(node):
                if int(phones[d[0]]) in ok:
                    arcs.append((t, node, fwd[d], d))
                    nxt.add(d)
        layer = nxt
    ends = {n for n in layer if n[0] == n_inst - 1 and final_of[n[0]] in exits[n]}
    if not ends:
        raise FormatError(f"chain supervision: no path of {num_t} frames through the "
                          f"{n_inst} phones fits the tolerances")
    # backward trim: keep arcs on a path to an end state at the last frame
    live = {(num_t - 1, n) for n in ends}
    kept = []
    for t, src, pdf, dst in reversed(arcs):
        if (t, dst) in live:
            kept.append((t, src, pdf, dst))
            if src is not None:
                live.add((t - 1, src))
    ids: Dict[tuple, int] = {"start": 0}
    src_l, lab_l, dst_l = [], [], []
    for t, src, pdf, dst in reversed(kept):
        s = 0 if src is None else ids[(t - 1, src)]
        d = ids.setdefault((t, dst), len(ids))
        src_l.append(s), lab_l.append(pdf + 1), dst_l.append(d)
    final = np.full(len(ids), np.inf, dtype=np.float32)
    for n in ends:
        if (num_t - 1, n) in ids:
            final[ids[(num_t - 1, n)]] = 0.0
    return _finish(src_l, lab_l, dst_l, final, num_t)


def _finish(src, lab, dst, final, num_t) -> Supervision:
    """Determinize, minimize, number the states in frame order."""
    import kaldifst

    src, lab, dst = (np.asarray(x, dtype=np.int64) for x in (src, lab, dst))
    order = np.argsort(src, kind="stable")
    raw = FstArrays(0, final, src[order], lab[order], lab[order].copy(),
                    np.zeros(len(src), np.float32), dst[order])
    f = kaldifst.determinize(raw.to_fst())
    kaldifst.minimize(f)
    fst = FstArrays.from_fst(kaldifst.StdVectorFst(f))
    frames = np.full(fst.num_states, -1, dtype=np.int64)
    frames[fst.start] = 0
    for _ in range(num_t):  # the graph is acyclic with all paths of num_t arcs
        seen = frames[fst.src] >= 0
        frames[fst.dst[seen]] = frames[fst.src[seen]] + 1
    if np.any(frames < 0):
        raise FormatError("chain supervision: a state without a frame (a bug)")
    new_id = np.empty(fst.num_states, dtype=np.int64)
    order = np.lexsort((np.arange(fst.num_states), frames))
    new_id[order] = np.arange(fst.num_states)
    s, d = new_id[fst.src], new_id[fst.dst]
    arc_order = np.lexsort((fst.ilabel, s))
    out = FstArrays(int(new_id[fst.start]), fst.final[order], s[arc_order],
                    fst.ilabel[arc_order], fst.olabel[arc_order], fst.weight[arc_order],
                    d[arc_order])
    return Supervision(out, frames[order], num_t)


def alignment_supervision(tm_ali: TransitionModel, ali: np.ndarray, tree: ContextDependency,
                          tm: TransitionModel, opts: SupervisionOptions = SupervisionOptions(),
                          what: str = "alignment") -> Supervision:
    """The numerator graph of an alignment of ``tm_ali`` (input frame rate; the GMM's) for the
    chain tree and model: its phones and durations (``ali-to-phones --write-lengths``)."""
    from hybridasr.align.phones import phone_segments

    segs = phone_segments(tm_ali, ali, what)
    try:
        return make_supervision([p for p, _ in segs], [n for _, n in segs], tree, tm, opts)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") from None


def split_supervision(sup: Supervision, begin: int, num_frames: int) -> FstArrays:
    """The numerator graph of output frames [begin, begin + num_frames)."""
    end = begin + num_frames
    if num_frames <= 0 or begin < 0 or end > sup.num_frames:
        raise FormatError(f"chain supervision: frame range [{begin}, {end}) is not inside the "
                          f"{sup.num_frames} frames")
    f = sup.fst
    fr_src = sup.frames[f.src]
    inside = (fr_src >= begin) & (fr_src < end)
    states = np.flatnonzero((sup.frames >= begin) & (sup.frames < end))
    new_id = np.full(f.num_states, -1, dtype=np.int64)
    new_id[states] = np.arange(1, len(states) + 1)  # 0: the new start
    final_state = len(states) + 1
    src, lab, dst = [], [], []
    for a in np.flatnonzero(inside).tolist():
        d = final_state if sup.frames[f.dst[a]] >= end else int(new_id[f.dst[a]])
        s = int(new_id[f.src[a]])
        src.append(s), lab.append(int(f.ilabel[a])), dst.append(d)
        if sup.frames[f.src[a]] == begin:
            src.append(0), lab.append(int(f.ilabel[a])), dst.append(d)
    final = np.full(final_state + 1, np.inf, dtype=np.float32)
    final[final_state] = 0.0
    out = _finish(src, lab, dst, final, num_frames).fst
    return _connect(out)


def _connect(fst: FstArrays) -> FstArrays:
    import kaldifst

    f = fst.to_fst()
    kaldifst.connect(f)
    return FstArrays.from_fst(f)
