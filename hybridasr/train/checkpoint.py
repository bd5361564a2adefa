"""Training state on disk, so that ``train.sh`` run again resumes where it stopped.

``<dir>/nnet/epoch<N>.nnet`` (a model, ``hybridasr.models.save_model``; ``combined.nnet``:
``hybridasr.train.combine``'s), ``epoch<N>.opt``
(the optimizer's state dict), under ``--parallel=average`` with a decay ``epoch<N>.avg`` (the
parameter averager's previous average V(t-1), ``ParameterAverager.state_dict``) and, for a
model newbob did not accept, ``epoch<N>.nnet_rejected``. ``<dir>/train_state.json`` names the
last finished epoch, the best model and the schedule's state; a run killed mid-epoch restarts
that epoch from the best model, with the same batches and random state, and loses nothing else
(or resumes it at the batch of its last in-epoch checkpoint, ``hybridasr.train.partial``:
``epoch<N>.partial.json`` naming ``epoch<N>.batch<K>.partial``).

Every file is written atomically and durably (``hybridasr.utils.atomic``: the file and its
directory are fsynced before the ``with`` block returns), and an epoch's files are all written
before ``train_state.json`` names that epoch: after a crash or a power loss the state never
names a torn or missing file.

``remove_run`` (``train.py --restart=true``) removes these files, and only these, so that the
next training starts from scratch; a training that finds no ``train_state.json`` does the same
first, so that nothing of an earlier, unfinished run is used.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
from typing import List, Optional

import torch

from hybridasr.errors import FormatError, HybridAsrError
from hybridasr.utils.atomic import atomic_open, atomic_path, fsync_dir

STATE_FILE = "train_state.json"
# what the trainer writes in the exp dir beside nnet/ (train.conf and config.json are the
# command line's, rewritten by every run; logs and the files train.sh copies are not the trainer's)
RUN_FILES = ("metrics.jsonl", "curves.png", "global_stats.json", "combine.json")
# (and the in-epoch checkpoints, ``hybridasr.train.partial``: epoch<N>.partial.json, the
# pointer, and epoch<N>.batch<K>.partial)
_MODEL_FILE = re.compile(r"^(epoch\d+\.(nnet|nnet_rejected|opt|avg|partial\.json|"
                         r"batch\d+\.partial)|combined\.nnet)$")

log = logging.getLogger(__name__)


def model_path(exp_dir: str, epoch: int, rejected: bool = False) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.nnet" + ("_rejected" if rejected else ""))


def optimizer_path(exp_dir: str, epoch: int) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.opt")


def average_path(exp_dir: str, epoch: int) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.avg")


def save_average(path: str, state: Optional[dict]) -> None:
    """``ParameterAverager.state_dict()`` (None or no previous average: nothing is written)."""
    if not state or state.get("previous") is None:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_average(path: str, device) -> Optional[dict]:
    """The averager state saved with an accepted epoch, or None when there is none (the
    initial model, or a training without a decay)."""
    if not os.path.exists(path):
        return None
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is a format error
        raise FormatError(f"{path}: not a readable parameter average ({e})") from None


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
        raise FormatError(f"{path}: not valid JSON ({e}); train with --restart=true to start "
                          f"from scratch") from None


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
    fsync_dir(exp_dir)
    return final


def _own_or_its_tmp(name: str, own) -> bool:
    """``own(name)``, or ``name`` is a temporary file an atomic write of such a file left
    (``hybridasr.utils.atomic``: ``.<name>.<random>.tmp``)."""
    m = re.match(r"^\.(.+)\.[^.]+\.tmp$", name)
    return bool(own(name) or (m and own(m.group(1))))


def remove_run(exp_dir: str) -> List[str]:
    """Removes the files of a training from ``exp_dir`` and returns their paths: nnet/epoch*,
    ``train_state.json``, ``final.nnet`` (a symlink: a plain file of that name is not the
    trainer's), ``RUN_FILES`` and temporary files of these; nothing else (not train.conf or
    config.json, the logs, the files train.sh copies beside them, the decode dirs). In an order
    that a kill at any moment leaves either the old run, which a resume completes, or a dir
    that a new training starts over in: ``final.nnet`` first (a finished run resumed links it
    again), then ``train_state.json``, the commit point (a training that finds no state calls
    this itself before it starts), then the rest."""
    removed: List[str] = []
    if not os.path.isdir(exp_dir):
        return removed

    def rm(path: str) -> None:
        os.unlink(path)
        removed.append(path)

    final = os.path.join(exp_dir, "final.nnet")
    for path in (final, final + ".tmp"):  # link_final's symlinks
        if os.path.islink(path):
            rm(path)
    fsync_dir(exp_dir)
    state = os.path.join(exp_dir, STATE_FILE)
    if os.path.lexists(state):
        rm(state)
        fsync_dir(exp_dir)
    top = (STATE_FILE,) + RUN_FILES
    for name in sorted(os.listdir(exp_dir)):
        path = os.path.join(exp_dir, name)
        if _own_or_its_tmp(name, top.__contains__) and not os.path.isdir(path):
            rm(path)
    nnet = os.path.join(exp_dir, "nnet")
    if os.path.isdir(nnet):
        for name in sorted(os.listdir(nnet)):
            path = os.path.join(nnet, name)
            if _own_or_its_tmp(name, _MODEL_FILE.match) and not os.path.isdir(path):
                rm(path)
        fsync_dir(nnet)
        if not os.listdir(nnet):
            os.rmdir(nnet)
    fsync_dir(exp_dir)
    if removed:
        log.info("removed %d file(s) of an earlier training from %s", len(removed), exp_dir)
    return removed


class NoImprovementError(HybridAsrError):
    """Every trained epoch was rejected: the best model is still the initial one."""


def improved_on_initial(state: dict) -> bool:
    """False when training has finished, trained epochs and accepted none of them."""
    trained = [h for h in state["history"] if h.get("epoch", 0) > 0]
    return not (state.get("done") and state.get("best_epoch", 0) == 0 and trained)


def check_improved(exp_dir: str, state: dict, remove_final: bool = True) -> None:
    """Raises ``NoImprovementError`` when training has finished and no epoch improved on the
    initial model (Kaldi's train_scheduler.sh: "Error training was not improving the initial
    network"), naming the rejected epochs and their learning rates; a ``final.nnet`` left in
    ``exp_dir`` is removed (``remove_final``) so that nothing downstream takes the untrained
    model for a trained one. Schedules that keep every epoch (RETURNN's) only get here when
    every epoch diverged."""
    if improved_on_initial(state):
        return
    trained = [h for h in state["history"] if h.get("epoch", 0) > 0]
    if remove_final:
        final = os.path.join(exp_dir, "final.nnet")
        if os.path.lexists(final):
            os.unlink(final)
            fsync_dir(exp_dir)
    init = state["history"][0]
    epochs = ", ".join(f"{h['epoch']} (learning rate {h['lr']:g}, " + (
        f"cv loss {h['cv_loss']:.4f})" if _finite(h.get("cv_loss")) else "loss NaN/inf" + (
            f" in {h['diverged_at']})" if h.get("diverged_at") else ")"))
        for h in trained)
    lr = trained[0]["lr"]
    raise NoImprovementError(
        f"{exp_dir}: training did not improve on the initial model ({init.get('model')}"
        + (f", cv loss {init['cv_loss']:.4f}" if _finite(init.get("cv_loss")) else "")
        + f"): every epoch was rejected: epoch{'s' if len(trained) > 1 else ''} {epochs}; "
        f"no final.nnet was made. The learning rate {lr:g} is probably too large: try a "
        f"smaller --learning-rate (e.g. {lr / 10:g}) in a new exp dir")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
