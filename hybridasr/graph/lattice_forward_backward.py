"""Forward-backward over Kaldi lattices, for sequence-discriminative training.

A ``CompactLattice`` (``hybridasr.kaldi.lattice``: word arcs carrying strings of
transition-ids) becomes a ``FrameLattice``: one transition-id per arc, every arc one frame, so
that each state has one time (Kaldi's ``LatticeStateTimes``) and each arc goes from a state of
time t to one of time t + 1. Word arcs with an empty string (epsilon arcs) are removed first,
their weight moved onto the arcs and final weights after them, as the log semiring needs.
Graph costs are kept (a word arc's on its first frame); acoustic costs are dropped: the
lattice is rescored with the network's current log-likelihoods, as nnet1's
``nnet-train-mpe-sequential`` does with ``--old-acoustic-scale=0`` (its default).

``forward_backward`` runs over a batch of such lattices at once, a frame at a time (each step a
few vectorised numpy operations over the arcs of that frame in every lattice), in the log
semiring, in float64. It gives each lattice's total log-probability and each arc's posterior
(MMI's denominator occupancies), and with per-arc frame accuracies Kaldi's
``LatticeForwardBackwardMpeVariants``: the expected frame accuracy of each lattice and each
arc's sMBR posterior ``gamma * (expected accuracy of the paths through the arc - expected
accuracy)``, the derivative of the expected accuracy with respect to the arc's log-likelihood.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import CompactLattice

__all__ = ["FrameLattice", "frame_lattice", "LatticeBatch", "ForwardBackwardResult",
           "forward_backward", "lattice_to_post", "path_enumeration"]


@dataclass
class FrameLattice:
    """A lattice of one transition-id per arc; arc i leaves ``src[i]`` at frame ``time[i]``
    for ``dst[i]`` (at frame ``time[i] + 1``); state 0 is the start; ``final``: each state's
    final graph cost (inf: not final), every final state at frame ``num_frames``."""
    num_frames: int
    num_states: int
    src: np.ndarray    # int64
    dst: np.ndarray    # int64
    tid: np.ndarray    # int32 transition-ids (> 0)
    time: np.ndarray   # int32
    graph: np.ndarray  # float64 graph costs
    final: np.ndarray  # float64 [num_states]

    @property
    def num_arcs(self) -> int:
        return len(self.src)


def _logadd_cost(a: float, b: float) -> float:
    """-log(exp(-a) + exp(-b)) of two costs."""
    if a == math.inf:
        return b
    if b == math.inf:
        return a
    m = min(a, b)
    return m - math.log1p(math.exp(-abs(a - b)))


def frame_lattice(lat: CompactLattice, what: str = "lattice") -> FrameLattice:
    """The ``FrameLattice`` of a CompactLattice (see the module's docstring); FormatError if
    it has a cycle or its states have no consistent times, or its final states are not all at
    its last frame."""
    if lat.start < 0:
        raise FormatError(f"{what}: empty lattice (no start state)")
    order = lat.topological_order()
    n = lat.num_states
    out: List[list] = [[] for _ in range(n)]  # per compact state: [dst, tid, graph] frame arcs
    extra: List[list] = []                    # arcs from chain states
    final = [math.inf] * n
    eps: List[List[Tuple[int, float]]] = [[] for _ in range(n)]

    def chain(s: int, tids, g: float, dest: Optional[int]) -> None:
        """Frame arcs of ``tids`` from s to dest (None: to a new final state of cost g)."""
        nonlocal n
        prev, cost = s, g
        for i, t in enumerate(tids):
            last = i == len(tids) - 1
            if last and dest is not None:
                nxt = dest
            else:
                nxt = n
                n += 1
                final.append(math.inf)
            (out[prev] if prev < len(out) else extra).append([prev, nxt, int(t), cost])
            prev, cost = nxt, 0.0
        if dest is None:
            final[prev] = g if len(tids) == 0 else 0.0

    for s in range(lat.num_states):
        for a in lat.arcs[s]:
            if a.tids:
                chain(s, a.tids, a.graph, a.next)
            else:
                eps[s].append((a.next, a.graph))
        if s in lat.finals:
            g, _, tids = lat.finals[s]
            if tids:
                chain(s, tids, g, None)
            else:
                final[s] = g
    if any(eps):  # epsilon word arcs: s gets the arcs and final weight after each, reweighted
        for s in reversed(order):
            for nxt, c in eps[s]:
                out[s].extend([s, d, t, g + c] for _, d, t, g in out[nxt])
                if final[nxt] != math.inf:
                    final[s] = _logadd_cost(final[s], final[nxt] + c)
    rows = [r for arcs in out for r in arcs] + extra
    if not rows:
        raise FormatError(f"{what}: the lattice has no frames")
    src = np.array([r[0] for r in rows], dtype=np.int64)
    dst = np.array([r[1] for r in rows], dtype=np.int64)
    tid = np.array([r[2] for r in rows], dtype=np.int32)
    graph = np.array([r[3] for r in rows], dtype=np.float64)
    fin = np.asarray(final, dtype=np.float64)
    # renumber so that the start is 0
    if lat.start != 0:
        perm = np.arange(n)
        perm[[0, lat.start]] = perm[[lat.start, 0]]
        src, dst = perm[src], perm[dst]
        fin = fin[np.argsort(perm)]
    times = _state_times(src, dst, n, what)
    keep = times[src] >= 0  # arcs from states the start reaches
    src, dst, tid, graph = src[keep], dst[keep], tid[keep], graph[keep]
    if np.any(times[dst] != times[src] + 1):
        raise FormatError(f"{what}: its states have no consistent times (not a lattice of "
                          f"frames)")
    fin = np.where(times >= 0, fin, math.inf)
    final_times = np.unique(times[np.isfinite(fin)])
    if len(final_times) == 0:
        raise FormatError(f"{what}: no final state")
    if len(final_times) > 1:
        raise FormatError(f"{what}: final states at frames {final_times.tolist()} (all must "
                          f"be at the last frame)")
    t = times[src].astype(np.int32)
    return FrameLattice(int(final_times[0]), n, src, dst, tid, t, graph, fin)


def _state_times(src: np.ndarray, dst: np.ndarray, n: int, what: str) -> np.ndarray:
    """Each state's frame (-1: not reached from state 0), frontier by frontier."""
    order = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order], np.arange(n + 1))
    times = np.full(n, -1, dtype=np.int64)
    frontier = np.array([0])
    times[0] = 0
    t = 0
    while len(frontier):
        lo, hi = starts[frontier], starts[frontier + 1]
        cnt = hi - lo
        total = int(cnt.sum())
        if total == 0:
            break
        first = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
        nxt = np.unique(dst[order[first + np.arange(total)]])
        t += 1
        if np.any(times[nxt] >= 0):
            raise FormatError(f"{what}: a state reached at two different frames (a cycle, or "
                              f"not a lattice of frames)")
        times[nxt] = t
        frontier = nxt
    return times


