"""Forward-backward over pdf-labelled graphs in the log semiring, several utterances at once.

A ``PdfGraph`` is an epsilon-free acceptor whose arcs each consume one frame: the arc's pdf
scores that frame, its log-weight is the graph's (HMM transitions, silence probabilities).
``forward_backward`` sums over all paths of each graph through its utterance's per-pdf scores
(``log Z``, the full-sum of Baum-Welch) and returns the occupation of each pdf at each frame
(``gamma``: the posterior of the graph's states given the scores, as Kaldi's
``LatticeForwardBackward`` gives for lattices and HTK's HERest for HMMs).

The graphs of a batch are laid side by side (states and arcs offset), so one frame step is a
handful of tensor operations over all arcs of all utterances; an utterance shorter than the
batch's longest ends at its own frame count. Computed without autograd: for scores that are
log-softmax outputs, ``d(-log Z)/d logits = softmax - gamma``, so callers train with
cross-entropy against ``gamma`` (``hybridasr.train.fullsum``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import torch

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays

__all__ = ["PdfGraph", "pdf_graph", "forward_backward", "NEG", "unreachable"]

NEG = -1.0e30  # log(0) kept finite: -inf - -inf would be NaN


@dataclass
class PdfGraph:
    start: int
    final: np.ndarray    # float32 [num_states] log final weight (NEG: not final)
    src: np.ndarray      # int64 [num_arcs]
    dst: np.ndarray      # int64 [num_arcs]
    pdf: np.ndarray      # int64 [num_arcs], 0-based
    logw: np.ndarray     # float32 [num_arcs]

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.src)

    def min_frames(self) -> int:
        """The fewest frames any path from the start to a final state takes (BFS)."""
        n = self.num_states
        dist = np.full(n, -1, np.int64)
        dist[self.start] = 0
        frontier = np.array([self.start])
        d = 0
        while len(frontier):
            if (self.final[frontier] > NEG / 2).any():
                return d
            d += 1
            mask = np.isin(self.src, frontier)
            nxt = np.unique(self.dst[mask])
            nxt = nxt[dist[nxt] < 0]
            dist[nxt] = d
            frontier = nxt
        return -1


def pdf_graph(fst, label2pdf: np.ndarray, what: str = "graph") -> PdfGraph:
    """A ``PdfGraph`` from a kaldifst ``StdVectorFst`` whose input labels ``i`` stand for
    ``label2pdf[i]`` (e.g. a transition model's ``tid2pdf``, or through a compact graph's
    ``local2tid``); tropical costs become log-weights. Epsilon input arcs are removed first
    (kaldifst ``rmepsilon``: over the tropical semiring, which keeps the cheapest of parallel
    epsilon paths; a training graph has none in parallel)."""
    import kaldifst

    g = kaldifst.StdVectorFst(fst)
    kaldifst.rmepsilon(g)
    kaldifst.connect(g)
    if g.start < 0 or g.num_states == 0:
        raise FormatError(f"{what}: no path from the start to a final state")
    a = FstArrays.from_fst(g)
    if (a.ilabel <= 0).any():
        raise FormatError(f"{what}: epsilon input arcs are left after rmepsilon")
    label2pdf = np.asarray(label2pdf, dtype=np.int64)
    if int(a.ilabel.max()) >= len(label2pdf):
        raise FormatError(f"{what}: input label {int(a.ilabel.max())} has no pdf")
    final = np.where(np.isfinite(a.final), -a.final, NEG).astype(np.float32)
    return PdfGraph(int(a.start), final, a.src.astype(np.int64), a.dst.astype(np.int64),
                    label2pdf[a.ilabel], (-a.weight).astype(np.float32))


def _logsumexp_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[j] = log sum_{i: index[i]=j} exp(values[i])`` (NEG where nothing arrives)."""
    m = torch.full((size,), NEG, dtype=values.dtype, device=values.device)
    m = m.scatter_reduce(0, index, values, reduce="amax", include_self=True)
    s = torch.zeros(size, dtype=values.dtype, device=values.device)
    s.index_add_(0, index, torch.exp(values - m[index]))
    return torch.clamp(m + torch.log(s), min=NEG)


