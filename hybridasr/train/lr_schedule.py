"""Learning-rate control from the cross-validation loss, chosen by ``--lr-schedule``.

The trainer calls ``start(initial_cv_loss)`` once, then ``epoch_done(epoch, train, cv)``
after each epoch (or ``diverged(epoch)`` when the loss went NaN/inf); the ``EpochDecision``
says whether the new model is accepted as the best (otherwise the next epoch starts again from
the best one), the next learning rate, and whether training stops.

- ``newbob``: Kaldi nnet1's ``steps/nnet/train_scheduler.sh``, rule by rule:
  an epoch is accepted when its CV loss is below the best accepted one, or while
  ``epoch <= keep_lr_iters`` or ``epoch <= min_iters``; nothing else changes during the first
  ``keep_lr_iters`` epochs; the relative improvement is (best before - best after) / best
  before (0 after a rejection); while halving, an improvement below ``end_halving_impr`` stops
  training (unless ``epoch <= min_iters``); an improvement below ``start_halving_impr`` starts
  halving; once halving, the rate is multiplied by ``halving_factor`` after every epoch;
  at most ``max_iters`` epochs.
- ``newbob_rel``, ``newbob_abs``, ``newbob_multi_epoch``: RETURNN's ``NewbobRelative``,
  ``NewbobAbs`` and ``NewbobMultiEpoch`` with RETURNN's option names and defaults: the rate
  decays by ``newbob_learning_rate_decay`` when the CV loss's relative change against the
  previous epoch (``newbob_rel``), its absolute change (``newbob_abs``) or its mean relative
  change over the last ``newbob_multi_num_epochs`` epochs, looked at every
  ``newbob_multi_update_interval`` epochs (``newbob_multi_epoch``), is above the threshold;
  as in RETURNN every epoch is kept (training goes on from the last model), never below
  ``min_learning_rate``; ``max_iters`` epochs.
- ``constant``: the same rate for ``max_iters`` epochs, every epoch kept.
- ``plateau``: like torch's ReduceLROnPlateau on the CV loss (``plateau_patience`` epochs
  without a relative improvement of ``plateau_threshold`` multiply the rate by
  ``plateau_factor``); only improving epochs are accepted; stops at ``max_iters`` or when the
  rate falls below ``min_learning_rate`` (when that is set).

A NaN/inf epoch is rejected and the rate multiplied by ``halving_factor`` (all schedules).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from hybridasr.errors import ConfigError


@dataclass
class EpochDecision:
    accept: bool
    lr: float
    stop: bool
    reason: str


class LrSchedule:
    name = "base"
    keep_every_epoch = False  # RETURNN-style: no rejection

    def __init__(self, learning_rate: float, max_iters: int = 20, halving_factor: float = 0.5,
                 min_learning_rate: float = 0.0, **unused):
        if learning_rate <= 0:
            raise ConfigError(f"--learning-rate must be > 0, got {learning_rate}")
        if max_iters < 1:
            raise ConfigError(f"--max-iters must be >= 1, got {max_iters}")
        self.lr = float(learning_rate)
        self.max_iters = int(max_iters)
        self.halving_factor = float(halving_factor)
        self.min_learning_rate = float(min_learning_rate)
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
        return {k: v for k, v in self.__dict__.items()
                if isinstance(v, (int, float, str, bool, list, type(None)))}

    def load_state_dict(self, d: dict) -> None:
        for k, v in d.items():
            if k in self.__dict__:
                setattr(self, k, v)


class Newbob(LrSchedule):
    """Kaldi nnet1's train_scheduler.sh (see the module docstring)."""
    name = "newbob"

    def __init__(self, learning_rate: float, min_iters: int = 0, keep_lr_iters: int = 0,
                 start_halving_impr: float = 0.01, end_halving_impr: float = 0.001, **kw):
        super().__init__(learning_rate, **kw)
        self.min_iters, self.keep_lr_iters = int(min_iters), int(keep_lr_iters)
        self.start_halving_impr, self.end_halving_impr = start_halving_impr, end_halving_impr
        self.halving = False

    def _decide(self, epoch: int, cv: float) -> EpochDecision:
        if self.best is None:
            raise ConfigError("newbob needs the initial cross-validation loss (start())")
        prev = self.best
        forced = epoch <= self.keep_lr_iters or epoch <= self.min_iters
        accept = cv < prev or forced
        best = cv if accept else prev
        what = (f"accepted (cv {cv:.4f} < best {prev:.4f})" if cv < prev else
                f"accepted (cv {cv:.4f}, within min_iters/keep_lr_iters)" if accept else
                f"rejected (cv {cv:.4f} >= best {prev:.4f})")
        if epoch <= self.keep_lr_iters:
            return EpochDecision(accept, self.lr, False, what + "; keeping the learning rate")
        rel_impr = (prev - best) / prev if prev else 0.0
        if self.halving and rel_impr < self.end_halving_impr:
            if epoch <= self.min_iters:
                return EpochDecision(accept, self.lr, False,
                                     what + f"; would stop (rel. impr. {rel_impr:.5f}) but "
                                     f"min_iters is {self.min_iters}")
            return EpochDecision(accept, self.lr, True,
                                 what + f"; finished: rel. improvement {rel_impr:.5f} < "
                                 f"{self.end_halving_impr}")
        if rel_impr < self.start_halving_impr and not self.halving:
            self.halving = True
            what += f"; rel. improvement {rel_impr:.5f} < {self.start_halving_impr}: halving"
        lr = self.lr * self.halving_factor if self.halving else self.lr
        if self.halving:
            what += f"; learning rate {self.lr:g} -> {lr:g}"
        return EpochDecision(accept, lr, False, what)


