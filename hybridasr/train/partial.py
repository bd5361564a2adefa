"""Checkpoints inside an epoch (``--checkpoint-every`` minutes, ``--checkpoint-every-batches``),
from which a killed training resumes at the batch, ending with the model an uninterrupted run
makes.

An epoch's batches are a function of (seed, epoch) (``hybridasr.data.epoch``), so a checkpoint
holds only what the batches done have changed: the model, the optimizer state, the random
state (dropout), the epoch's running counts (``EpochStats``) and how many batches are done.
Two files in ``<dir>/nnet``:

- ``epoch<N>.batch<K>.partial``: that state after batch K of epoch N (a torch file, loaded
  with ``weights_only=True``), written atomically and durably;
- ``epoch<N>.partial.json``: the pointer, written after it (atomically and durably): the data
  file, K, the model the epoch started from, its learning rate and the epoch plan's figures,
  which a resume checks. The previous data file is removed once the new pointer is on disk.

Once the epoch's own commit point (``train_state.json``) names epoch N, its partial files are
removed; a pointer of an epoch that is already committed is ignored and removed. A pointer
that cannot be read is an error naming it (it is written atomically, so it is never torn by a
kill: an unreadable one was damaged otherwise, and silently dropping it could throw away hours
of an LVCSR epoch); deleting it restarts the epoch from its first batch.

Single-process training only: under ``torchrun`` (each rank's counts and random state would
have to be gathered) and for models carrying recurrent state between batches (TBPTT) the
checkpoints stay per epoch, as the log says.
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Optional

import torch

from hybridasr.errors import ConfigError, FormatError
from hybridasr.train.optimizer import set_learning_rate
from hybridasr.utils.atomic import atomic_open, atomic_path, fsync_dir

log = logging.getLogger(__name__)

_POINTER = re.compile(r"^epoch(\d+)\.partial\.json$")
_DATA = re.compile(r"^epoch(\d+)\.batch(\d+)\.partial$")
STATS_FIELDS = ("loss_sum", "errors", "frames", "padded_frames", "batches", "seconds")
PLAN_FIELDS = ("num_batches", "num_sequences", "real_frames", "padded_frames")


def pointer_path(exp_dir: str, epoch: int) -> str:
    return os.path.join(exp_dir, "nnet", f"epoch{epoch}.partial.json")


def data_name(epoch: int, batches: int) -> str:
    return f"epoch{epoch}.batch{batches}.partial"


class Trigger:
    """When a checkpoint is due: every ``batches`` batches of the epoch (counted from its
    first batch, so a resumed epoch checkpoints where an uninterrupted one would), or
    ``minutes`` after the last checkpoint (or the start); never after the epoch's last batch
    (the epoch's own checkpoint follows)."""

    def __init__(self, minutes: float, batches: int, total_batches: int):
        self.seconds, self.batches, self.total = minutes * 60.0, batches, total_batches
        self.last = time.monotonic()

    def due(self, done: int) -> bool:
        if done >= self.total:
            return False
        if self.batches and done % self.batches == 0:
            return True
        return self.seconds > 0 and time.monotonic() - self.last >= self.seconds

    def saved(self) -> None:
        self.last = time.monotonic()


def rng_state() -> dict:
    """The torch generators dropout draws from (numpy and ``random`` are not used in
    training: the batch plan has its own seeded generator)."""
    st = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict) -> None:
    torch.set_rng_state(st["cpu"])
    if "cuda" in st:
        torch.cuda.set_rng_state_all(st["cuda"])


def save(exp_dir: str, epoch: int, stats, model, optimizer, info: dict) -> str:
    """Writes the state after ``stats.batches`` batches of ``epoch`` (the data file, then the
    pointer naming it) and removes the epoch's older data file; returns the pointer's path.
    ``info``: what a resume checks (``start_model``, ``lr``, ``plan``)."""
    nnet = os.path.join(exp_dir, "nnet")
    name = data_name(epoch, stats.batches)
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "rng": rng_state(), "stats": {k: getattr(stats, k) for k in STATS_FIELDS}}
    with atomic_path(os.path.join(nnet, name)) as tmp:
        torch.save(state, tmp)
    pointer = pointer_path(exp_dir, epoch)
    with atomic_open(pointer, "w", encoding="utf-8") as f:
        json.dump(dict(info, epoch=epoch, batches=stats.batches, file=name), f, indent=1,
                  sort_keys=True)
    for other in os.listdir(nnet):
        m = _DATA.match(other)
        if m and int(m.group(1)) == epoch and other != name:
            os.unlink(os.path.join(nnet, other))
    return pointer


