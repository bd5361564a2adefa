"""The optimizer: Adam (fused where torch has it) or SGD with momentum, over the model's
parameter groups (a model may give layers their own learning-rate factor and l2, as Kaldi's
per-layer ``learning-rate-factor`` and ``l2-regularize``)."""
from __future__ import annotations

from typing import List

import torch

from hybridasr.train.options import TrainConfig


def parameter_groups(model: torch.nn.Module, cfg: TrainConfig, lr: float) -> List[dict]:
    """The optimizer's parameter groups: the model's own (``param_groups()``: each with an
    ``lr_factor`` and a ``weight_decay`` where the model sets one, as Kaldi's per-layer
    ``learning-rate-factor`` and ``l2-regularize``), else one group; ``--weight-decay`` where
    the model sets none. The group of factor 1 first (its rate is the schedule's)."""
    own = getattr(model, "param_groups", None)
    groups = own() if own is not None else [{"params": list(model.parameters())}]
    out = []
    for g in groups:
        params = [p for p in g["params"] if p.requires_grad]
        if params:
            factor = float(g.get("lr_factor", 1.0))
            out.append({"params": params, "lr_factor": factor, "lr": lr * factor,
                        "weight_decay": float(g.get("weight_decay", cfg.weight_decay))})
    return sorted(out, key=lambda g: g["lr_factor"] != 1.0)


def set_learning_rate(optimizer, lr: float) -> None:
    """The schedule's rate ``lr`` in every group, times the group's ``lr_factor``."""
    for g in optimizer.param_groups:
        g["lr"] = lr * g.get("lr_factor", 1.0)


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig, lr: float):
    groups = parameter_groups(model, cfg, lr)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=cfg.momentum)
    try:  # the fused kernel removes most of Adam's per-parameter overhead (CPU and GPU)
        return torch.optim.Adam(groups, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(groups, lr=lr)
