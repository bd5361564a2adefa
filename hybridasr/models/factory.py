"""Model options (``--model``, ``--num-layers``, ...), the model config dict and ``build_model``.

The config is a dict of plain JSON types, e.g. ``{"model": "blstm", "num_layers": 3,
"hidden_size": 512, "proj_size": 0, "dropout": 0.1}`` (``activation`` instead of
``proj_size`` for ``mlp``); it is stored in every saved model and rebuilds it.
"""
from __future__ import annotations

import torch

from hybridasr.errors import ConfigError

MODELS = ("blstm", "lstm", "mlp")
DEFAULTS = {"model": "blstm", "num_layers": 3, "hidden_size": 512, "proj_size": 0,
            "dropout": 0.1, "activation": "sigmoid"}
KEYS = {"blstm": ("model", "num_layers", "hidden_size", "proj_size", "dropout"),
        "lstm": ("model", "num_layers", "hidden_size", "proj_size", "dropout"),
        "mlp": ("model", "num_layers", "hidden_size", "activation", "dropout")}


def add_model_options(parser) -> None:
    """Registers the model options and ``--model-config`` (a Kaldi config file of them)."""
    g = parser.add_argument_group("model")
    parser.add_config_file_option(
        "--model-config", "config file of model options (e.g. conf/model/blstm.conf); read "
                          "after --config, the command line wins")
    g.add_argument("--model", default=DEFAULTS["model"], choices=MODELS,
                   help="blstm: bidirectional LSTM; lstm: unidirectional LSTM (--tbptt, "
                        "--label-delay); mlp: feed-forward on spliced frames (--splice) "
                        "(default: %(default)s)")
    g.add_argument("--num-layers", type=int, default=DEFAULTS["num_layers"],
                   help="LSTM layers, or hidden layers of the mlp (default: %(default)s)")
    g.add_argument("--hidden-size", type=int, default=DEFAULTS["hidden_size"],
                   help="LSTM cells per direction, or hidden units of the mlp "
                        "(default: %(default)s)")
    g.add_argument("--proj-size", type=int, default=DEFAULTS["proj_size"],
                   help="LSTM recurrent projection size, 0 for none; below --hidden-size "
                        "(default: %(default)s)")
    g.add_argument("--dropout", type=float, default=DEFAULTS["dropout"],
                   help="dropout between LSTM layers / after mlp hidden layers "
                        "(default: %(default)s)")
    g.add_argument("--activation", default=DEFAULTS["activation"], choices=("sigmoid", "relu"),
                   help="mlp hidden-layer nonlinearity (default: %(default)s)")


def model_config_from_args(args) -> dict:
    """The model config of parsed options (only the keys its model uses), validated."""
    cfg = {k: getattr(args, k) for k in KEYS.get(args.model, KEYS["blstm"])}
    return normalize_config(cfg)


def normalize_config(config: dict) -> dict:
    """A validated copy of ``config`` with defaults for missing keys; ConfigError names the
    bad option."""
    if not isinstance(config, dict):
        raise ConfigError(f"model config must be a dict, got {type(config).__name__}")
    name = config.get("model", DEFAULTS["model"])
    if name not in KEYS:
        raise ConfigError(f"--model={name}: expected one of {', '.join(MODELS)}")
    unknown = sorted(set(config) - set(KEYS[name]) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"model config: unknown key(s) {', '.join(unknown)}")
    cfg = {k: config.get(k, DEFAULTS[k]) for k in KEYS[name]}
    try:
        cfg["num_layers"] = int(cfg["num_layers"])
        cfg["hidden_size"] = int(cfg["hidden_size"])
        cfg["dropout"] = float(cfg["dropout"])
        if "proj_size" in cfg:
            cfg["proj_size"] = int(cfg["proj_size"])
    except (TypeError, ValueError) as e:
        raise ConfigError(f"model config: {e}") from None
    min_layers = 0 if name == "mlp" else 1
    if cfg["num_layers"] < min_layers:
        raise ConfigError(f"--num-layers={cfg['num_layers']}: must be >= {min_layers} "
                          f"for --model={name}")
    if cfg["hidden_size"] < 1:
        raise ConfigError(f"--hidden-size={cfg['hidden_size']}: must be >= 1")
    if not 0.0 <= cfg["dropout"] < 1.0:
        raise ConfigError(f"--dropout={cfg['dropout']}: must be in [0, 1)")
    if "proj_size" in cfg and not 0 <= cfg["proj_size"] < cfg["hidden_size"]:
        raise ConfigError(f"--proj-size={cfg['proj_size']}: must be 0 (none) or below "
                          f"--hidden-size={cfg['hidden_size']}")
    if "activation" in cfg and cfg["activation"] not in ("sigmoid", "relu"):
        raise ConfigError(f"--activation={cfg['activation']}: expected sigmoid or relu")
    return cfg


def model_class(name: str) -> type:
    """The class of ``--model=name``, for its capabilities (``recurrent``, ``carries_state``)
    without building it."""
    if name == "blstm":
        from hybridasr.models.blstm import Blstm

        return Blstm
    if name == "lstm":
        from hybridasr.models.lstm import Lstm

        return Lstm
    if name == "mlp":
        from hybridasr.models.mlp import Mlp

        return Mlp
    raise ConfigError(f"--model={name}: expected one of {', '.join(MODELS)}")


def build_model(config: dict, input_dim: int, num_outputs: int) -> torch.nn.Module:
    """A fresh (randomly initialised, torch's default init) model of ``config``."""
    cfg = normalize_config(config)
    if int(input_dim) < 1 or int(num_outputs) < 1:
        raise ConfigError(f"model needs input_dim >= 1 and num_outputs >= 1, got "
                          f"{input_dim} and {num_outputs}")
    name = cfg["model"]
    if name == "blstm":
        from hybridasr.models.blstm import Blstm

        return Blstm(int(input_dim), int(num_outputs), cfg["num_layers"], cfg["hidden_size"],
                     cfg["proj_size"], cfg["dropout"])
    if name == "lstm":
        from hybridasr.models.lstm import Lstm

        return Lstm(int(input_dim), int(num_outputs), cfg["num_layers"], cfg["hidden_size"],
                    cfg["proj_size"], cfg["dropout"])
    from hybridasr.models.mlp import Mlp

    return Mlp(int(input_dim), int(num_outputs), cfg["num_layers"], cfg["hidden_size"],
               cfg["activation"], cfg["dropout"])
