"""The models by name (``--model``), their options, the model config dict and ``build_model``.

``MODELS`` is the models' registry (``hybridasr.registry``): one line per model, its class
and a summary for ``--help``. Each model class declares its options in ``Options``
(``hybridasr.models.options``, ``mlp.MlpOptions``); ``model_options()`` is ``--model`` and all
of them once, for the command line and ``--model-config`` files (``MODEL_CONFIG``). The config is a dict of plain JSON
types: ``model`` and the options of that model, e.g. ``{"model": "blstm", "num_layers": 3,
"hidden_size": 512, "dropout": 0.1, "proj_size": 0}`` (``activation`` instead of
``proj_size`` for ``mlp``); it is stored in every saved model and rebuilds it (missing keys
take the declared defaults).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List

import torch

from hybridasr.errors import ConfigError
from hybridasr.models.blstm import Blstm
from hybridasr.models.lstm import Lstm
from hybridasr.models.mlp import Mlp
from hybridasr.models.tdnnf import Tdnnf
from hybridasr.options import OptionSpec, option, option_specs
from hybridasr.registry import Registry

MODELS = Registry("model", "--model")
MODELS.add("blstm", Blstm, summary="bidirectional LSTM")
MODELS.add("lstm", Lstm, summary="unidirectional LSTM, for truncated BPTT and --label-delay")
MODELS.add("mlp", Mlp, summary="feed-forward on spliced frames (--splice)")
MODELS.add("tdnnf", Tdnnf, summary="factorised TDNN (Kaldi's tdnnf-layer), the chain model")
# a new model: its module and one line here, e.g. MODELS.add("tdnnf", Tdnnf, summary="...")
# the config-file option of the model options (``parser.add_config_file_option(*MODEL_CONFIG)``)
MODEL_CONFIG = ("--model-config", "config file of model options (e.g. conf/model/blstm.conf); "
                "read after --config, the command line wins")


@dataclass
class ModelChoice:
    model: str = option("blstm", MODELS.choice_help("; "), choices=tuple(MODELS))


def model_options() -> List[OptionSpec]:
    """``--model`` and every model's options, each once."""
    return MODELS.option_specs(ModelChoice)


def model_class(name: str) -> type:
    """The class of ``--model=name``, for its capabilities (``recurrent``, ``carries_state``)
    without building it."""
    return MODELS.entry(name).build


def model_config_from_args(args) -> dict:
    """The model config of parsed options (only the keys its model uses), validated."""
    own = [s.dest for s in option_specs(MODELS.options_class(args.model))]
    return normalize_config({"model": args.model, **{k: getattr(args, k) for k in own}})


def normalize_config(config: dict) -> dict:
    """A validated copy of ``config`` with defaults for missing keys; ConfigError names the
    bad option. Keys of other models are dropped; keys no model has are an error."""
    if not isinstance(config, dict):
        raise ConfigError(f"model config must be a dict, got {type(config).__name__}")
    name = config.get("model", ModelChoice.model)
    opts = MODELS.options(name, config, known=("model",))
    return {"model": name, **dataclasses.asdict(opts)}


def build_model(config: dict, input_dim: int, num_outputs: int) -> torch.nn.Module:
    """A fresh (randomly initialised, torch's default init) model of ``config``."""
    cfg = normalize_config(config)
    if int(input_dim) < 1 or int(num_outputs) < 1:
        raise ConfigError(f"model needs input_dim >= 1 and num_outputs >= 1, got "
                          f"{input_dim} and {num_outputs}")
    options = {k: v for k, v in cfg.items() if k != "model"}
    return MODELS[cfg["model"]](int(input_dim), int(num_outputs), **options)
