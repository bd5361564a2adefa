"""The denominator forward-backward of LF-MMI, as Kaldi's ``DenominatorComputation``
(``chain/chain-denominator.cc``), vectorised in torch (one code path for CPU and CUDA).

A batch of B sequences of equal length T shares one den graph (pdf-id + 1 labels, final
costs ignored, initial probabilities from ``den_graph.initial_probs``). In probability space
with rescaling, as Kaldi: outputs are clamped to [-30, 30] and shifted by their per-frame
maximum (an exact scale, added back to the log-probability; Kaldi does not shift), exponentiated,
and each frame's alphas are divided by their sum (the arbitrary scale), whose logs add up to
the total log-probability. Leaky HMM (coefficient c: 0.1 as Kaldi's recipes pass
``--chain.leaky-hmm-coefficient``; the C++ option's default is 1e-05): after each frame,
including frame 0 and the last,
``alpha'(i) = alpha(i) + c * sum(alpha) * init(i)``; the betas get the transpose
``beta(i) = beta'(i) + c * sum_j init(j) beta'(j)``.

The gradient of the total log-probability with respect to the (log-domain) network outputs
is the pdf occupation (posterior) per frame, computed explicitly in ``backward`` from the
stored alphas and betas (rescaled per frame; each frame's posteriors sum to 1 per sequence,
and are normalised to do so exactly)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays

__all__ = ["DenGraph", "den_log_prob"]


@dataclass
class DenGraph:
    """The den graph's arcs as tensors: ``src``, ``dst``, ``pdf`` (0-based), ``prob``
    (``exp(-weight)``), and ``init`` (initial probabilities per state)."""
    num_states: int
    num_pdfs: int
    src: torch.Tensor
    dst: torch.Tensor
    pdf: torch.Tensor
    prob: torch.Tensor
    init: torch.Tensor

    @classmethod
    def from_fst(cls, den: FstArrays, num_pdfs: int, init: Optional[np.ndarray] = None,
                 device=None, dtype=torch.float32) -> "DenGraph":
        from hybridasr.chain.den_graph import initial_probs

        if np.any(den.ilabel <= 0) or np.any(den.ilabel > num_pdfs):
            raise FormatError(f"den graph: labels must be pdf-id + 1 in 1..{num_pdfs}")
        if init is None:
            init = initial_probs(den)
        t = lambda a, dt: torch.as_tensor(np.asarray(a), dtype=dt, device=device)  # noqa
        return cls(den.num_states, num_pdfs, t(den.src, torch.long), t(den.dst, torch.long),
                   t(den.ilabel - 1, torch.long),
                   t(np.exp(-den.weight.astype(np.float64)), dtype), t(init, dtype))

    def to(self, device=None, dtype=None) -> "DenGraph":
        f = lambda x: x.to(device=device, dtype=dtype or x.dtype)  # noqa
        return DenGraph(self.num_states, self.num_pdfs, self.src.to(device),
                        self.dst.to(device), self.pdf.to(device), f(self.prob), f(self.init))


def _leak(a: torch.Tensor, init: torch.Tensor, c: float) -> torch.Tensor:
    return a + c * a.sum(1, keepdim=True) * init if c else a


def _leak_t(b: torch.Tensor, init: torch.Tensor, c: float) -> torch.Tensor:
    return b + c * (b * init).sum(1, keepdim=True) if c else b


class _DenLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, out: torch.Tensor, g: DenGraph, leaky: float):
        b, t_len, _ = out.shape
        x = out.detach().clamp(-30.0, 30.0)
        shift = x.max(2, keepdim=True).values
        e = torch.exp(x - shift)  # (B, T, P)
        alphas = out.new_empty(t_len + 1, b, g.num_states)
        a = g.init.unsqueeze(0).expand(b, -1).clone()
        logp = shift.sum((1, 2)).to(out.dtype)
        a = _leak(a, g.init, leaky)
        for t in range(t_len):
            alphas[t] = a
            arc = a[:, g.src] * g.prob * e[:, t, g.pdf]
            nxt = out.new_zeros(b, g.num_states).index_add_(1, g.dst, arc)
            s = nxt.sum(1, keepdim=True)
            logp = logp + torch.log(s.squeeze(1))
            a = _leak(nxt / s, g.init, leaky)
        alphas[t_len] = a
        logp = logp + torch.log(a.sum(1))
        ctx.save_for_backward(alphas, e)
        ctx.g, ctx.leaky = g, leaky
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        alphas, e = ctx.saved_tensors
        g, leaky = ctx.g, ctx.leaky
        t_len, b = e.shape[1], e.shape[0]
        post = e.new_zeros(b, t_len, g.num_pdfs)
        beta = _leak_t(e.new_ones(b, g.num_states), g.init, leaky)  # beta of frame T
        for t in range(t_len - 1, -1, -1):
            arc = alphas[t][:, g.src] * g.prob * e[:, t, g.pdf] * beta[:, g.dst]
            tot = arc.sum(1, keepdim=True)
            post[:, t].index_add_(1, g.pdf, arc / tot)
            nb = e.new_zeros(b, g.num_states).index_add_(
                1, g.src, g.prob * e[:, t, g.pdf] * beta[:, g.dst])
            nb = _leak_t(nb, g.init, leaky)
            beta = nb / nb.sum(1, keepdim=True)
        return post * grad_logp.view(b, 1, 1), None, None


def den_log_prob(nnet_output: torch.Tensor, graph: DenGraph,
                 leaky_hmm_coefficient: float = 0.1) -> torch.Tensor:
    """Per sequence, the log-probability of ``nnet_output`` (B, T, num_pdfs; log-domain
    scores, e.g. a network's chain output) under the den graph, differentiable (the gradient
    is the den posteriors)."""
    if nnet_output.dim() != 3 or nnet_output.shape[2] != graph.num_pdfs:
        raise FormatError(f"den_log_prob: expected (B, T, {graph.num_pdfs}) outputs, got "
                          f"{tuple(nnet_output.shape)}")
    if nnet_output.shape[1] == 0:
        raise FormatError("den_log_prob: sequences of 0 frames")
    g = graph if graph.prob.dtype == nnet_output.dtype and graph.prob.device == \
        nnet_output.device else graph.to(nnet_output.device, nnet_output.dtype)
    return _DenLogProb.apply(nnet_output, g, float(leaky_hmm_coefficient))
