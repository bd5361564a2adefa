"""Bidirectional LSTM acoustic model, exact on zero-padded batches.

Each layer has a forward ``nn.LSTM`` and a separate backward ``nn.LSTM``. The backward one
reads every row reversed *within its own length* (``t' = len-1-t`` for ``t < len``, padding
left in place) through ``torch.gather``, and its output is reversed back the same way, so the
padding never reaches a real frame in either direction: the logits of an utterance in a padded
batch equal those of the utterance alone. No ``pack_padded_sequence`` (2-19x slower on CPU).

Why not one bidirectional ``nn.LSTM``: its backward direction starts at frame ``T-1``, in the
padding of every shorter row, and one input cannot be left-aligned for one direction and
right-aligned for the other. Feeding it both alignments stacked on the batch axis (2B rows) is
exact but doubles the work. ``bench/train_throughput.py --variants`` times both (3 x 512,
40 -> 2000, forward + backward + Adam): on 2 CPU cores the separate pair ran 735 frames/s, the
doubled bidirectional one 431 (the inexact plain bidirectional one 766); on an H100 the doubled
one was 3-5% faster (88.4k vs 84.8k fps at 32 x 800 frames, 275k vs 262k at 128 x 400), and
running the two directions on two CUDA streams gained nothing. The separate pair is kept: the
fastest exact layout on the CPU, near it on a GPU, with half the memory of the doubled one.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from hybridasr.models.options import BlstmOptions


def lengths_or_full(x: torch.Tensor, lengths: Optional[torch.Tensor]) -> torch.Tensor:
    """``lengths`` as an int64 CPU tensor (all ``T`` when None)."""
    if lengths is None:
        return torch.full((x.shape[0],), x.shape[1], dtype=torch.int64)
    return torch.as_tensor(lengths, dtype=torch.int64).cpu()


def reverse_index(lengths: torch.Tensor, T: int, device) -> Optional[torch.Tensor]:
    """``[B, T]`` gather indices reversing each row within its length (``len-1-t`` for
    ``t < len``, else ``t``); None when every row is ``T`` long (then ``flip`` does it)."""
    if bool((lengths == T).all()):
        return None
    t = torch.arange(T, dtype=torch.int64).unsqueeze(0)
    lens = lengths.unsqueeze(1)
    idx = torch.where(t < lens, lens - 1 - t, t)
    return idx.to(device, non_blocking=True)


def reverse_within(x: torch.Tensor, idx: Optional[torch.Tensor]) -> torch.Tensor:
    """Applies ``reverse_index`` to ``x`` [B, T, D] (its own inverse)."""
    if idx is None:
        return torch.flip(x, dims=(1,))
    return torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class BlstmLayer(nn.Module):
    def __init__(self, input_dim: int, hidden_size: int, proj_size: int = 0):
        super().__init__()
        self.fw = nn.LSTM(input_dim, hidden_size, batch_first=True, proj_size=proj_size)
        self.bw = nn.LSTM(input_dim, hidden_size, batch_first=True, proj_size=proj_size)
        self.output_dim = 2 * (proj_size or hidden_size)

    def forward(self, x: torch.Tensor, idx: Optional[torch.Tensor]) -> torch.Tensor:
        fw, _ = self.fw(x)
        bw, _ = self.bw(reverse_within(x, idx))
        return torch.cat([fw, reverse_within(bw, idx)], dim=-1)


class Blstm(nn.Module):
    """Stacked BLSTM layers, dropout between layers, a Linear to ``num_outputs`` logits.

    With ``blstm_subsampling_factor`` f > 1 (a chain model's BLSTM, as Kaldi's chain BLSTMs
    output every 3rd frame) the layers after the first see its outputs at frames 0, f, 2f, ...
    only (a row of ``len`` frames keeps ceil(len / f)), so the output has ceil(T / f) frames,
    and a second Linear gives the xent output (``return_xent``) beside the chain one."""

    Options = BlstmOptions  # its options (--num-layers, ...)
    recurrent = True  # uses the context of the sequence
    carries_state = False  # the backward direction needs the whole sequence: no truncated BPTT

    def __init__(self, input_dim: int, num_outputs: int, num_layers: int, hidden_size: int,
                 proj_size: int, dropout: float, blstm_subsampling_factor: int = 1):
        super().__init__()
        layers, dim = [], input_dim
        for _ in range(num_layers):
            layers.append(BlstmLayer(dim, hidden_size, proj_size))
            dim = layers[-1].output_dim
        self.layers = nn.ModuleList(layers)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.output = nn.Linear(dim, num_outputs)
        self.frame_subsampling_factor = int(blstm_subsampling_factor)
        self.xent = (nn.Linear(dim, num_outputs) if self.frame_subsampling_factor > 1
                     else None)

    def set_dropout(self, p: float) -> None:
        """The dropout between layers (a dropout schedule's hook, ``--dropout-schedule``)."""
        if self.dropout is None:
            self.dropout = nn.Dropout(float(p))
        self.dropout.p = float(p)

    def output_lengths(self, lengths) -> torch.Tensor:
        """Output frames of rows of ``lengths`` input frames: ceil(length / factor)."""
        f = self.frame_subsampling_factor
        return torch.div(torch.as_tensor(lengths, dtype=torch.int64) + f - 1, f,
                         rounding_mode="floor")

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None, state=None,
                return_state: bool = False, return_xent: bool = False):
        """Logits [B, ceil(T / factor), num_outputs]; with ``return_xent`` (a subsampling
        model only) ``(logits, xent logits)``; with ``return_state`` ``(..., None)``."""
        lens = lengths_or_full(x, lengths)
        idx = reverse_index(lens, x.shape[1], x.device)
        f = self.frame_subsampling_factor
        for i, layer in enumerate(self.layers):
            if i > 0 and self.dropout is not None:
                x = self.dropout(x)
            if i == 1 and f > 1:  # from the second layer on, at the output rate
                x, lens = x[:, ::f], self.output_lengths(lens)
                idx = reverse_index(lens, x.shape[1], x.device)
            x = layer(x, idx)
        if f > 1 and len(self.layers) == 1:
            x = x[:, ::f]
        logits = self.output(x)
        if return_xent:
            if self.xent is None:
                raise ValueError("return_xent: this BLSTM has no xent output "
                                 "(--blstm-subsampling-factor=1)")
            logits = (logits, self.xent(x))
        return (logits, None) if return_state else logits
