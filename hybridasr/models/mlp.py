"""Feed-forward acoustic model (Kaldi nnet1 / TNet style): hidden layers with sigmoid or relu,
a Linear to the logits. Its input is already spliced (the data pipeline's ``--splice``); it
works frame by frame on ``[B, T, D]`` (``T = 1`` for frame-shuffled batches)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from hybridasr.models.options import ModelOptions
from hybridasr.options import option

ACTIVATIONS = {"sigmoid": nn.Sigmoid, "relu": nn.ReLU}


@dataclass
class MlpOptions(ModelOptions):
    activation: str = option("sigmoid", "mlp hidden-layer nonlinearity",
                             choices=tuple(ACTIVATIONS))


class Mlp(nn.Module):
    Options = MlpOptions  # its options (--num-layers, ...)
    recurrent = False  # frame by frame: context only from --splice
    carries_state = False

    def __init__(self, input_dim: int, num_outputs: int, num_layers: int, hidden_size: int,
                 activation: str, dropout: float):
        super().__init__()
        layers, dim = [], input_dim
        for _ in range(num_layers):
            layers += [nn.Linear(dim, hidden_size), ACTIVATIONS[activation]()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            dim = hidden_size
        self.hidden = nn.Sequential(*layers)
        self.output = nn.Linear(dim, num_outputs)

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None, state=None,
                return_state: bool = False):
        logits = self.output(self.hidden(x))
        return (logits, None) if return_state else logits
