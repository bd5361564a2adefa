"""The denominator forward-backward of LF-MMI, as Kaldi's ``DenominatorComputation``
(``chain/chain-denominator.cc``), vectorised in torch (one code path for CPU and CUDA).

A batch of B sequences shares one den graph (pdf-id + 1 labels, final costs ignored, initial
probabilities from ``den_graph.initial_probs``). The sequences may differ in length
(``lengths``, the rest of the (B, T) outputs being padding): from its last frame on, a
sequence keeps its alphas and adds no scale in the forward, and keeps its final betas and gets
no posteriors in the backward; each sequence's figures are those of it alone. In probability space
with rescaling, as Kaldi: outputs are clamped to [-30, 30] and shifted by their per-frame
maximum (an exact scale, added back to the log-probability; Kaldi does not shift), exponentiated,
and each frame's alphas are divided by their sum (the arbitrary scale), whose logs add up to
the total log-probability. Leaky HMM (coefficient c: 0.1 as Kaldi's recipes pass
``--chain.leaky-hmm-coefficient``; the C++ option's default is 1e-05): after each frame,
including frame 0 and the last,
``alpha'(i) = alpha(i) + c * sum(alpha) * init(i)``; the betas get the transpose
``beta(i) = beta'(i) + c * sum_j init(j) beta'(j)``.

How it is vectorised: the arcs are grouped by (destination state, pdf) into K "entries"
(K is about the number of states; where every state is entered with one pdf, as in the den
graph of polish's tri1, the entries are the states and the scatter below is skipped);
``W`` (K x S, sparse CSR) sums the arc probabilities from each source state into
each entry. With the state vectors laid out (S, B) (the batch innermost), a frame is one
sparse-dense matmul ``y = W @ alpha`` (the gather, weighting and sum over arcs in one pass),
a row gather of the frame's exponentiated outputs (``y *= e_t[pdf_k]``) and a scatter of the
entries into their states; the backward is ``beta = W^T @ (e_t[pdf_k] * beta'[dst_k])``.
The forward keeps ``y`` of every frame (instead of the alphas), so the occupation of entry k
at frame t is ``y_t(k) * e_t(pdf_k) * beta'_t(dst_k)`` without a second matmul.
(``bench/chain_den.py`` times it against the per-arc gather/scatter it replaced.)

The gradient of the total log-probability with respect to the (log-domain) network outputs
is the pdf occupation (posterior) per frame, computed explicitly in ``backward`` (rescaled
per frame; each frame's posteriors sum to 1 per sequence, and are normalised to do so
exactly). It runs in float64 for float64 outputs, else in float32 (as Kaldi)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np
import torch

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays

__all__ = ["DenGraph", "den_log_prob"]


def _csr(rows: torch.Tensor, cols: torch.Tensor, values: torch.Tensor, shape) -> torch.Tensor:
    """A sparse CSR matrix (int32 indices: MKL and cuSPARSE take them without a copy)
    summing duplicate (row, col) entries."""
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore")
        m = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, shape,
                                    check_invariants=False).coalesce().to_sparse_csr()
        return torch.sparse_csr_tensor(m.crow_indices().int(), m.col_indices().int(),
                                       m.values(), shape, check_invariants=False)


@dataclass
class DenGraph:
    """The den graph's arcs as tensors: ``src``, ``dst``, ``pdf`` (0-based), ``prob``
    (``exp(-weight)``), and ``init`` (initial probabilities per state); the entries
    (``entry_dst``, ``entry_pdf``) and the matrices ``w`` (K x S) and ``w_t`` (S x K)
    derived from them on construction."""
    num_states: int
    num_pdfs: int
    src: torch.Tensor
    dst: torch.Tensor
    pdf: torch.Tensor
    prob: torch.Tensor
    init: torch.Tensor
    entry_dst: torch.Tensor = field(init=False, repr=False)
    entry_pdf: torch.Tensor = field(init=False, repr=False)
    w: torch.Tensor = field(init=False, repr=False)
    w_t: torch.Tensor = field(init=False, repr=False)
    entries_are_states: bool = field(init=False, repr=False)
    _converted: Dict = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self):
        s = self.num_states
        key = self.dst * self.num_pdfs + self.pdf
        uniq, entry = torch.unique(key, return_inverse=True)  # sorted by (dst, pdf)
        dst = torch.div(uniq, self.num_pdfs, rounding_mode="floor")
        pdf = uniq - dst * self.num_pdfs
        self.entries_are_states = len(torch.unique(dst)) == len(dst)
        if self.entries_are_states:  # one pdf into each state: entry k is state k
            entry = dst[entry]
            self.entry_pdf = torch.zeros(s, dtype=pdf.dtype, device=pdf.device)
            self.entry_pdf[dst] = pdf  # (states never entered: pdf 0, an empty row of w)
            self.entry_dst = torch.arange(s, device=dst.device)
        else:
            self.entry_dst, self.entry_pdf = dst, pdf
        k = len(self.entry_dst)
        self.w = _csr(entry, self.src, self.prob, (k, s))
        self.w_t = _csr(self.src, entry, self.prob, (s, k))

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

    def converted(self, device, dtype) -> "DenGraph":
        """This graph on ``device`` in ``dtype`` (built once, then kept)."""
        if self.prob.device == device and self.prob.dtype == dtype:
            return self
        key = (str(device), dtype)
        if key not in self._converted:
            self._converted[key] = self.to(device, dtype)
        return self._converted[key]


def _leak(a: torch.Tensor, init: torch.Tensor, c: float) -> torch.Tensor:
    """(S, B) alphas plus the leak ``c * sum(alpha) * init``."""
    return a.addcmul_(init.unsqueeze(1), a.sum(0, keepdim=True), value=c) if c else a


def _leak_t(b: torch.Tensor, init: torch.Tensor, c: float) -> torch.Tensor:
    """(S, B) betas plus the transposed leak ``c * sum_j init(j) beta(j)``."""
    return b.add_(init @ b, alpha=c) if c else b


class _DenLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, out: torch.Tensor, g: DenGraph, leaky: float, live, first_padded: int):
        b, t_len, _ = out.shape
        x = out.detach().to(g.prob.dtype).clamp(-30.0, 30.0)
        if live is not None:  # padded frames: 0 (finite, no shift, never used)
            x = torch.where(live.t().unsqueeze(2), x, 0.0)
        shift = x.max(2, keepdim=True).values
        e = torch.exp(x - shift).permute(1, 2, 0).contiguous()  # (T, P, B)
        k = len(g.entry_dst)
        ys = x.new_empty(t_len, k, b)  # W @ alpha of each frame
        e_k = x.new_empty(k, b)  # the frame's e of each entry
        nxt = x.new_empty(g.num_states, b)
        logp = shift.sum((1, 2))
        a = _leak(g.init.unsqueeze(1).expand(-1, b).clone(), g.init, leaky)
        for t in range(t_len):
            padded = t >= first_padded  # some sequence has ended: keep its alphas
            y = torch.mm(g.w, a, out=ys[t])
            dest = x.new_empty(g.num_states, b) if padded else nxt  # a may be nxt
            torch.index_select(e[t], 0, g.entry_pdf, out=e_k)
            if g.entries_are_states:
                torch.mul(y, e_k, out=dest)
            else:
                dest.zero_().index_add_(0, g.entry_dst, e_k.mul_(y))
            s = dest.sum(0)
            if padded:
                s.masked_fill_(~live[t], 1.0)
                logp += torch.log(s)
                a = torch.where(live[t], _leak(dest.div_(s), g.init, leaky), a)
            else:
                logp += torch.log(s)
                a = _leak(dest.div_(s), g.init, leaky)
        logp += torch.log(a.sum(0))
        ctx.save_for_backward(ys, e)
        ctx.g, ctx.leaky, ctx.out_dtype = g, leaky, out.dtype
        ctx.live, ctx.first_padded = live, first_padded
        return logp.to(out.dtype)

    @staticmethod
    def backward(ctx, grad_logp):
        ys, e = ctx.saved_tensors
        g, leaky, live = ctx.g, ctx.leaky, ctx.live
        t_len, k, b = ys.shape
        post = e.new_zeros(t_len, g.num_pdfs, b)
        z, occ = e.new_empty(k, b), e.new_empty(k, b)
        beta = _leak_t(e.new_ones(g.num_states, b), g.init, leaky)  # beta of frame T
        nb = e.new_empty(g.num_states, b)
        for t in range(t_len - 1, -1, -1):
            padded = t >= ctx.first_padded  # an ended sequence keeps its final beta
            torch.index_select(e[t], 0, g.entry_pdf, out=z)
            z.mul_(beta if g.entries_are_states else beta.index_select(0, g.entry_dst))
            torch.mul(ys[t], z, out=occ)
            occ.div_(occ.sum(0))
            if padded:
                occ.masked_fill_(~live[t], 0.0)
            post[t].index_add_(0, g.entry_pdf, occ)
            new = _leak_t(torch.mm(g.w_t, z, out=e.new_empty(g.num_states, b) if padded
                                   else nb), g.init, leaky)
            new.div_(new.sum(0))
            beta = torch.where(live[t], new, beta) if padded else new
        grad = post.permute(2, 0, 1) * grad_logp.to(post.dtype).view(b, 1, 1)
        return grad.to(ctx.out_dtype), None, None, None, None


def check_lengths(lengths, nnet_output: torch.Tensor, what: str):
    """``lengths`` (B,) as a long tensor on the outputs' device, checked to lie in 1..T, and
    the first frame some sequence does not reach (T where none is padded); (None, T) for
    None."""
    b, t_len = nnet_output.shape[:2]
    if lengths is None:
        return None, t_len
    lengths = torch.as_tensor(lengths, device=nnet_output.device).long()
    if lengths.shape != (b,):
        raise FormatError(f"{what}: lengths of shape {tuple(lengths.shape)} for {b} "
                          f"sequences")
    lo, hi = (int(v) for v in torch.aminmax(lengths)) if b else (t_len, t_len)
    if lo < 1 or hi > t_len:
        raise FormatError(f"{what}: sequence lengths must be in 1..{t_len} (the output "
                          f"frames), got {lo}..{hi}")
    return lengths, lo


def den_log_prob(nnet_output: torch.Tensor, graph: DenGraph,
                 leaky_hmm_coefficient: float = 0.1, lengths=None) -> torch.Tensor:
    """Per sequence, the log-probability of ``nnet_output`` (B, T, num_pdfs; log-domain
    scores, e.g. a network's chain output) under the den graph, differentiable (the gradient
    is the den posteriors). ``lengths`` (B,): each sequence's frames (the rest is padding,
    never read, with zero gradient); None: all T."""
    if nnet_output.dim() != 3 or nnet_output.shape[2] != graph.num_pdfs:
        raise FormatError(f"den_log_prob: expected (B, T, {graph.num_pdfs}) outputs, got "
                          f"{tuple(nnet_output.shape)}")
    if nnet_output.shape[1] == 0:
        raise FormatError("den_log_prob: sequences of 0 frames")
    lengths, first_padded = check_lengths(lengths, nnet_output, "den_log_prob")
    live = None
    if first_padded < nnet_output.shape[1]:  # (T, B): frame t of sequence b is real
        live = torch.arange(nnet_output.shape[1], device=nnet_output.device
                            ).unsqueeze(1) < lengths
    dtype = torch.float64 if nnet_output.dtype == torch.float64 else torch.float32
    g = graph.converted(nnet_output.device, dtype)
    return _DenLogProb.apply(nnet_output, g, float(leaky_hmm_coefficient), live,
                             first_padded)
