"""``newbob_rel``, ``newbob_abs``, ``newbob_multi_epoch``: RETURNN's ``NewbobRelative``,
``NewbobAbs`` and ``NewbobMultiEpoch`` (``returnn/learning_rate_control.py``) with RETURNN's
option names and defaults.

After epoch e the rate of epoch e+1 is computed from the CV losses of the trained epochs (the
initial model's loss is not one: RETURNN has no epoch 0, so epoch 1 never changes the rate):
it is multiplied by ``newbob_learning_rate_decay`` (never below ``min_learning_rate``) when
the change from epoch e-1 to e is above the threshold, else by
``newbob_learning_rate_growth``. The relative change is (new - old) / |new| (RETURNN's
default; / |old| with ``newbob_relative_error_div_by_old``), optionally divided by lr /
initial lr (``learning_rate_control_relative_error_relative_lr``); ``newbob_abs`` uses
new - old against ``newbob_error_threshold``. ``newbob_multi_epoch`` averages the relative
changes over the last ``newbob_multi_num_epochs`` + 1 epochs (fewer at the start, at least
2), only when (e+1) % ``newbob_multi_update_interval`` == 1 (the interval defaults to the
number of epochs), decays above the threshold and grows below
``newbob_relative_error_grow_threshold``. ``learning_rate_control_min_num_epochs_per_new_lr``
N > 1 holds a rate until the last N epochs all used it. As in RETURNN every epoch is kept
(training goes on from the last model); ``max_iters`` epochs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from hybridasr.errors import ConfigError
from hybridasr.options import option
from hybridasr.train.schedules.base import EpochDecision, LrSchedule, ScheduleOptions


@dataclass
class ReturnnOptions(ScheduleOptions):
    newbob_learning_rate_decay: float = option(0.5, "RETURNN newbob_*: decay factor; "
                                                    "0 < f <= 1", above=0.0, maximum=1.0)
    newbob_learning_rate_growth: float = option(1.0, "RETURNN newbob_*: growth factor "
                                                     "(applied when not decaying)")
    newbob_relative_error_threshold: float = option(
        -0.01, "RETURNN newbob_rel/newbob_multi_epoch: decay when the relative change is above "
               "this")
    newbob_relative_error_grow_threshold: Optional[float] = option(
        None, "RETURNN newbob_multi_epoch: grow when the mean relative change is below this "
              "(unset: --newbob-relative-error-threshold)")
    newbob_relative_error_div_by_old: bool = option(
        False, "RETURNN: relative change is (new - old) / |old| (else / |new|, RETURNN's "
               "default)")
    learning_rate_control_relative_error_relative_lr: bool = option(
        False, "RETURNN: divide the relative change by learning rate / initial learning rate")
    learning_rate_control_min_num_epochs_per_new_lr: int = option(
        0, "RETURNN: keep a new learning rate for at least N epochs")
    newbob_error_threshold: float = option(
        -0.01, "RETURNN newbob_abs: decay when the absolute change is above this")
    newbob_multi_num_epochs: int = option(5, "RETURNN newbob_multi_epoch: epochs averaged",
                                          minimum=1)
    newbob_multi_update_interval: Optional[int] = option(
        None, "RETURNN newbob_multi_epoch: epochs between updates (unset: "
              "--newbob-multi-num-epochs)", minimum=1)


class _Returnn(LrSchedule):
    """RETURNN's LearningRateControl: the rate for the next epoch follows from the CV losses
    of the trained epochs (the initial loss is not one of them), every epoch is kept."""
    keep_every_epoch = True
    Options = ReturnnOptions

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        o = self.options
        self.initial_lr = float(o.learning_rate)
        self.decay = float(o.newbob_learning_rate_decay)
        self.growth = float(o.newbob_learning_rate_growth)
        self.div_by_old = bool(o.newbob_relative_error_div_by_old)
        self.relative_lr = bool(o.learning_rate_control_relative_error_relative_lr)
        self.min_epochs_per_lr = int(o.learning_rate_control_min_num_epochs_per_new_lr)
        self.history: List[list] = []  # [epoch, learning rate used, cv loss] per trained epoch

    def _relative_error(self, old: list, new: list) -> Optional[float]:
        den = abs(old[2] if self.div_by_old else new[2])
        if den == 0:
            return None
        rel = (new[2] - old[2]) / den
        if self.relative_lr and new[1] > 0:
            rel /= new[1] / self.initial_lr
        return rel

    def _next(self, epoch: int):
        """(decay, grow, text) for the epoch after ``epoch``; None: keep the rate."""
        raise NotImplementedError

    def _decide(self, epoch: int, cv: float) -> EpochDecision:
        self.history.append([int(epoch), self.lr, cv])
        n = self.min_epochs_per_lr
        if n > 1:
            lrs = [h[1] for h in self.history[-n:]]
            if len(set(lrs)) >= 2 or len(lrs) < n:
                return EpochDecision(True, self.lr, False, f"kept; rate held for {n} epochs")
        step = self._next(epoch)
        if step is None:
            return EpochDecision(True, self.lr, False, "kept")
        decay, grow, what = step
        lr = self.lr
        if decay:
            lr = max(lr * self.decay, self.min_learning_rate)
        elif grow:
            lr = lr * self.growth
        if lr != self.lr:
            what += f": learning rate {self.lr:g} -> {lr:g}"
        return EpochDecision(True, lr, False, "kept; " + what)


class NewbobRelative(_Returnn):
    name = "newbob_rel"

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        self.threshold = float(self.options.newbob_relative_error_threshold)

    def _next(self, epoch):
        if len(self.history) < 2:
            return None
        rel = self._relative_error(self.history[-2], self.history[-1])
        if rel is None:
            return None
        decay = rel > self.threshold
        return decay, not decay, (f"relative change {rel:.5f} "
                                  f"{'>' if decay else '<='} {self.threshold}")


class NewbobAbs(_Returnn):
    name = "newbob_abs"

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        self.threshold = float(self.options.newbob_error_threshold)

    def _next(self, epoch):
        if len(self.history) < 2:
            return None
        diff = self.history[-1][2] - self.history[-2][2]
        decay = diff > self.threshold
        return decay, not decay, (f"change {diff:.5f} {'>' if decay else '<='} "
                                  f"{self.threshold}")


class NewbobMultiEpoch(_Returnn):
    name = "newbob_multi_epoch"

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        o = self.options
        self.threshold = float(o.newbob_relative_error_threshold)
        self.grow_threshold = (self.threshold if o.newbob_relative_error_grow_threshold is None
                               else float(o.newbob_relative_error_grow_threshold))
        if self.grow_threshold > self.threshold:
            raise ConfigError("--newbob-relative-error-grow-threshold must not be above "
                              "--newbob-relative-error-threshold")
        self.num_epochs = int(o.newbob_multi_num_epochs)
        self.update_interval = int(o.newbob_multi_num_epochs
                                   if o.newbob_multi_update_interval is None
                                   else o.newbob_multi_update_interval)

    def _next(self, epoch):
        # the rate of epoch e+1 is updated when (e+1) % interval == 1 (epochs count from 1)
        if self.update_interval > 1 and (epoch + 1) % self.update_interval != 1:
            return None
        window = self.history[-(self.num_epochs + 1):]
        if len(window) < 2:
            return None
        rel = [self._relative_error(a, b) for a, b in zip(window, window[1:])]
        if any(r is None for r in rel):
            return None
        mean = sum(rel) / len(rel)
        decay, grow = mean > self.threshold, mean < self.grow_threshold
        return decay, grow, (f"mean relative change {mean:.5f} over {len(rel)} epochs")
