"""One pass over a rank's batches: training (forward, the objective's loss, backward, update)
or evaluation (loss and error rate only).

The objective (``hybridasr.train.objective.Objective``, ``--objective``) gives each batch's
summed loss, errors and frames; the step divides the loss by the frames of the whole step,
over all ranks under DDP: DDP's gradient mean then equals one process's gradient on the same
global batch. Truncated-BPTT batches carry each
row's recurrent state to the next batch (detached; reset where a new utterance starts).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

import torch

from hybridasr.train.distributed import DistInfo, ParameterAverager, all_reduce_sum
from hybridasr.train.partial import set_rng_state

log = logging.getLogger(__name__)


@dataclass
class EpochStats:
    loss_sum: float = 0.0      # the objective's summed reported loss (nats)
    errors: int = 0            # the objective's errors (frames whose argmax is not the target)
    frames: int = 0            # the frames the objective counts (real frames with a target)
    padded_frames: int = 0     # batch size x longest, summed
    batches: int = 0
    seconds: float = 0.0
    diverged: bool = False
    diverged_at: str = ""      # where the loss went NaN/inf: the batch and its utterances
    extra: dict = field(default_factory=dict)

    @property
    def loss(self) -> float:
        return self.loss_sum / self.frames if self.frames else float("nan")

    @property
    def fer(self) -> float:
        return self.errors / self.frames if self.frames else float("nan")

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    def reduce(self, info: DistInfo) -> "EpochStats":
        """Sums the counts over ranks (time: the slowest rank)."""
        if not info.active:
            return self
        t = torch.tensor([self.loss_sum, self.errors, self.frames, self.padded_frames,
                          self.batches, 1.0 if self.diverged else 0.0], dtype=torch.float64,
                         device=info.device)
        all_reduce_sum(t, info)
        s = torch.tensor([self.seconds], dtype=torch.float64, device=info.device)
        if info.active:
            torch.distributed.all_reduce(s, op=torch.distributed.ReduceOp.MAX)
        v = t.tolist()
        return EpochStats(v[0], int(v[1]), int(v[2]), int(v[3]), int(v[4]), float(s.item()),
                          v[5] > 0, self.diverged_at, dict(self.extra))


def _where(batch, number: int, check_every: int, ddp: bool) -> str:
    """The batch whose loss was found NaN/inf, and its utterances (the loss is read back every
    ``check_every`` batches: it went bad in one of them; under DDP maybe on another rank)."""
    keys = [k for k in batch.keys if k]
    shown = ", ".join(keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
    where = f"batch {number} (utterances {shown})"
    if check_every > 1:
        where = (f"one of batches {max(number - check_every + 1, 1)}..{number} (the loss is "
                 f"checked every {check_every}; the last: utterances {shown})")
    return where + (" on this or another process" if ddp else "")


def _model_outputs(model, feats, lengths, state, carry: bool, kwargs: dict):
    if carry:
        return model(feats, lengths, state=state, return_state=True, **kwargs)
    return model(feats, lengths, **kwargs), None


def _reset_rows(state, reset: Optional[torch.Tensor]):
    """Detaches a carried recurrent state and zeros the rows that start a new utterance."""
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(_reset_rows(s, reset) for s in state)
    s = state.detach()
    if reset is not None and bool(reset.any()):
        keep = (~reset).to(s.device, s.dtype)
        shape = [1] * s.dim()
        # the batch dimension of an LSTM state (layers, batch, hidden) is 1
        bdim = 1 if s.dim() == 3 else 0
        shape[bdim] = -1
        s = s * keep.view(shape)
    return s


class Progress:
    def __init__(self, what: str, total_batches: int, every: float):
        self.what, self.total, self.every = what, max(total_batches, 1), every
        self.start = self.last = time.perf_counter()

    def due(self) -> bool:
        return self.every > 0 and time.perf_counter() - self.last >= self.every

    def update(self, done: int, frames: int, loss: float) -> None:
        now = time.perf_counter()
        self.last = now
        el = now - self.start
        eta = el / done * (self.total - done) if done else float("nan")
        log.info("%s: %d/%d batches (%.0f%%), %d frames, %.0f frames/s, loss %.4f, ETA %.0fs",
                 self.what, done, self.total, 100.0 * done / self.total, frames,
                 frames / el if el > 0 else 0.0, loss, eta)


def run_epoch(model: torch.nn.Module, batches: Iterable, info: DistInfo, *,
              optimizer: Optional[torch.optim.Optimizer] = None,
              clip_grad_norm: float = 0.0, amp: str = "none",
              averager: Optional[ParameterAverager] = None, ddp: bool = False,
              what: str = "train", total_batches: int = 0,
              progress_every: float = 30.0, check_every: int = 0,
              resume: Optional[EpochStats] = None, rng_state: Optional[dict] = None,
              checkpoints=None, objective=None) -> EpochStats:
    """Trains on (``optimizer`` given) or evaluates ``batches``; returns this rank's stats
    (``EpochStats.reduce`` sums them over ranks).

    An epoch resumed from an in-epoch checkpoint (``hybridasr.train.partial``) gets the
    batches after it, the counts so far (``resume``) and the random state (``rng_state``, set
    once the loader has given its first batch: making the loader's iterator draws from
    torch's generator, as it did at the start of the uninterrupted epoch). ``checkpoints``:
    ``due(batches_done)`` after each batch, then ``save(stats_so_far)``.

    Loss and error counts accumulate on the device; the host reads them back (a GPU sync)
    only every ``check_every`` batches (default: every batch on the CPU, every 32 on a GPU),
    which is also when a NaN/inf loss is noticed; under DDP every step exchanges the frame
    count and a NaN flag anyway.

    ``objective``: a callable ``(logits [B, T, P], batch) -> (loss, reported loss, errors,
    frames)`` (``hybridasr.train.objective.Objective``); None: the default ``--objective``
    with its default options."""
    if objective is None:
        from hybridasr.train.objectives import default_objective

        objective = default_objective()
    training = optimizer is not None
    model.train(training)
    stats = EpochStats() if resume is None else dataclasses.replace(resume, extra={})
    before = stats.seconds  # of the batches before a resume
    progress = Progress(what, total_batches, progress_every)
    device = info.device
    if check_every <= 0:
        check_every = 1 if device.type == "cpu" else 32
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if amp == "bf16"
                else contextlib.nullcontext())
    loss_acc = torch.tensor(float(stats.loss_sum), dtype=torch.float64, device=device)
    err_acc = torch.tensor(int(stats.errors), dtype=torch.int64, device=device)
    state = None
    # what the objective asks of the model's forward (the xent output of a chain model)
    model_kwargs = getattr(objective, "model_kwargs", lambda m: {})(getattr(model, "module",
                                                                            model))
    model_inputs = getattr(objective, "model_inputs", None)  # (an objective's augmentation)
    start = time.perf_counter()
    grad_ctx = contextlib.nullcontext() if training else torch.no_grad()
    skip_updates = False  # --parallel=average: a rank went NaN; wait for the next sync
    with grad_ctx:
        for batch in batches:
            if rng_state is not None:
                set_rng_state(rng_state)
                rng_state = None
            carry = bool(batch.carry_state)
            state = _reset_rows(state, batch.reset) if carry else None
            feats = batch.feats.to(device, non_blocking=True)
            if model_inputs is not None:
                feats = model_inputs(feats, batch, training)
            with autocast:
                logits, state = _model_outputs(model, feats, batch.lengths, state, carry,
                                               model_kwargs)
            loss_sum, reported, errors, num = objective(logits, batch)
            err_acc += errors
            loss_acc += reported
            stats.batches += 1
            check = stats.batches % check_every == 0
            finite = True
            if training:
                denom = num
                if ddp:  # frames of the global step, and whether any rank went NaN
                    t = torch.stack([torch.tensor(float(num), device=device),
                                     (~torch.isfinite(loss_sum.detach())).float()])
                    all_reduce_sum(t, info)
                    total, bad = t.tolist()
                    denom, finite = total / info.world_size, bad == 0
                elif check:
                    finite = bool(torch.isfinite(loss_acc))
                if not finite:
                    stats.diverged = True
                    stats.diverged_at = stats.diverged_at or _where(batch, stats.batches,
                                                                    check_every, ddp)
                    if averager is None:
                        break
                    skip_updates = True
                if not skip_updates:
                    optimizer.zero_grad(set_to_none=True)
                    (loss_sum / max(denom, 1)).backward()
                    if clip_grad_norm > 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
                    optimizer.step()
                if averager is not None and averager.step(skip_updates):
                    stats.diverged = True
                    break
            stats.frames += num
            stats.padded_frames += int(batch.feats.shape[0] * batch.feats.shape[1])
            if progress.due():
                progress.update(stats.batches, stats.frames, float(loss_acc) / max(stats.frames, 1))
            if checkpoints is not None and checkpoints.due(stats.batches):
                now = dataclasses.replace(stats, loss_sum=float(loss_acc), errors=int(err_acc),
                                          seconds=before + time.perf_counter() - start,
                                          extra={})
                if not math.isfinite(now.loss_sum):  # never a checkpoint of a diverged model
                    stats.diverged = True
                    break
                checkpoints.save(now)
        if training and averager is not None and not stats.diverged:
            if averager.finish(skip_updates):  # end of epoch: everyone leaves equal
                stats.diverged = True
    stats.loss_sum = float(loss_acc)  # one sync at the end
    stats.errors = int(err_acc)
    stats.seconds = before + time.perf_counter() - start
    if not math.isfinite(stats.loss_sum):
        stats.diverged = True
    return stats