def unreachable(logz: torch.Tensor) -> torch.Tensor:
    """Which utterances' graphs have no path of their frame count (bool [B])."""
    return logz < NEG / 2


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device):
    """On the CPU, one torch thread for the duration: the frame loop is thousands of small
    operations, which torch's thread pool only slows down (and with threads waiting on busy
    cores, by a hundred times: measured on a loaded 2-core machine)."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def forward_backward(graphs: Sequence[PdfGraph], scores: torch.Tensor,
                     lengths: Sequence[int]) -> Tuple[torch.Tensor, torch.Tensor]:
    """See ``_forward_backward``; on the CPU with one torch thread."""
    with _one_cpu_thread(scores.device), torch.no_grad():
        return _forward_backward(graphs, scores, lengths)


def _forward_backward(graphs: Sequence[PdfGraph], scores: torch.Tensor,
                      lengths: Sequence[int]) -> Tuple[torch.Tensor, torch.Tensor]:
    """``scores`` [B, T, P] (log-domain per-pdf scores, padded; float32, or float64 where
    given so); returns ``log Z`` [B] (NEG
    for an utterance whose graph has no path of ``lengths[b]`` frames: see ``unreachable``)
    and ``gamma`` [B, T, P] (zero on padding and on unreachable utterances)."""
    B, T, P = scores.shape
    if len(graphs) != B or len(lengths) != B:
        raise ValueError(f"{len(graphs)} graphs and {len(lengths)} lengths for {B} rows")
    dev = scores.device
    dt = torch.float64 if scores.dtype == torch.float64 else torch.float32
    offs = np.cumsum([0] + [g.num_states for g in graphs])
    S = int(offs[-1])
    cat = lambda xs: torch.from_numpy(np.concatenate(xs)).to(dev)  # noqa: E731
    src = cat([g.src + o for g, o in zip(graphs, offs)])
    dst = cat([g.dst + o for g, o in zip(graphs, offs)])
    arc_row = cat([np.full(g.num_arcs, b, np.int64) for b, g in enumerate(graphs)])
    col = arc_row * P + cat([g.pdf for g in graphs])
    logw = cat([g.logw for g in graphs]).to(dt)
    final = cat([g.final for g in graphs]).to(dt)
    state_row = torch.from_numpy(np.repeat(np.arange(B), np.diff(offs))).to(dev)
    lens = torch.as_tensor(list(lengths), dtype=torch.int64, device=dev)
    state_len = lens[state_row]
    # E[t, a]: the score of arc a's pdf at frame t of its utterance, plus its graph weight
    flat = scores.to(dt).transpose(0, 1).reshape(T, B * P)
    E = flat[:, col] + logw

    alpha = torch.full((T + 1, S), NEG, dtype=dt, device=dev)
    alpha[0, torch.as_tensor([int(o) + g.start for g, o in zip(graphs, offs)], device=dev)] = 0.0
    for t in range(T):
        alpha[t + 1] = _logsumexp_into(alpha[t, src] + E[t], dst, S)
    end = alpha[state_len, torch.arange(S, device=dev)] + final
    logz = _logsumexp_into(end, state_row, B)

    beta = torch.empty((T + 1, S), dtype=dt, device=dev)
    beta[T] = final
    for t in range(T - 1, -1, -1):
        rec = _logsumexp_into(beta[t + 1, dst] + E[t], src, S)
        beta[t] = torch.where(state_len <= t, final, rec)

    arc_len = lens[arc_row]
    frames = torch.arange(T, device=dev).unsqueeze(1)
    log_occ = alpha[:T, src] + E + beta[1:, dst] - logz[arc_row]
    ok = (frames < arc_len) & ~unreachable(logz)[arc_row]
    occ = torch.where(ok, torch.exp(torch.clamp(log_occ, max=0.0)), torch.zeros((), dtype=dt))
    gamma = torch.zeros((T, B * P), dtype=dt, device=dev)
    gamma.index_add_(1, col, occ)
    return logz, gamma.reshape(T, B, P).transpose(0, 1).contiguous()


def brute_force(graph: PdfGraph, scores: np.ndarray) -> Tuple[float, np.ndarray]:
    """``(log Z, gamma)`` of one graph by enumerating every path of ``len(scores)`` frames
    (for tests: exponential in the frame count)."""
    T, P = scores.shape
    out: List[Tuple[float, List[int]]] = []

    def walk(state: int, t: int, lw: float, pdfs: List[int]) -> None:
        if t == T:
            if graph.final[state] > NEG / 2:
                out.append((lw + float(graph.final[state]), list(pdfs)))
            return
        for a in np.flatnonzero(graph.src == state):
            p = int(graph.pdf[a])
            walk(int(graph.dst[a]), t + 1, lw + float(graph.logw[a]) + float(scores[t, p]),
                 pdfs + [p])

    walk(graph.start, 0, 0.0, [])
    if not out:
        return NEG, np.zeros((T, P))
    ws = np.array([w for w, _ in out])
    logz = float(np.logaddexp.reduce(ws))
    gamma = np.zeros((T, P))
    for w, pdfs in out:
        for t, p in enumerate(pdfs):
            gamma[t, p] += np.exp(w - logz)
    return logz, gamma
