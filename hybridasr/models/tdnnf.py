"""Factorised TDNN (TDNN-F) acoustic model, as Kaldi's chain recipes build it with
``tdnnf-layer`` (``steps/libs/nnet3/xconfig/composite_layers.py``; the layout and defaults of
``egs/mini_librispeech/s5/local/chain/tuning/run_tdnn_1k.sh``), with a chain output and an
xent output (for ``--xent-regularize``) at every ``tdnnf_subsampling_factor``-th frame.

The network, Kaldi's names in brackets:

- tdnn1 [relu-batchnorm-layer]: affine over frames t-1, t, t+1, ReLU, batchnorm, dropout;
- one TDNN-F layer per time stride s [tdnnf-layer]: a linear map (no bias) of frames t-s and
  t to the bottleneck, kept semi-orthogonal; an affine map of the bottleneck at t and t+s
  back to ``tdnnf_dim``; ReLU, batchnorm, dropout, plus ``bypass_scale`` times the layer's
  input (s = 0: frame t only);
- prefinal-l [linear-component, semi-orthogonal] to ``tdnnf_prefinal_dim``;
- per output [prefinal-layer]: affine to ``tdnnf_dim``, ReLU, batchnorm, linear
  (semi-orthogonal) back to ``tdnnf_prefinal_dim``, batchnorm; then the output affine
  [output-layer: weights and bias start at 0], without softmax (the chain output; the xent
  output's log-softmax is the objective's).

Batchnorm has no scale and offset (Kaldi's ``BatchNormComponent``); in training its
statistics count only the real frames (``lengths``). Dropout is Kaldi's tdnnf one
(``GeneralDropoutComponent continuous=true``): per sequence and dimension, shared over time,
a scale drawn uniformly from [1 - 2p, 1 + 2p]; ``set_dropout`` sets p (train.py's
``--dropout-schedule``, ``hybridasr.train.schedules.dropout``, drives it).

Time context and padding: each utterance is extended by copies of its first and last frame
(``left_context``/``right_context`` input frames, as Kaldi's decoders pad), within its own
length, and every layer is a valid (unpadded) convolution, so an utterance's outputs in a
zero-padded batch equal its outputs alone (in eval mode; in training the batchnorm
statistics are the batch's). The layers run at the input frame rate up to the first layer
from which every stride is a multiple of the subsampling factor, and at the output rate from
there on (the same outputs, a third of the work). Output frame k is input frame k * factor;
``output_lengths`` gives each row's number of output frames.

The semi-orthogonal constraint is Kaldi's ``ConstrainOrthonormal``: every
``tdnnf_orthonormal_every`` training steps (Kaldi: at random, 1 step in 4) each constrained
matrix M takes one step ``M -= 4 nu / a^2 (M M^T - a^2 I) M`` (rows <= columns, else on M^T)
towards ``M M^T = a^2 I``, nu = 1/8 (1/16 while far from it); the scale a is fixed
(``tdnnf_orthonormal_constraint`` > 0) or floating (-1, Kaldi's: a^2 = tr(P P) / tr(P),
P = M M^T, so the step is orthogonal to M). The model applies it itself, at the start of a
training forward (so after the previous optimiser step), or ``constrain_orthonormal()``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch
from torch import nn

from hybridasr.errors import ConfigError
from hybridasr.models.blstm import lengths_or_full
from hybridasr.options import check, option

__all__ = ["TdnnfOptions", "Tdnnf", "constrain_orthonormal"]


@dataclass
class TdnnfOptions:
    tdnnf_dim: int = option(768, "TDNN-F: units of the first TDNN layer and of every TDNN-F "
                                 "layer (Kaldi's dim)", minimum=1)
    tdnnf_bottleneck_dim: int = option(96, "TDNN-F: bottleneck dimension (the semi-orthogonal "
                                           "factor's), below --tdnnf-dim", minimum=1)
    tdnnf_time_strides: str = option("1,1,1,0,3,3,3,3,3,3,3,3", "TDNN-F: the time stride of "
                                     "each TDNN-F layer in input frames (0: no splicing); "
                                     "their number is the number of layers")
    tdnnf_prefinal_dim: int = option(192, "TDNN-F: dimension of prefinal-l and of the "
                                          "prefinal layers' output (Kaldi's small-dim)",
                                     minimum=1)
    tdnnf_bypass_scale: float = option(0.66, "TDNN-F: scale of a layer's input added to its "
                                             "output (0: no bypass)", minimum=0.0,
                                       maximum=1.0)
    tdnnf_dropout: float = option(0.0, "TDNN-F: dropout proportion (continuous, shared over "
                                       "time) of every layer at the start; a dropout "
                                       "schedule changes it", minimum=0.0, maximum=0.5)
    tdnnf_orthonormal_constraint: float = option(
        -1.0, "TDNN-F: scale of the semi-orthogonal matrices: -1 floating (Kaldi's), > 0 that "
              "scale, 0 no constraint")
    tdnnf_orthonormal_every: int = option(4, "TDNN-F: apply the semi-orthogonal constraint "
                                             "every n training steps", minimum=1)
    tdnnf_subsampling_factor: int = option(3, "TDNN-F: output every n-th input frame (3 for "
                                              "chain models; 1 for frame targets)", minimum=1)
    # Kaldi's run_tdnn_1k.sh: l2-regularize=0.03 in the layers, 0.015 in the outputs, under
    # its natural-gradient SGD; here the optimizer's (coupled) weight decay of those layers
    tdnnf_l2_regularize: float = option(0.0, "TDNN-F: l2 (weight decay) of the layers before "
                                             "the outputs (Kaldi's tdnnf l2-regularize, 0.03 "
                                             "in its SGD recipes)", minimum=0.0)
    tdnnf_output_l2_regularize: float = option(0.0, "TDNN-F: l2 (weight decay) of the chain "
                                                    "and xent output branches (Kaldi: 0.015)",
                                               minimum=0.0)
    # Kaldi gives output-xent learning-rate-factor 0.5 / xent-regularize: under SGD that undoes
    # the 0.1 weight on its gradient and leaves half the rate; Adam's steps do not scale with
    # the gradient, so the same effective rate is a factor of 0.5 here
    tdnnf_xent_lr_factor: float = option(1.0, "TDNN-F: learning-rate factor of the xent output "
                                              "layer (Kaldi's effective rate: 0.5 with Adam, "
                                              "0.5 / --lfmmi-xent-regularize with SGD)",
                                         above=0.0)

    def __post_init__(self):
        check(self)
        strides = parse_strides(self.tdnnf_time_strides)
        if self.tdnnf_bottleneck_dim >= self.tdnnf_dim:
            raise ConfigError(f"--tdnnf-bottleneck-dim={self.tdnnf_bottleneck_dim}: must be "
                              f"below --tdnnf-dim={self.tdnnf_dim}")
        c = self.tdnnf_orthonormal_constraint
        if not (c == -1.0 or c >= 0.0):
            raise ConfigError(f"--tdnnf-orthonormal-constraint={c}: expected -1 (floating), "
                              f"0 (none) or a scale > 0")
        self.tdnnf_time_strides = ",".join(map(str, strides))


def parse_strides(text: str) -> List[int]:
    try:
        strides = [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        strides = None
    if strides is None or any(s < 0 for s in strides):
        raise ConfigError(f"--tdnnf-time-strides={text}: expected comma-separated integers "
                          f">= 0 (e.g. 1,1,1,0,3,3)")
    return strides


@torch.no_grad()
def constrain_orthonormal(weight: torch.Tensor, scale: float) -> None:
    """One step of Kaldi's ``ConstrainOrthonormalInternal`` on ``weight`` (out, in, ...), in
    place, seen as the matrix (out, in * ...) or its transpose, whichever is wider than tall.
    ``scale`` -1: floating."""
    m = weight.reshape(weight.shape[0], -1)
    tall = m.shape[0] > m.shape[1]
    if tall:
        m = m.t()
    p = m @ m.t()
    if scale < 0:
        tr_p, tr_pp = p.trace(), (p * p).sum()
        scale2 = tr_pp / tr_p
        far = tr_pp * p.shape[0] / (tr_p * tr_p) > 1.02
        speed = torch.where(far, 0.0625, 0.125).to(m.dtype)
    else:
        scale2, speed = float(scale) ** 2, 0.125
    p.diagonal().sub_(scale2)
    m = m - (4.0 * speed / scale2) * (p @ m)
    weight.copy_((m.t() if tall else m).reshape(weight.shape))


class MaskedBatchNorm(nn.Module):
    """Kaldi's ``BatchNormComponent`` (no scale or offset) on [B, C, N]; in training the
    statistics are those of the frames where ``mask`` [B, 1, N] is 1."""

    def __init__(self, dim: int, momentum: float = 0.1, eps: float = 1e-3):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("running_var", torch.ones(dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.training:
            n = mask.sum().clamp(min=1.0)
            mean = (x * mask).sum((0, 2)) / n
            var = (((x - mean.view(1, -1, 1)) ** 2) * mask).sum((0, 2)) / n
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(var.detach(), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean.view(1, -1, 1)) * torch.rsqrt(var.view(1, -1, 1) + self.eps)


class SharedDropout(nn.Module):
    """Kaldi's continuous dropout shared over time: x * U[1 - 2p, 1 + 2p] per (row, dim)."""

    def __init__(self, p: float):
        super().__init__()
        self.p = float(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        u = torch.rand(x.shape[0], x.shape[1], 1, device=x.device, dtype=x.dtype)
        return x * (1.0 + 2.0 * self.p * (2.0 * u - 1.0))


class _TdnnLayer(nn.Module):
    """A layer over frames t - left .. t + right at its rate: conv, ReLU, batchnorm, dropout
    (tdnn1 [relu-batchnorm-dropout-layer]); or, with ``bottleneck``, Kaldi's tdnnf-layer."""

    def __init__(self, in_dim: int, dim: int, stride: int, dropout: float,
                 bottleneck: int = 0, bypass: float = 0.0):
        super().__init__()
        k, d = (2, stride) if stride else (1, 1)
        if bottleneck:  # frames t-s, t to the bottleneck; its frames t, t+s to dim
            self.linear = nn.Conv1d(in_dim, bottleneck, k, dilation=d, bias=False)
            self.affine = nn.Conv1d(bottleneck, dim, k, dilation=d)
        else:  # frames t-s, t, t+s to dim
            self.linear = None
            self.affine = nn.Conv1d(in_dim, dim, 2 * k - 1, dilation=d)
        self.left = self.right = stride  # positions each side at its rate
        self.norm = MaskedBatchNorm(dim)
        self.dropout = SharedDropout(dropout)
        self.bypass = bypass

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.affine(x if self.linear is None else self.linear(x))
        h = self.dropout(self.norm(torch.relu(h), mask))
        if self.bypass:
            h = h + self.bypass * x[:, :, self.left:x.shape[2] - self.right]
        return h


class _Prefinal(nn.Module):
    """Kaldi's prefinal-layer and output-layer: affine, ReLU, batchnorm, linear
    (semi-orthogonal), batchnorm, output affine (starting at 0)."""

    def __init__(self, small: int, big: int, num_outputs: int):
        super().__init__()
        self.affine = nn.Conv1d(small, big, 1)
        self.norm1 = MaskedBatchNorm(big)
        self.linear = nn.Conv1d(big, small, 1, bias=False)
        self.norm2 = MaskedBatchNorm(small)
        self.output = nn.Conv1d(small, num_outputs, 1)
        nn.init.zeros_(self.output.weight)
        nn.init.zeros_(self.output.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(torch.relu(self.affine(x)), mask)
        return self.output(self.norm2(self.linear(h), mask))


class Tdnnf(nn.Module):
    Options = TdnnfOptions  # its options (--tdnnf-dim, ...)
    # options that shape no parameter: an --init-model may have trained with other values
    training_only_options = ("tdnnf_dropout", "tdnnf_l2_regularize",
                             "tdnnf_output_l2_regularize", "tdnnf_xent_lr_factor")
    recurrent = True  # uses the context of the sequence (left_context/right_context frames)
    carries_state = False

    def __init__(self, input_dim: int, num_outputs: int, tdnnf_dim: int,
                 tdnnf_bottleneck_dim: int, tdnnf_time_strides: str, tdnnf_prefinal_dim: int,
                 tdnnf_bypass_scale: float, tdnnf_dropout: float,
                 tdnnf_orthonormal_constraint: float, tdnnf_orthonormal_every: int,
                 tdnnf_subsampling_factor: int, tdnnf_l2_regularize: float = 0.0,
                 tdnnf_output_l2_regularize: float = 0.0, tdnnf_xent_lr_factor: float = 1.0):
        super().__init__()
        strides, f = parse_strides(tdnnf_time_strides), int(tdnnf_subsampling_factor)
        # the first layer from which the model runs at the output rate
        self.subsample_at = next(i for i in range(len(strides) + 1)
                                 if all(s % f == 0 for s in strides[i:]))
        blocks = [_TdnnLayer(input_dim, tdnnf_dim, 1, tdnnf_dropout)]
        for i, s in enumerate(strides):
            blocks.append(_TdnnLayer(tdnnf_dim, tdnnf_dim, s // f if i >= self.subsample_at
                                  else s, tdnnf_dropout, tdnnf_bottleneck_dim,
                                  tdnnf_bypass_scale))
        self.blocks = nn.ModuleList(blocks)
        self.prefinal_l = nn.Conv1d(tdnnf_dim, tdnnf_prefinal_dim, 1, bias=False)
        self.chain = _Prefinal(tdnnf_prefinal_dim, tdnnf_dim, num_outputs)
        self.xent = _Prefinal(tdnnf_prefinal_dim, tdnnf_dim, num_outputs)
        self.input_dim, self.num_outputs = int(input_dim), int(num_outputs)
        self.frame_subsampling_factor = f
        self.left_context = sum(b.left * self._step(i) for i, b in enumerate(self.blocks))
        self.right_context = sum(b.right * self._step(i) for i, b in enumerate(self.blocks))
        self.orthonormal_constraint = float(tdnnf_orthonormal_constraint)
        self.orthonormal_every = int(tdnnf_orthonormal_every)
        self.training_steps = 0
        self.l2 = (float(tdnnf_l2_regularize), float(tdnnf_output_l2_regularize))
        self.xent_lr_factor = float(tdnnf_xent_lr_factor)

    def _step(self, block: int) -> int:
        """Input frames per position at ``block`` (tdnn1 is block 0, TDNN-F layer i is i+1)."""
        return self.frame_subsampling_factor if block > self.subsample_at else 1

    def semi_orthogonal_weights(self) -> List[torch.Tensor]:
        return [b.linear.weight for b in self.blocks[1:]] + [
            self.prefinal_l.weight, self.chain.linear.weight, self.xent.linear.weight]

    def constrain_orthonormal(self) -> None:
        if self.orthonormal_constraint:
            for w in self.semi_orthogonal_weights():
                constrain_orthonormal(w, self.orthonormal_constraint)

    def param_groups(self) -> List[dict]:
        """The optimizer's groups (``hybridasr.train.optimizer``): the layers up to prefinal-l
        at ``--tdnnf-l2-regularize``, the chain branch and the xent branch at
        ``--tdnnf-output-l2-regularize``, the xent output layer at ``--tdnnf-xent-lr-factor``
        (Kaldi's per-layer l2-regularize and learning-rate-factor)."""
        layers, outputs = self.l2
        xent_out = list(self.xent.output.parameters())
        ids = {id(p) for p in xent_out}
        return [
            {"params": list(self.blocks.parameters()) + list(self.prefinal_l.parameters()),
             "weight_decay": layers},
            {"params": list(self.chain.parameters()) +
             [p for p in self.xent.parameters() if id(p) not in ids], "weight_decay": outputs},
            {"params": xent_out, "weight_decay": outputs, "lr_factor": self.xent_lr_factor}]

    def set_dropout(self, p: float) -> None:
        """The dropout proportion of every layer (a dropout schedule's hook)."""
        for m in self.modules():
            if isinstance(m, SharedDropout):
                m.p = float(p)

    def output_lengths(self, lengths: Sequence[int]) -> torch.Tensor:
        """Output frames of rows of ``lengths`` input frames: ceil(length / factor)."""
        f = self.frame_subsampling_factor
        return torch.div(torch.as_tensor(lengths, dtype=torch.int64) + f - 1, f,
                         rounding_mode="floor")

    @staticmethod
    def _mask(t0: int, step: int, n: int, lens: torch.Tensor, dtype) -> torch.Tensor:
        t = t0 + step * torch.arange(n, device=lens.device)
        return ((t >= 0) & (t < lens.view(-1, 1))).unsqueeze(1).to(dtype)

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None, state=None,
                return_state: bool = False, return_xent: bool = False):
        """The chain output [B, ceil(T / factor), num_outputs]; with ``return_xent``
        ``(chain, xent)``; with ``return_state`` ``(..., None)``."""
        if self.training and torch.is_grad_enabled():
            self.training_steps += 1
            if self.training_steps % self.orthonormal_every == 0:
                self.constrain_orthonormal()
        b, t_len, dim = x.shape
        lens = lengths_or_full(x, lengths).to(x.device)
        t = torch.arange(-self.left_context, t_len + self.right_context, device=x.device)
        idx = torch.minimum(t.clamp(min=0).view(1, -1), (lens - 1).clamp(min=0).view(-1, 1))
        h = torch.gather(x, 1, idx.unsqueeze(2).expand(-1, -1, dim)).transpose(1, 2)
        t0, step, f = -self.left_context, 1, self.frame_subsampling_factor
        for i, blk in enumerate(self.blocks):
            if i == self.subsample_at + 1 and f > 1:  # the frames k * f only, from here on
                h, step = h[:, :, (-t0) % f::f], f
                t0 += (-t0) % f
            t0 += blk.left * step
            h = blk(h, self._mask(t0, step, h.shape[2] - blk.left - blk.right, lens, h.dtype))
        if step == 1 and f > 1:  # strides not multiples of f up to the last layer
            h, step = h[:, :, (-t0) % f::f], f
            t0 += (-t0) % f
        t_out = -(-t_len // f)
        h = self.prefinal_l(h[:, :, :t_out])
        mask = self._mask(t0, step, h.shape[2], lens, h.dtype)
        chain = self.chain(h, mask).transpose(1, 2)
        out = (chain, self.xent(h, mask).transpose(1, 2)) if return_xent else chain
        return (out, None) if return_state else out