@dataclass
class LatticeBatch:
    """Several FrameLattices as one: states and arcs concatenated (lattice b's states from
    ``state_offset[b]``), ``row`` the lattice of each arc."""
    src: np.ndarray
    dst: np.ndarray
    tid: np.ndarray
    time: np.ndarray
    graph: np.ndarray
    row: np.ndarray
    final: np.ndarray
    start: np.ndarray          # the start state of each lattice
    num_frames: np.ndarray
    final_row: np.ndarray      # the lattice of each state

    @classmethod
    def of(cls, lats: Sequence[FrameLattice]) -> "LatticeBatch":
        offs = np.cumsum([0] + [lt.num_states for lt in lats])
        cat = lambda f, off=False: np.concatenate(  # noqa: E731
            [getattr(lt, f) + (offs[i] if off else 0) for i, lt in enumerate(lats)])
        row = np.concatenate([np.full(lt.num_arcs, i, dtype=np.int64)
                              for i, lt in enumerate(lats)])
        srow = np.concatenate([np.full(lt.num_states, i, dtype=np.int64)
                               for i, lt in enumerate(lats)])
        return cls(cat("src", True), cat("dst", True), cat("tid"), cat("time"), cat("graph"),
                   row, cat("final"), offs[:-1].astype(np.int64),
                   np.array([lt.num_frames for lt in lats]), srow)


@dataclass
class ForwardBackwardResult:
    logz: np.ndarray                          # [B] total log-probability (-inf: no path)
    posterior: np.ndarray                     # [arcs] arc occupation (0 where logz is -inf)
    expected_accuracy: Optional[np.ndarray]   # [B] (with accuracies)
    smbr_posterior: Optional[np.ndarray]      # [arcs] d expected accuracy / d arc score


