"""The models by name (``--model``), their options, the model config dict and ``build_model``.

Each model class declares its options in ``Options`` (``hybridasr.models.options``,
``mlp.MlpOptions``); ``model_options()`` is ``--model`` and all of them once, for the command
line and ``--model-config`` files (``MODEL_CONFIG``). The config is a dict of plain JSON
types: ``model`` and the options of that model, e.g. ``{"model": "blstm", "num_layers": 3,
"hidden_size": 512, "dropout": 0.1, "proj_size": 0}`` (``activation`` instead of
``proj_size`` for ``mlp``); it is stored in every saved model and rebuilds it (missing keys
take the declared defaults).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Dict, List

import torch

from hybridasr.errors import ConfigError
from hybridasr.models.blstm import Blstm
from hybridasr.models.lstm import Lstm
from hybridasr.models.mlp import Mlp
from hybridasr.options import OptionSpec, from_values, option, option_specs

MODELS: Dict[str, type] = {"blstm": Blstm, "lstm": Lstm, "mlp": Mlp}
# the config-file option of the model options (``parser.add_config_file_option(*MODEL_CONFIG)``)
MODEL_CONFIG = ("--model-config", "config file of model options (e.g. conf/model/blstm.conf); "
                "read after --config, the command line wins")


@dataclass
class ModelChoice:
    model: str = option("blstm", "blstm: bidirectional LSTM; lstm: unidirectional LSTM, for "
                                 "truncated BPTT and --label-delay; mlp: feed-forward on "
                                 "spliced frames (--splice)", choices=tuple(MODELS))


def model_options() -> List[OptionSpec]:
    """``--model`` and every model's options, each once."""
    specs: Dict[str, OptionSpec] = {}
    for cls in (ModelChoice, *(m.Options for m in MODELS.values())):
        for s in option_specs(cls):
            if specs.setdefault(s.dest, s) != s:
                raise TypeError(f"{cls.__name__} declares {s.flag} unlike another model")
    return list(specs.values())


def model_class(name: str) -> type:
    """The class of ``--model=name``, for its capabilities (``recurrent``, ``carries_state``)
    without building it."""
    if name not in MODELS:
        raise ConfigError(f"--model={name}: expected one of {', '.join(MODELS)}")
    return MODELS[name]


def model_config_from_args(args) -> dict:
    """The model config of parsed options (only the keys its model uses), validated."""
    own = [s.dest for s in option_specs(model_class(args.model).Options)]
    return normalize_config({"model": args.model, **{k: getattr(args, k) for k in own}})


def normalize_config(config: dict) -> dict:
    """A validated copy of ``config`` with defaults for missing keys; ConfigError names the
    bad option. Keys of other models are dropped; keys no model has are an error."""
    if not isinstance(config, dict):
        raise ConfigError(f"model config must be a dict, got {type(config).__name__}")
    name = config.get("model", ModelChoice.model)
    cls = model_class(name)
    unknown = sorted(set(config) - {s.dest for s in model_options()})
    if unknown:
        raise ConfigError(f"model config: unknown key(s) {', '.join(unknown)}")
    own = {s.dest for s in option_specs(cls.Options)}
    opts = from_values(cls.Options, {k: v for k, v in config.items() if k in own})
    return {"model": name, **dataclasses.asdict(opts)}


def build_model(config: dict, input_dim: int, num_outputs: int) -> torch.nn.Module:
    """A fresh (randomly initialised, torch's default init) model of ``config``."""
    cfg = normalize_config(config)
    if int(input_dim) < 1 or int(num_outputs) < 1:
        raise ConfigError(f"model needs input_dim >= 1 and num_outputs >= 1, got "
                          f"{input_dim} and {num_outputs}")
    options = {k: v for k, v in cfg.items() if k != "model"}
    return MODELS[cfg["model"]](int(input_dim), int(num_outputs), **options)
