"""What every learning-rate schedule shares: the trainer's protocol and the common options.

The trainer calls ``start(initial_cv_loss)`` once, then ``epoch_done(epoch, train, cv)``
after each epoch (or ``diverged(epoch)`` when the loss went NaN/inf); the ``EpochDecision``
says whether the new model is accepted as the best (otherwise the next epoch starts again from
the best one), the next learning rate, and whether training stops. A schedule stops at
``max_iters`` epochs at the latest.

A NaN/inf epoch is rejected and the rate multiplied by ``halving_factor`` (all schedules).

``state_dict`` holds the schedule's plain attributes (int, float, str, bool, list, None) and
the options it was given: a restarted training continues exactly where it stopped. An option
given another value on the restart (``--max-iters``, ``--halving-factor``, ``--learning-rate``,
...) is applied from the next epoch, and logged: the attributes whose starting value it
changes take the new one (a new ``--learning-rate`` becomes the current rate), the rest of the
state (best loss, history, halving) is kept. So ``train.conf``, which records the options of the
latest command, says what is used.

- ``constant``: the same rate for ``max_iters`` epochs, every epoch kept.
"""
from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from typing import ClassVar, List, Optional

from hybridasr.errors import ConfigError
from hybridasr.options import from_values, option, option_specs

log = logging.getLogger(__name__)


@dataclass
class EpochDecision:
    accept: bool
    lr: float
    stop: bool
    reason: str


@dataclass
class ScheduleOptions:
    """The options of every schedule."""
    learning_rate: float = option(0.001, "initial learning rate")
    max_iters: int = option(20, "at most this many epochs", minimum=1)
    halving_factor: float = option(0.5, "newbob: multiply the rate by this when halving (all "
                                        "schedules: after a NaN/inf epoch); 0 < h <= 1",
                                   above=0.0, maximum=1.0)
    min_learning_rate: float = option(0.0, "never decay below this (plateau: stop below it)")
    cv_criterion: str = option("loss", "what judges an epoch on the cv set: loss (the "
                                       "objective, nnet1's) | errors (the objective's error "
                                       "rate: frame errors for cross-entropy)",
                               choices=("loss", "errors"))


class LrSchedule:
    """A schedule; ``Options`` declares its options (defaults there), which the constructor
    takes by name (``learning_rate`` also first, by position)."""
    name = "base"
    Options: ClassVar[type] = ScheduleOptions
    keep_every_epoch = False  # RETURNN-style: no rejection

    def __init__(self, learning_rate: Optional[float] = None, **options):
        if learning_rate is not None:
            options["learning_rate"] = learning_rate
        self.options = o = from_values(self.Options, options)
        if o.learning_rate <= 0:
            raise ConfigError(f"--learning-rate must be > 0, got {o.learning_rate}")
        self.lr = float(o.learning_rate)
        self.max_iters = int(o.max_iters)
        self.halving_factor = float(o.halving_factor)
        self.min_learning_rate = float(o.min_learning_rate)
        self.best: Optional[float] = None
        self.cv_history: List[float] = []

    # --- the trainer's calls ----------------------------------------------------------
    def start(self, initial_cv_loss: Optional[float]) -> None:
        self.best = initial_cv_loss
        self.cv_history = [] if initial_cv_loss is None else [float(initial_cv_loss)]

    def epoch_done(self, epoch: int, train_loss: float, cv_loss: float) -> EpochDecision:
        if not math.isfinite(cv_loss):
            return self.diverged(epoch)
        d = self._decide(epoch, float(cv_loss))
        self.cv_history.append(float(cv_loss))
        if d.accept:
            self.best = float(cv_loss) if self.best is None or not self.keep_every_epoch \
                else min(self.best, float(cv_loss))
        if not d.stop and epoch >= self.max_iters:
            d = EpochDecision(d.accept, d.lr, True, d.reason + f"; stopping at max_iters "
                              f"{self.max_iters}")
        self.lr = d.lr
        return d

    def diverged(self, epoch: int) -> EpochDecision:
        new = self.lr * self.halving_factor
        reason = (f"rejected: the loss became NaN or inf; learning rate {self.lr:g} -> {new:g}")
        self.lr = new
        return EpochDecision(False, new, epoch >= self.max_iters, reason)

    def _decide(self, epoch: int, cv: float) -> EpochDecision:
        raise NotImplementedError

    # --- state ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items()
             if isinstance(v, (int, float, str, bool, list, type(None)))}
        d["options"] = asdict(self.options)
        return d

    def load_state_dict(self, d: dict) -> None:
        """The saved state; a saved value of a declared option is checked as the command line
        is (a state written before a range check existed may hold a bad one)."""
        specs = {sp.dest: sp for sp in option_specs(self.Options)}
        for k, v in d.items():
            if k in specs and v is not None:
                try:
                    v = specs[k].check(v)
                except ConfigError as e:
                    flag, _, why = str(e).partition(": ")
                    raise ConfigError(f"{flag} (saved training state): {why}") from None
            if k in self.__dict__ and k != "options":
                setattr(self, k, v)
        self._apply_changed_options(d.get("options"))

    def _apply_changed_options(self, saved) -> None:
        """Options given another value than the saved training's take effect (see the
        module's docstring); a state saved before options were kept: nothing to compare."""
        if not isinstance(saved, dict):
            return
        now = asdict(self.options)
        changed = {k: (saved[k], v) for k, v in now.items() if k in saved and saved[k] != v}
        if not changed:
            return
        before = type(self)(**{k: saved.get(k, v) for k, v in now.items()}).state_dict()
        after = type(self)(**now).state_dict()
        for attr, value in after.items():
            if attr != "options" and before.get(attr) != value and attr in self.__dict__:
                setattr(self, attr, value)
        for k, (old, new) in sorted(changed.items()):
            log.info("resuming with --%s=%s (the saved training had %s): applied from the next "
                     "epoch", k.replace("_", "-"), new, old)


class Constant(LrSchedule):
    name = "constant"
    keep_every_epoch = True

    def _decide(self, epoch, cv):
        return EpochDecision(True, self.lr, False, "kept (constant learning rate)")