def _segments(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(start of each run of equal keys, run index of each element)."""
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(keys)]))
    return starts, seg


def _logsumexp_segments(v: np.ndarray, starts: np.ndarray, seg: np.ndarray) -> np.ndarray:
    m = np.maximum.reduceat(v, starts)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.add.reduceat(np.exp(v - m[seg]), starts)
    with np.errstate(divide="ignore"):
        return m + np.log(s)


def _sweeps(key: np.ndarray, time: np.ndarray, num_frames: int):
    """Per frame: (arc indices sorted by ``key``, segment starts, segment index)."""
    order = np.lexsort((key, time))
    bounds = np.searchsorted(time[order], np.arange(num_frames + 1))
    out = []
    for t in range(num_frames):
        a = order[bounds[t]:bounds[t + 1]]
        if len(a) == 0:
            out.append(None)
            continue
        starts, seg = _segments(key[a])
        out.append((a, starts, seg))
    return out


def forward_backward(batch: LatticeBatch, scores: np.ndarray,
                     accuracy: Optional[np.ndarray] = None) -> ForwardBackwardResult:
    """``scores``: each arc's log-likelihood (acoustic scale and graph costs applied, e.g.
    ``acwt * loglike - lm_scale * graph``); ``accuracy``: each arc's frame accuracy (sMBR,
    MPFE), or None for occupancies alone."""
    scores = np.asarray(scores, dtype=np.float64)
    num_states = len(batch.final)
    frames = int(batch.num_frames.max()) if len(batch.num_frames) else 0
    fwd = _sweeps(batch.dst, batch.time, frames)
    bwd = _sweeps(batch.src, batch.time, frames)
    src, dst = batch.src, batch.dst
    alpha = np.full(num_states, -np.inf)
    alpha[batch.start] = 0.0
    for step in fwd:
        if step is None:
            continue
        a, starts, seg = step
        alpha[dst[a[starts]]] = _logsumexp_segments(alpha[src[a]] + scores[a], starts, seg)
    final_like = -batch.final
    beta = final_like.copy()
    for step in reversed(bwd):
        if step is None:
            continue
        a, starts, seg = step
        u = src[a[starts]]
        beta[u] = np.logaddexp(beta[u], _logsumexp_segments(beta[dst[a]] + scores[a],
                                                            starts, seg))
    logz = beta[batch.start]
    ok = np.isfinite(logz)
    lz = np.where(ok, logz, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        post = np.exp(alpha[src] + scores + beta[dst] - lz[batch.row])
    post = np.where(ok[batch.row] & np.isfinite(post), post, 0.0)
    if accuracy is None:
        return ForwardBackwardResult(logz, post, None, None)
    acc = np.asarray(accuracy, dtype=np.float64)
    alpha_acc = np.zeros(num_states)
    with np.errstate(invalid="ignore", over="ignore"):
        for step in fwd:
            if step is None:
                continue
            a, starts, seg = step
            w = np.exp(alpha[src[a]] + scores[a] - alpha[dst[a]])
            w = np.where(np.isfinite(w), w, 0.0)
            alpha_acc[dst[a[starts]]] = np.add.reduceat(w * (alpha_acc[src[a]] + acc[a]),
                                                        starts)
        fw = np.exp(alpha + final_like - lz[batch.final_row])
        fw = np.where(np.isfinite(fw), fw, 0.0)
        expected = np.bincount(batch.final_row, weights=fw * alpha_acc,
                               minlength=len(logz))
        beta_acc = np.zeros(num_states)
        for step in reversed(bwd):
            if step is None:
                continue
            a, starts, seg = step
            w = np.exp(scores[a] + beta[dst[a]] - beta[src[a]])
            w = np.where(np.isfinite(w), w, 0.0)
            beta_acc[src[a[starts]]] = np.add.reduceat(w * (acc[a] + beta_acc[dst[a]]), starts)
    smbr = post * (alpha_acc[src] + acc + beta_acc[dst] - expected[batch.row])
    return ForwardBackwardResult(logz, post, np.where(ok, expected, 0.0), smbr)


def lattice_to_post(lat: CompactLattice, loglikes: np.ndarray, tid2pdf: np.ndarray,
                    acoustic_scale: float, what: str = "lattice"
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kaldi's ``lattice-to-post --acoustic-scale``: each frame's transition-id posteriors
    in a lattice whose acoustic scores are ``loglikes`` [T, pdfs] (the lattice's own
    acoustic costs are not read) times ``acoustic_scale``, its graph costs at scale 1.
    Returns (frame, transition-id, posterior) of every arc of non-zero posterior, the same
    (frame, transition-id) summed; FormatError as ``frame_lattice``, or if the lattice's
    frames are not the matrix's rows."""
    fl = frame_lattice(lat, what)
    ll = np.asarray(loglikes, dtype=np.float64)
    if fl.num_frames != len(ll):
        raise FormatError(f"{what}: {fl.num_frames} frames, its log-likelihoods {len(ll)}")
    scores = acoustic_scale * ll[fl.time, np.asarray(tid2pdf)[fl.tid]] - fl.graph
    r = forward_backward(LatticeBatch.of([fl]), scores)
    if not np.isfinite(r.logz[0]):
        raise FormatError(f"{what}: no path through the lattice")
    n = int(fl.tid.max()) + 1
    uniq, inv = np.unique(fl.time.astype(np.int64) * n + fl.tid, return_inverse=True)
    post = np.bincount(inv, weights=r.posterior, minlength=len(uniq))
    keep = post > 0
    return uniq[keep] // n, uniq[keep] % n, post[keep]


def path_enumeration(lat: FrameLattice, scores: np.ndarray,
                     accuracy: Optional[np.ndarray] = None, limit: int = 200000):
    """Every complete path of a small lattice (tests): (arc indices, log-likelihood including
    the final weight, accuracy) per path; ValueError past ``limit`` paths."""
    by_src: dict = {}
    for i, s in enumerate(lat.src.tolist()):
        by_src.setdefault(s, []).append(i)
    out = []
    stack = [(0, [], 0.0, 0.0)]
    while stack:
        s, arcs, like, acc = stack.pop()
        if math.isfinite(lat.final[s]):
            out.append((arcs, like - lat.final[s], acc))
            if len(out) > limit:
                raise ValueError(f"more than {limit} paths")
        for i in by_src.get(s, []):
            stack.append((int(lat.dst[i]), arcs + [i], like + float(scores[i]),
                          acc + (float(accuracy[i]) if accuracy is not None else 0.0)))
    return out