class _Returnn(LrSchedule):
    keep_every_epoch = True

    def __init__(self, learning_rate: float, newbob_learning_rate_decay: float = 0.5, **kw):
        super().__init__(learning_rate, **kw)
        self.decay = float(newbob_learning_rate_decay)

    def _change(self, epoch: int, cv: float) -> Optional[float]:
        raise NotImplementedError

    def _threshold(self) -> float:
        raise NotImplementedError

    def _decide(self, epoch: int, cv: float) -> EpochDecision:
        change = self._change(epoch, cv)
        if change is not None and change > self._threshold():
            lr = max(self.lr * self.decay, self.min_learning_rate)
            return EpochDecision(True, lr, False, f"kept; change {change:.5f} > "
                                 f"{self._threshold()}: learning rate {self.lr:g} -> {lr:g}")
        what = "kept" if change is None else f"kept; change {change:.5f}"
        return EpochDecision(True, self.lr, False, what)


class NewbobRelative(_Returnn):
    name = "newbob_rel"

    def __init__(self, learning_rate: float, newbob_relative_error_threshold: float = -0.01,
                 **kw):
        super().__init__(learning_rate, **kw)
        self.threshold = float(newbob_relative_error_threshold)

    def _threshold(self):
        return self.threshold

    def _change(self, epoch, cv):
        if not self.cv_history or self.cv_history[-1] == 0:
            return None
        old = self.cv_history[-1]
        return (cv - old) / abs(old)


class NewbobAbs(_Returnn):
    name = "newbob_abs"

    def __init__(self, learning_rate: float, newbob_error_threshold: float = -0.01, **kw):
        super().__init__(learning_rate, **kw)
        self.threshold = float(newbob_error_threshold)

    def _threshold(self):
        return self.threshold

    def _change(self, epoch, cv):
        return None if not self.cv_history else cv - self.cv_history[-1]


class NewbobMultiEpoch(_Returnn):
    name = "newbob_multi_epoch"

    def __init__(self, learning_rate: float, newbob_relative_error_threshold: float = -0.01,
                 newbob_multi_num_epochs: int = 5, newbob_multi_update_interval: int = 1,
                 **kw):
        super().__init__(learning_rate, **kw)
        if newbob_multi_num_epochs < 1 or newbob_multi_update_interval < 1:
            raise ConfigError("--newbob-multi-num-epochs and --newbob-multi-update-interval "
                              "must be >= 1")
        self.threshold = float(newbob_relative_error_threshold)
        self.num_epochs = int(newbob_multi_num_epochs)
        self.update_interval = int(newbob_multi_update_interval)

    def _threshold(self):
        return self.threshold

    def _change(self, epoch, cv):
        errs = self.cv_history + [cv]
        if epoch % self.update_interval != 0 or len(errs) < self.num_epochs + 1:
            return None
        window = errs[-(self.num_epochs + 1):]
        rel = [(b - a) / abs(a) for a, b in zip(window, window[1:]) if a != 0]
        return sum(rel) / len(rel) if rel else None


