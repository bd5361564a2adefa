"""The numerator of LF-MMI: per-sequence supervision graphs (epsilon-free acceptors of pdf-id
+ 1 with costs, a start state and final costs, as Kaldi's chain supervision FSTs), batched
as one block-diagonal graph, forward in log space (scatter log-sum-exp per frame) with
autograd for the gradient (the numerator posteriors). The sequences of a batch may differ in
length: each ends at its own last frame (``lengths``), the rest of the (B, T) outputs being
padding.

``alignment_graph`` makes the simplest numerator: the linear acceptor of a pdf alignment
(one path); any per-utterance graph (e.g. a training graph mapped to pdf-id + 1 with its
epsilons removed) batches the same way."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays

__all__ = ["NumGraphs", "alignment_graph", "num_log_prob"]


def alignment_graph(pdfs: Sequence[int]) -> FstArrays:
    """The linear acceptor of a pdf-id sequence (labels pdf-id + 1)."""
    pdfs = np.asarray(pdfs, dtype=np.int64)
    n = len(pdfs)
    final = np.full(n + 1, np.inf, dtype=np.float32)
    final[n] = 0.0
    return FstArrays(0, final, np.arange(n), pdfs + 1, pdfs + 1, np.zeros(n, np.float32),
                     np.arange(1, n + 1))


@dataclass
class NumGraphs:
    """B graphs as one: arc arrays with global state ids, the sequence of each arc and state,
    start states, final log-probabilities (``-inf`` where not final)."""
    num_seqs: int
    num_states: int
    src: torch.Tensor
    dst: torch.Tensor
    pdf: torch.Tensor
    seq: torch.Tensor
    logprob: torch.Tensor
    start: torch.Tensor
    final: torch.Tensor
    state_seq: torch.Tensor

    @classmethod
    def from_fsts(cls, fsts: Sequence[FstArrays], num_pdfs: int, device=None,
                  dtype=torch.float32) -> "NumGraphs":
        srcs, dsts, pdfs, seqs, lps, starts, finals, sseq = [], [], [], [], [], [], [], []
        off = 0
        for b, f in enumerate(fsts):
            if f.start < 0 or f.num_states == 0:
                raise FormatError(f"numerator graph {b} is empty")
            if np.any(f.ilabel <= 0) or np.any(f.ilabel > num_pdfs):
                raise FormatError(f"numerator graph {b}: labels must be pdf-id + 1 in "
                                  f"1..{num_pdfs} (epsilons removed)")
            srcs.append(f.src + off)
            dsts.append(f.dst + off)
            pdfs.append(f.ilabel - 1)
            seqs.append(np.full(f.num_arcs, b))
            lps.append(-f.weight.astype(np.float64))
            starts.append(f.start + off)
            finals.append(-f.final.astype(np.float64))
            sseq.append(np.full(f.num_states, b))
            off += f.num_states
        t = lambda a, dt: torch.as_tensor(np.concatenate(a), dtype=dt, device=device)  # noqa
        return cls(len(fsts), off, t(srcs, torch.long), t(dsts, torch.long),
                   t(pdfs, torch.long), t(seqs, torch.long), t(lps, dtype),
                   torch.as_tensor(starts, dtype=torch.long, device=device),
                   t(finals, dtype), t(sseq, torch.long))


def _scatter_logsumexp(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    neg_inf = torch.finfo(values.dtype).min
    m = values.new_full((size,), neg_inf).scatter_reduce(0, index, values, "amax",
                                                         include_self=True)
    m = m.detach()
    s = values.new_zeros(size).index_add(0, index, torch.exp(values - m[index]))
    return torch.where(s > 0, m + torch.log(s.clamp_min(1e-300 if values.dtype ==
                                                        torch.float64 else 1e-30)),
                       values.new_full((size,), -float("inf")))


def num_log_prob(nnet_output: torch.Tensor, graphs: NumGraphs, lengths=None) -> torch.Tensor:
    """Per sequence, log of the sum over the graph's paths of
    ``exp(sum_t output[t, pdf_t] + path log-probability + final)``; -inf where no path has
    as many frames as the sequence. ``lengths`` (B,): each sequence's frames (from its last
    frame on its states keep their alphas; the padding is never read and gets zero
    gradient); None: all T. Differentiable by autograd (the gradient is the numerator
    posteriors)."""
    from hybridasr.chain.den_forward_backward import check_lengths

    b, t_len, num_pdfs = nnet_output.shape
    if b != graphs.num_seqs:
        raise FormatError(f"num_log_prob: {b} output sequences, {graphs.num_seqs} graphs")
    lengths, first_padded = check_lengths(lengths, nnet_output, "num_log_prob")
    if first_padded < t_len:  # frames each arc and state of the batch has
        arc_len, state_len = lengths[graphs.seq], lengths[graphs.state_seq]
    x = nnet_output.clamp(-30.0, 30.0)
    alpha = x.new_full((graphs.num_states,), -float("inf"))
    alpha = alpha.index_fill(0, graphs.start, 0.0)
    flat = x.reshape(b * t_len, num_pdfs)
    for t in range(t_len):
        emit = flat[graphs.seq * t_len + t, graphs.pdf]
        if t >= first_padded:
            emit = torch.where(arc_len > t, emit, 0.0)
        v = alpha[graphs.src] + graphs.logprob.to(x.dtype) + emit
        new = _scatter_logsumexp(v, graphs.dst, graphs.num_states)
        alpha = torch.where(state_len > t, new, alpha) if t >= first_padded else new
    return _scatter_logsumexp(alpha + graphs.final.to(x.dtype), graphs.state_seq, b)
