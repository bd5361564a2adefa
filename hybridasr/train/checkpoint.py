"""Training state on disk, so that ``train.sh`` run again resumes where it stopped.

``<dir>/nnet/epoch<N>.nnet`` (a model, ``hybridasr.models.save_model``), ``epoch<N>.opt``
(the optimizer's state dict) and, for a model newbob did not accept, ``epoch<N>.nnet_rejected``.
``<dir>/train_state.json`` (written atomically after an epoch's files) names the last finished
epoch, the best model and the schedule's state; a run killed mid-epoch restarts that epoch from
the best model, with the same batches and random state, and loses nothing else.
"""
from __future__ import annotations

import json
import os
from typing import Optional

import torch

from hybridasr.errors import FormatError
from hybridasr.utils.atomic import atomic_open, atomic_path

STATE_FILE = "train_state.json"


def model_path(exp_dir: str, epoch: int, rejected: bool = False) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.nnet" + ("_rejected" if rejected else ""))


def optimizer_path(exp_dir: str, epoch: int) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.opt")


def save_optimizer(path: str, optimizer: torch.optim.Optimizer) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save(optimizer.state_dict(), tmp)


def load_optimizer(path: str, optimizer: torch.optim.Optimizer, device) -> None:
    try:
        sd = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is a format error
        raise FormatError(f"{path}: not a readable optimizer state ({e})") from None
    optimizer.load_state_dict(sd)


def read_state(exp_dir: str) -> Optional[dict]:
    path = os.path.join(exp_dir, STATE_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise FormatError(f"{path}: not valid JSON ({e}); delete it to train from scratch") \
            from None


def write_state(exp_dir: str, state: dict) -> None:
    with atomic_open(os.path.join(exp_dir, STATE_FILE), "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1, sort_keys=True)


def link_final(exp_dir: str, best: str) -> str:
    """``<dir>/final.nnet`` -> the best model (a relative symlink, as nnet1 does)."""
    final = os.path.join(exp_dir, "final.nnet")
    rel = os.path.relpath(os.path.abspath(best), os.path.abspath(exp_dir))
    tmp = final + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(rel, tmp)
    os.replace(tmp, final)
    return final