class Constant(LrSchedule):
    name = "constant"
    keep_every_epoch = True

    def _decide(self, epoch, cv):
        return EpochDecision(True, self.lr, False, "kept (constant learning rate)")


class Plateau(LrSchedule):
    name = "plateau"

    def __init__(self, learning_rate: float, plateau_patience: int = 2,
                 plateau_factor: float = 0.5, plateau_threshold: float = 1e-3, **kw):
        super().__init__(learning_rate, **kw)
        self.patience, self.factor = int(plateau_patience), float(plateau_factor)
        self.threshold = float(plateau_threshold)
        self.bad_epochs = 0

    def _decide(self, epoch, cv):
        improved = self.best is None or cv < self.best * (1 - self.threshold)
        accept = self.best is None or cv < self.best
        self.bad_epochs = 0 if improved else self.bad_epochs + 1
        lr, what = self.lr, ("accepted" if accept else "rejected") + f" (cv {cv:.4f})"
        if self.bad_epochs > self.patience:
            lr, self.bad_epochs = self.lr * self.factor, 0
            what += f"; no improvement for {self.patience + 1} epochs: {self.lr:g} -> {lr:g}"
        stop = self.min_learning_rate > 0 and lr < self.min_learning_rate
        if stop:
            what += f"; learning rate below {self.min_learning_rate:g}: stopping"
        return EpochDecision(accept, lr, stop, what)


SCHEDULES = {c.name: c for c in (Newbob, NewbobRelative, NewbobAbs, NewbobMultiEpoch,
                                 Constant, Plateau)}

_OPTIONS = [  # (option, type, default, help)
    ("learning-rate", float, 0.001, "initial learning rate"),
    ("max-iters", int, 20, "at most this many epochs"),
    ("min-iters", int, 0, "newbob: accept and do not stop during the first N epochs"),
    ("keep-lr-iters", int, 0, "newbob: keep the learning rate for the first N epochs"),
    ("start-halving-impr", float, 0.01, "newbob: start halving below this rel. improvement"),
    ("end-halving-impr", float, 0.001, "newbob: stop below this rel. improvement (halving)"),
    ("halving-factor", float, 0.5, "newbob: multiply the rate by this when halving"),
    ("newbob-learning-rate-decay", float, 0.5, "RETURNN newbob_*: decay factor"),
    ("newbob-relative-error-threshold", float, -0.01,
     "RETURNN newbob_rel/newbob_multi_epoch: decay when the relative change is above this"),
    ("newbob-error-threshold", float, -0.01,
     "RETURNN newbob_abs: decay when the absolute change is above this"),
    ("newbob-multi-num-epochs", int, 5, "RETURNN newbob_multi_epoch: epochs averaged"),
    ("newbob-multi-update-interval", int, 1, "RETURNN newbob_multi_epoch: epochs between "
     "updates"),
    ("min-learning-rate", float, 0.0, "never decay below this (plateau: stop below it)"),
    ("plateau-patience", int, 2, "plateau: epochs without improvement before decaying"),
    ("plateau-factor", float, 0.5, "plateau: decay factor"),
    ("plateau-threshold", float, 1e-3, "plateau: relative improvement that counts"),
]


def add_lr_schedule_options(parser) -> None:
    parser.add_config_file_option(
        "--schedule-config", "config file of learning-rate schedule options (e.g. "
        "conf/schedule/newbob.conf); read after --config, the command line wins")
    g = parser.add_argument_group("learning-rate schedule")
    g.add_argument("--lr-schedule", default="newbob", help=" | ".join(SCHEDULES))
    for name, typ, default, help in _OPTIONS:
        g.add_argument(f"--{name}", type=typ, default=default, help=f"{help} (default: "
                       f"{default})")


def make_lr_schedule(name: str, **options) -> LrSchedule:
    cls = SCHEDULES.get(name)
    if cls is None:
        raise ConfigError(f"unknown --lr-schedule {name!r} (one of: {', '.join(SCHEDULES)})")
    return cls(**options)


def lr_schedule_from_args(args) -> LrSchedule:
    opts = {n.replace("-", "_"): getattr(args, n.replace("-", "_")) for n, *_ in _OPTIONS}
    return make_lr_schedule(args.lr_schedule, **opts)
