"""The LF-MMI ("chain") objective, as Kaldi's ``ComputeChainObjfAndDeriv``
(``chain/chain-training.cc``) with nnet3's ``output-xent`` regulariser:

- chain objective per sequence: ``weight * (num_logprob - den_logprob)``; its gradient with
  respect to the chain output is ``weight * (num_posteriors - den_posteriors)``;
- output l2 (``--l2-regularize``): ``-0.5 * l2 * sum(output^2)`` added to the objective;
- cross-entropy regularisation (``--xent-regularize``, 0.1 in Kaldi's recipes): a second
  output (log-softmax) trained towards the numerator posteriors,
  ``xent_regularize * sum_t,p num_post(t, p) * xent_log_softmax(t, p)``; the posteriors are
  constants there (gradients flow only into the xent output), as in Kaldi.

``chain_loss`` returns the negated total (to minimise; sum over frames, as Kaldi's
derivatives) and the per-frame figures Kaldi logs. Its sequences may differ in length
(``lengths``): every term counts only each sequence's own frames."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from hybridasr.chain.den_forward_backward import DenGraph, den_log_prob
from hybridasr.chain.num_forward_backward import NumGraphs, num_log_prob
from hybridasr.options import option

__all__ = ["ChainObjectiveOptions", "ChainLoss", "chain_loss", "num_posteriors"]


@dataclass
class ChainObjectiveOptions:
    leaky_hmm_coefficient: float = option(0.1, "leaky-HMM coefficient of the denominator "
                                               "forward-backward", minimum=0.0)
    xent_regularize: float = option(0.1, "weight of the cross-entropy regulariser (the xent "
                                         "output trained on numerator posteriors)", minimum=0.0)
    l2_regularize: float = option(0.0, "l2 penalty on the chain output", minimum=0.0)


@dataclass
class ChainLoss:
    loss: torch.Tensor         # negated weighted objective, summed over the batch: minimise
    num_logprob: torch.Tensor  # per sequence
    den_logprob: torch.Tensor  # per sequence
    objf: float                # (num - den) per frame
    xent_objf: float           # per frame (0 without an xent output)
    l2_term: float             # per frame
    frames: int


def num_posteriors(nnet_output: torch.Tensor, graphs: NumGraphs,
                   lengths=None) -> torch.Tensor:
    """The numerator posteriors (B, T, P) (the gradient of ``num_log_prob``'s sum; zero on
    the padding past ``lengths``)."""
    x = nnet_output.detach().requires_grad_(True)
    with torch.enable_grad():
        lp = num_log_prob(x, graphs, lengths)
        (grad,) = torch.autograd.grad(lp.sum(), x)
    return grad


def chain_loss(nnet_output: torch.Tensor, den: DenGraph, num: NumGraphs,
               xent_output: Optional[torch.Tensor] = None,
               opts: ChainObjectiveOptions = ChainObjectiveOptions(),
               weights: Optional[torch.Tensor] = None, lengths=None) -> ChainLoss:
    """``nnet_output``: (B, T, P) chain output (no softmax); ``xent_output``: (B, T, P) raw
    scores of the xent output (log-softmax applied here) or None; ``lengths`` (B,): each
    sequence's frames (the rest is padding: not counted, zero gradient), None: all T."""
    b, t_len, _ = nnet_output.shape
    live = None  # (B, T, 1): frame t of sequence b is real
    if lengths is None:
        frames = b * t_len
    else:
        lengths = torch.as_tensor(lengths, device=nnet_output.device).long()
        frames = int(lengths.sum())
        live = (torch.arange(t_len, device=nnet_output.device) < lengths.view(-1, 1)
                ).unsqueeze(2)
    w = torch.ones(b, dtype=nnet_output.dtype, device=nnet_output.device) \
        if weights is None else weights.to(nnet_output)
    num_lp = num_log_prob(nnet_output, num, lengths)
    den_lp = den_log_prob(nnet_output, den, opts.leaky_hmm_coefficient, lengths)
    objf = (w * (num_lp - den_lp)).sum()
    total = objf
    l2 = nnet_output.new_zeros(())
    if opts.l2_regularize:
        out = nnet_output if live is None else torch.where(live, nnet_output, 0.0)
        l2 = -0.5 * opts.l2_regularize * (w.view(b, 1, 1) * out ** 2).sum()
        total = total + l2
    xent = nnet_output.new_zeros(())
    if xent_output is not None:
        post = num_posteriors(nnet_output, num, lengths) * w.view(b, 1, 1)
        if live is not None:  # the padding never read (nor given a gradient)
            xent_output = torch.where(live, xent_output, 0.0)
        xent = (post * torch.log_softmax(xent_output, dim=2)).sum()
        total = total + opts.xent_regularize * xent
    return ChainLoss(-total, num_lp.detach(), den_lp.detach(), float(objf.detach()) / frames,
                     float(xent.detach()) / frames, float(l2.detach()) / frames, frames)