def read_pointer(exp_dir: str, epoch: int) -> Optional[dict]:
    path = pointer_path(exp_dir, epoch)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
        if not isinstance(p, dict):
            raise ValueError("not a JSON object")
        for key in ("epoch", "batches", "file", "start_model", "lr", "plan"):
            if key not in p:
                raise ValueError(f"no {key!r}")
        if int(p["epoch"]) != epoch or not _DATA.match(str(p["file"])):
            raise ValueError(f"names epoch {p['epoch']} and file {p['file']!r}")
    except (OSError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise FormatError(f"{path}: not a readable in-epoch checkpoint pointer ({e}); delete "
                          f"it to train epoch {epoch} from its first batch, or train with "
                          f"--restart=true to start from scratch") from None
    return p


def load(exp_dir: str, epoch: int, start_model: str, lr: float, plan: dict,
         device) -> Optional[dict]:
    """The checkpoint of ``epoch`` (None when there is none), checked against the epoch
    about to be trained: started from ``start_model`` with ``lr``, with the same plan."""
    p = read_pointer(exp_dir, epoch)
    if p is None:
        return None
    path = pointer_path(exp_dir, epoch)
    want = {"start_model": start_model, "lr": lr,
            "plan": {k: plan.get(k) for k in PLAN_FIELDS}}
    got = {"start_model": p["start_model"], "lr": p["lr"],
           "plan": {k: p["plan"].get(k) for k in PLAN_FIELDS}}
    if got != want:
        raise ConfigError(f"{path}: epoch {epoch} was checkpointed at batch {p['batches']} "
                          f"with {got}, but would now be trained with {want} (the data or "
                          f"the batching options changed); delete it to train epoch {epoch} "
                          f"from its first batch, or use --restart=true")
    data = os.path.join(exp_dir, "nnet", p["file"])
    try:
        state = torch.load(data, map_location=device, weights_only=True)
        stats = state["stats"]
        if int(state["epoch"]) != epoch or int(stats["batches"]) != int(p["batches"]):
            raise ValueError(f"holds epoch {state['epoch']} batch {stats['batches']}")
    except Exception as e:  # noqa: BLE001 - any unreadable file is a format error
        raise FormatError(f"{data} (named by {path}): not a readable in-epoch checkpoint "
                          f"({e}); delete {path} to train epoch {epoch} from its first "
                          f"batch") from None
    nnet = os.path.dirname(data)
    for other in os.listdir(nnet):  # a newer one whose pointer a kill kept from being written
        m = _DATA.match(other)
        if m and int(m.group(1)) == epoch and other != p["file"]:
            os.unlink(os.path.join(nnet, other))
    state["pointer"] = path
    return state


def remove(exp_dir: str, upto_epoch: int) -> list:
    """Removes the partial files of epochs up to ``upto_epoch`` (committed: the epoch's own
    checkpoint replaces them), each pointer before its data files."""
    nnet = os.path.join(exp_dir, "nnet")
    if not os.path.isdir(nnet):
        return []
    removed = []
    names = sorted(os.listdir(nnet), key=lambda n: (not _POINTER.match(n), n))
    for name in names:
        m = _POINTER.match(name) or _DATA.match(name)
        if m and int(m.group(1)) <= upto_epoch:
            os.unlink(os.path.join(nnet, name))
            removed.append(name)
    if removed:
        fsync_dir(nnet)
    return removed


def check_enabled(minutes: float, batches: int, reason_off: str) -> bool:
    """Whether in-epoch checkpoints are made (logs why not when they were asked for)."""
    if not (minutes > 0 or batches > 0):
        return False
    if reason_off:
        log.info("in-epoch checkpoints (--checkpoint-every, --checkpoint-every-batches) are "
                 "off: %s; a killed epoch is trained again from its start", reason_off)
        return False
    return True


def resume(exp_dir: str, model, optimizer, epoch: int, start_model: str, plan: dict,
           device) -> Optional[dict]:
    """Loads the model and optimizer state of the epoch's checkpoint into ``model`` and
    ``optimizer`` (whose learning rate is the epoch's) and returns ``{"stats": the counts
    so far, "rng": the random state}``; None when the epoch has no checkpoint."""
    lr = optimizer.param_groups[0]["lr"]
    st = load(exp_dir, epoch, start_model, lr, plan, device)
    if st is None:
        return None
    model.load_state_dict(st["model"])
    optimizer.load_state_dict(st["optimizer"])
    set_learning_rate(optimizer, lr)
    stats = {k: st["stats"][k] for k in STATS_FIELDS}
    log.info("epoch %d: resumed at batch %d of %d from %s", epoch, stats["batches"],
             plan["num_batches"], st["pointer"])
    return {"stats": stats, "rng": st["rng"]}


class EpochCheckpoints:
    """``run_epoch``'s ``checkpoints`` for one epoch: when one is due, and writing it."""

    def __init__(self, exp_dir: str, model, optimizer, epoch: int, plan: dict,
                 total_batches: int, start_model: str, minutes: float, batches: int):
        self.exp, self.model, self.optimizer, self.epoch = exp_dir, model, optimizer, epoch
        self.trigger = Trigger(minutes, batches, total_batches)
        self.info = {"start_model": start_model, "lr": optimizer.param_groups[0]["lr"],
                     "plan": {k: plan.get(k) for k in PLAN_FIELDS}}

    def due(self, done: int) -> bool:
        return self.trigger.due(done)

    def save(self, stats) -> None:
        t0 = time.perf_counter()
        path = save(self.exp, self.epoch, stats, self.model, self.optimizer, self.info)
        self.trigger.saved()
        log.info("epoch %d: checkpoint at batch %d (%s, %.1fs)", self.epoch, stats.batches,
                 path, time.perf_counter() - t0)
