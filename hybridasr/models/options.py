"""The options every model has, and those of the LSTMs (``blstm``, ``lstm``), declared once.

A model class names its options dataclass in ``Options`` (``mlp.MlpOptions`` adds
``--activation``); ``factory`` registers them all and turns them into the model config dict.
"""
from __future__ import annotations

from dataclasses import dataclass

from hybridasr.errors import ConfigError
from hybridasr.options import check, option


@dataclass
class ModelOptions:
    num_layers: int = option(3, "LSTM layers, or hidden layers of the mlp", minimum=0)
    hidden_size: int = option(512, "LSTM cells per direction, or hidden units of the mlp",
                              minimum=1)
    dropout: float = option(0.1, "dropout between LSTM layers / after mlp hidden layers",
                            minimum=0)

    def __post_init__(self):
        check(self)
        if not self.dropout < 1.0:
            raise ConfigError(f"--dropout={self.dropout}: must be in [0, 1)")


@dataclass
class LstmOptions(ModelOptions):
    proj_size: int = option(0, "LSTM recurrent projection size, 0 for none; below "
                               "--hidden-size", minimum=0)

    def __post_init__(self):
        super().__post_init__()
        if self.num_layers < 1:
            raise ConfigError(f"--num-layers={self.num_layers}: must be >= 1 for an LSTM")
        if self.proj_size >= self.hidden_size:
            raise ConfigError(f"--proj-size={self.proj_size}: must be 0 (none) or below "
                              f"--hidden-size={self.hidden_size}")


@dataclass
class BlstmOptions(LstmOptions):
    blstm_subsampling_factor: int = option(
        1, "BLSTM: output every n-th frame (3 for a chain model, --objective=lfmmi): the first "
           "layer runs at the input rate, the others at the output rate, and a second (xent) "
           "output is added", minimum=1)

