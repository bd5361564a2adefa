"""Chain supervision (numerator graphs) from phone alignments or phone lattices, as Kaldi's
``chain/chain-supervision.cc``. The input is a ``PhoneLattice``: an acyclic acceptor of phones
whose states carry their input frame (an alignment is its linear instance,
``PhoneLattice.linear``; a Kaldi lattice becomes one in
``hybridasr.chain.lattice_supervision``). ``allowed_phones`` (Kaldi's
``AlignmentToProtoSupervision`` / ``PhoneLatticeToProtoSupervision``) gives, per frame at the
subsampled rate, the phones allowed there: the union over the phone arcs of each arc's phone
from ``left_tolerance`` input frames before its start to ``right_tolerance`` after its end,
mapped to output frames by ``ceil(t / factor)``; ``ProtoSupervisionToSupervision`` composes the
phone acceptor with the context (the tree's windows along each path, 0 at the utterance edges)
and the HMMs (self-loops reordered, as
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

__all__ = ["SupervisionOptions", "Supervision", "PhoneLattice", "allowed_phones",
           "proto_supervision", "make_supervision", "phone_lattice_supervision",
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


@dataclass
class PhoneLattice:
    """An acyclic acceptor of phones with times: arc a goes ``src[a] -> dst[a]`` with
    ``phone[a]``; ``times[s]`` is the input frame of state s (every path to it has that many
    frames), so an arc's phone starts at ``times[src]`` and lasts ``times[dst] - times[src]``
    frames; ``final``: the states that end the utterance (all at ``num_frames``)."""
    start: int
    src: np.ndarray
    dst: np.ndarray
    phone: np.ndarray
    times: np.ndarray
    final: np.ndarray  # bool per state

    @property
    def num_states(self) -> int:
        return len(self.times)

    @property
    def num_frames(self) -> int:
        return int(self.times[self.final].max()) if self.final.any() else 0

    @classmethod
    def linear(cls, phones: Sequence[int], durations: Sequence[int]) -> "PhoneLattice":
        """The phone sequence of an alignment (durations in input frames)."""
        if not len(phones) or len(phones) != len(durations) or min(durations) <= 0 or \
                min(phones) <= 0:
            raise FormatError("chain supervision: need a non-empty phone sequence with "
                              "positive phones and durations")
        n = len(phones)
        final = np.zeros(n + 1, dtype=bool)
        final[n] = True
        return cls(0, np.arange(n), np.arange(1, n + 1), np.asarray(phones, dtype=np.int64),
                   np.concatenate([[0], np.cumsum(durations)]).astype(np.int64), final)

    def check(self) -> None:
        """Raises FormatError unless every arc has a phone and lasts a frame or more, the
        start is at frame 0 and every final state at the same frame."""
        if not len(self.src) or not self.final.any():
            raise FormatError("chain supervision: an empty phone lattice")
        t = self.times
        if t[self.start] != 0 or np.any(self.phone <= 0) or \
                np.any(t[self.dst] <= t[self.src]) or \
                np.any(t[self.final] != self.num_frames):
            raise FormatError("chain supervision: a phone lattice needs positive phones, arcs "
                              "of at least one frame, its start at frame 0 and all final "
                              "states at one frame")


def allowed_phones(lat: PhoneLattice, opts: SupervisionOptions) -> List[FrozenSet[int]]:
    """The allowed phones of each output frame (Kaldi's proto-supervision): each arc's phone
    from ``left_tolerance`` input frames before its start to ``right_tolerance`` after its
    end, the union over the arcs."""
    opts.check()
    lat.check()
    factor = opts.frame_subsampling_factor
    total = lat.num_frames
    allowed: List[set] = [set() for _ in range((total + factor - 1) // factor)]
    for begin, end, phone in zip(lat.times[lat.src].tolist(), lat.times[lat.dst].tolist(),
                                 lat.phone.tolist()):
        t0 = max(0, begin - opts.left_tolerance)
        t1 = min(total, end + opts.right_tolerance)
        for t in range((t0 + factor - 1) // factor, (t1 + factor - 1) // factor):
            allowed[t].add(phone)
    return [frozenset(a) for a in allowed]


def proto_supervision(phones: Sequence[int], durations: Sequence[int],
                      opts: SupervisionOptions) -> List[FrozenSet[int]]:
    """``AlignmentToProtoSupervision``: the allowed phones of each output frame."""
    opts.check()
    return allowed_phones(PhoneLattice.linear(phones, durations), opts)


def _context_instances(lat: PhoneLattice, width: int, central: int):
    """The phone arcs in context (Kaldi's ``ComposeContextFst`` on the phone acceptor): one
    instance per (arc, the ``central`` phones before it on a path, the ``width - 1 -
    central`` after it; 0 past the utterance's edges). Returns per instance its arc and
    window, its successor instances, the instances that may start and those that may end
    the utterance."""
    left, right = central, width - 1 - central
    order = np.argsort(lat.times, kind="stable")  # arcs go forward in time: a topological order
    out_arcs: List[List[int]] = [[] for _ in range(lat.num_states)]
    for a, s in enumerate(lat.src.tolist()):
        out_arcs[s].append(a)
    phone = lat.phone.tolist()
    pasts: List[set] = [set() for _ in range(lat.num_states)]
    pasts[lat.start].add((0,) * left)
    for s in order.tolist():
        for a in out_arcs[s]:
            for h in pasts[s]:
                pasts[lat.dst[a]].add((h + (phone[a],))[1:] if left else ())
    futures: List[set] = [set() for _ in range(lat.num_states)]
    for s in order[::-1].tolist():
        if lat.final[s]:
            futures[s].add((0,) * right)
        for a in out_arcs[s]:
            for f in futures[lat.dst[a]]:
                futures[s].add(((phone[a],) + f)[:right])
    insts: List[Tuple[int, tuple, tuple]] = []
    by_arc_past: Dict[Tuple[int, tuple], List[int]] = {}
    for a in range(len(phone)):
        for h in sorted(pasts[lat.src[a]]):
            for f in sorted(futures[lat.dst[a]]):
                by_arc_past.setdefault((a, h), []).append(len(insts))
                insts.append((a, h, f))
    succ: List[List[int]] = []
    for a, h, f in insts:
        h2 = (h + (phone[a],))[1:] if left else ()
        nxt = []
        for b in out_arcs[lat.dst[a]]:
            if right and phone[b] != f[0]:
                continue
            nxt += [j for j in by_arc_past.get((b, h2), []) if insts[j][2][:right - 1] == f[1:]]
        succ.append(nxt)
    starts = [j for j, (a, _, _) in enumerate(insts) if lat.src[a] == lat.start]
    ends = {j for j, (a, _, f) in enumerate(insts) if lat.final[lat.dst[a]] and not any(f)}
    windows = [h + (phone[a],) + f for a, h, f in insts]
    return [a for a, _, _ in insts], windows, succ, starts, ends


def _hmm_arcs(tree: ContextDependency, tm: TransitionModel, windows: Sequence[tuple],
              central: int):
    """The reordered HMMs of the instances: per node (instance, state) its forward pdf, its
    self-loop pdf (or -1) and the states it goes to (other than itself); per instance the
    final state of its phone."""
    topo = tm.topology
    fwd: Dict[Tuple[int, int], int] = {}
    loop: Dict[Tuple[int, int], int] = {}
    exits: Dict[Tuple[int, int], List[int]] = {}
    final_of: List[int] = []
    for i, win in enumerate(windows):
        ph = win[central]
        entry = topo.topology_for_phone(int(ph))
        if entry[0].forward_pdf_class == NO_PDF:
            raise FormatError(f"phone {ph}: HMMs starting in a non-emitting state are not "
                              f"supported")
        for s, st in enumerate(entry[:-1]):
            f = tree.compute(list(win), st.forward_pdf_class)
            lp = tree.compute(list(win), st.self_loop_pdf_class)
            if f is None or lp is None:
                raise FormatError(f"the tree {tree.name} has no pdf for phone window "
                                  f"{list(win)}")
            fwd[(i, s)] = f
            loop[(i, s)] = lp if any(d == s for d, _ in st.transitions) else -1
            exits[(i, s)] = sorted({d for d, _ in st.transitions if d != s})
        final_of.append(len(entry) - 1)
    return fwd, loop, exits, final_of


def make_supervision(phones: Sequence[int], durations: Sequence[int],
                     tree: ContextDependency, tm: TransitionModel,
                     opts: SupervisionOptions = SupervisionOptions()) -> Supervision:
    """The numerator graph of an alignment given as phones and their durations (input
    frames); an error naming the reason when no path fits the tolerances."""
    return phone_lattice_supervision(PhoneLattice.linear(phones, durations), tree, tm, opts)


def phone_lattice_supervision(lat: PhoneLattice, tree: ContextDependency, tm: TransitionModel,
                              opts: SupervisionOptions = SupervisionOptions()) -> Supervision:
    """The numerator graph of a phone lattice: its phone paths in context, through the
    HMMs, on the frames where ``allowed_phones`` allows each phone; an error naming the
    reason when no path fits the tolerances."""
    allowed = allowed_phones(lat, opts)
    arc_of, windows, succ, starts, end_insts = _context_instances(
        lat, tree.context_width, tree.central_position)
    fwd, loop, exits, final_of = _hmm_arcs(tree, tm, windows, tree.central_position)
    phone_of = [int(lat.phone[a]) for a in arc_of]

    def successors(node):
        i, s = node
        for d in exits[node]:
            if d == final_of[i]:
                for j in succ[i]:
                    yield (j, 0)
            else:
                yield (i, d)

    num_t = len(allowed)
    # forward: states (t, node); arcs (t, src node, pdf, dst node)
    layer = set()
    arcs: List[Tuple[int, tuple, int, tuple]] = []
    for j in starts:
        if phone_of[j] in allowed[0]:
            layer.add((j, 0))
            arcs.append((0, None, fwd[(j, 0)], (j, 0)))
    for t in range(1, num_t):
        nxt = set()
        ok = allowed[t]
        for node in layer:
            if loop[node] >= 0 and phone_of[node[0]] in ok:
                arcs.append((t, node, loop[node], node))
                nxt.add(node)
            for d in successors(node):
                if phone_of[d[0]] in ok:
                    arcs.append((t, node, fwd[d], d))
                    nxt.add(d)
        layer = nxt
    ends = {n for n in layer if n[0] in end_insts and final_of[n[0]] in exits[n]}
    if not ends:
        raise FormatError(f"chain supervision: no path of {num_t} frames through the "
                          f"{len(lat.src)} phone arcs fits the tolerances")
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
