"""Learning-rate control from the cross-validation loss, chosen by ``--lr-schedule``.

The trainer calls ``start(initial_cv_loss)`` once, then ``epoch_done(epoch, train, cv)``
after each epoch (or ``diverged(epoch)`` when the loss went NaN/inf); the ``EpochDecision``
says whether the new model is accepted as the best (otherwise the next epoch starts again from
the best one), the next learning rate, and whether training stops.

- ``newbob``: Kaldi nnet1's ``egs/wsj/s5/steps/nnet/train_scheduler.sh`` (kaldi-asr/kaldi),
  rule by rule, in the script's order (its section comments in quotes):
  * the CV loss of the initial model is the first "best" (the script's prerun cross-validation
    sets ``loss`` before the loop);
  * "accept or reject new parameters": accepted when ``loss_new < loss`` or
    ``iter <= keep_lr_iters``; ``loss_prev`` is the best before, ``loss`` becomes the new one
    only on acceptance (a rejected epoch trains the next one from the best model again);
  * "no learn-rate halving yet": while ``iter <= keep_lr_iters`` nothing else happens;
  * ``rel_impr = (loss_prev - loss) / loss_prev``, so 0 after a rejection;
  * "stopping criterion": when already halving and ``rel_impr < end_halving_impr``, training
    stops, unless ``min_iters > iter`` (the script then ``continue``s: no halving that epoch);
    ``min_iters`` never forces an acceptance;
  * "start annealing when improvement is low": ``rel_impr < start_halving_impr`` sets halving;
  * "do annealing": while halving, the rate is multiplied by ``halving_factor`` after every
    epoch (including the one that started it);
  * the loop runs ``iter`` = 1 .. ``max_iters`` (defaults: max_iters 20, min_iters unset (0),
    keep_lr_iters 0, start 0.01, end 0.001, halving_factor 0.5).
- ``newbob_rel``, ``newbob_abs``, ``newbob_multi_epoch``: RETURNN's ``NewbobRelative``,
  ``NewbobAbs`` and ``NewbobMultiEpoch`` (``returnn/learning_rate_control.py``) with RETURNN's
  option names and defaults. After epoch e the rate of epoch e+1 is computed from the CV
  losses of the trained epochs (the initial model's loss is not one: RETURNN has no epoch 0,
  so epoch 1 never changes the rate): it is multiplied by ``newbob_learning_rate_decay``
  (never below ``min_learning_rate``) when the change from epoch e-1 to e is above the
  threshold, else by ``newbob_learning_rate_growth`` (1.0). The relative change is
  (new - old) / |new| (RETURNN's default; / |old| with ``newbob_relative_error_div_by_old``),
  optionally divided by lr / initial lr (``learning_rate_control_relative_error_relative_lr``);
  ``newbob_abs`` uses new - old against ``newbob_error_threshold``. ``newbob_multi_epoch``
  averages the relative changes over the last ``newbob_multi_num_epochs`` + 1 epochs (fewer
  at the start, at least 2), only when (e+1) % ``newbob_multi_update_interval`` == 1 (the
  interval defaults to the number of epochs), decays above the threshold and grows below
  ``newbob_relative_error_grow_threshold``. ``learning_rate_control_min_num_epochs_per_new_lr``
  N > 1 holds a rate until the last N epochs all used it. As in RETURNN every epoch is kept
  (training goes on from the last model); ``max_iters`` epochs.
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

from hybridasr.cli import add_bool
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
        forced = epoch <= self.keep_lr_iters
        accept = cv < prev or forced
        best = cv if accept else prev
        what = (f"accepted (cv {cv:.4f} < best {prev:.4f})" if cv < prev else
                f"accepted (cv {cv:.4f}, within keep_lr_iters)" if accept else
                f"rejected (cv {cv:.4f} >= best {prev:.4f})")
        if epoch <= self.keep_lr_iters:
            return EpochDecision(accept, self.lr, False, what + "; keeping the learning rate")
        rel_impr = (prev - best) / prev if prev else 0.0
        if self.halving and rel_impr < self.end_halving_impr:
            if self.min_iters > epoch:  # the script's `continue`: no halving this epoch
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
    """RETURNN's LearningRateControl: the rate for the next epoch follows from the CV losses
    of the trained epochs (the initial loss is not one of them), every epoch is kept."""
    keep_every_epoch = True

    def __init__(self, learning_rate: float, newbob_learning_rate_decay: float = 0.5,
                 newbob_learning_rate_growth: float = 1.0,
                 newbob_relative_error_div_by_old: bool = False,
                 learning_rate_control_relative_error_relative_lr: bool = False,
                 learning_rate_control_min_num_epochs_per_new_lr: int = 0, **kw):
        super().__init__(learning_rate, **kw)
        self.initial_lr = float(learning_rate)
        self.decay = float(newbob_learning_rate_decay)
        self.growth = float(newbob_learning_rate_growth)
        self.div_by_old = bool(newbob_relative_error_div_by_old)
        self.relative_lr = bool(learning_rate_control_relative_error_relative_lr)
        self.min_epochs_per_lr = int(learning_rate_control_min_num_epochs_per_new_lr)
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

    def __init__(self, learning_rate: float, newbob_relative_error_threshold: float = -0.01,
                 **kw):
        super().__init__(learning_rate, **kw)
        self.threshold = float(newbob_relative_error_threshold)

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

    def __init__(self, learning_rate: float, newbob_error_threshold: float = -0.01, **kw):
        super().__init__(learning_rate, **kw)
        self.threshold = float(newbob_error_threshold)

    def _next(self, epoch):
        if len(self.history) < 2:
            return None
        diff = self.history[-1][2] - self.history[-2][2]
        decay = diff > self.threshold
        return decay, not decay, (f"change {diff:.5f} {'>' if decay else '<='} "
                                  f"{self.threshold}")


class NewbobMultiEpoch(_Returnn):
    name = "newbob_multi_epoch"

    def __init__(self, learning_rate: float, newbob_relative_error_threshold: float = -0.01,
                 newbob_relative_error_grow_threshold: Optional[float] = None,
                 newbob_multi_num_epochs: int = 5,
                 newbob_multi_update_interval: Optional[int] = None, **kw):
        super().__init__(learning_rate, **kw)
        if newbob_multi_update_interval is None:
            newbob_multi_update_interval = newbob_multi_num_epochs
        if newbob_multi_num_epochs < 1 or newbob_multi_update_interval < 1:
            raise ConfigError("--newbob-multi-num-epochs and --newbob-multi-update-interval "
                              "must be >= 1")
        self.threshold = float(newbob_relative_error_threshold)
        self.grow_threshold = (self.threshold if newbob_relative_error_grow_threshold is None
                               else float(newbob_relative_error_grow_threshold))
        if self.grow_threshold > self.threshold:
            raise ConfigError("--newbob-relative-error-grow-threshold must not be above "
                              "--newbob-relative-error-threshold")
        self.num_epochs = int(newbob_multi_num_epochs)
        self.update_interval = int(newbob_multi_update_interval)

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
        self.plateau_best: Optional[float] = None

    def start(self, initial_cv_loss: Optional[float]) -> None:
        super().start(initial_cv_loss)
        self.plateau_best = initial_cv_loss

    def _decide(self, epoch, cv):
        # torch's ReduceLROnPlateau (mode min, threshold_mode rel): its best moves only on an
        # improvement by more than the threshold; acceptance needs any improvement
        improved = self.plateau_best is None or cv < self.plateau_best * (1 - self.threshold)
        accept = self.best is None or cv < self.best
        if improved:
            self.plateau_best = cv
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

_OPTIONS = [  # (option, type ("bool" for a Kaldi boolean), default, help)
    ("learning-rate", float, 0.001, "initial learning rate"),
    ("max-iters", int, 20, "at most this many epochs"),
    ("min-iters", int, 0, "newbob: do not stop before epoch N (rejections still happen)"),
    ("keep-lr-iters", int, 0, "newbob: accept every epoch and keep the learning rate for "
     "the first N epochs"),
    ("start-halving-impr", float, 0.01, "newbob: start halving below this rel. improvement"),
    ("end-halving-impr", float, 0.001, "newbob: stop below this rel. improvement (halving)"),
    ("halving-factor", float, 0.5, "newbob: multiply the rate by this when halving (all "
     "schedules: after a NaN/inf epoch)"),
    ("newbob-learning-rate-decay", float, 0.5, "RETURNN newbob_*: decay factor"),
    ("newbob-learning-rate-growth", float, 1.0, "RETURNN newbob_*: growth factor (applied "
     "when not decaying)"),
    ("newbob-relative-error-threshold", float, -0.01,
     "RETURNN newbob_rel/newbob_multi_epoch: decay when the relative change is above this"),
    ("newbob-relative-error-grow-threshold", float, None,
     "RETURNN newbob_multi_epoch: grow when the mean relative change is below this "
     "(default: --newbob-relative-error-threshold)"),
    ("newbob-relative-error-div-by-old", "bool", False,
     "RETURNN: relative change is (new - old) / |old| (else / |new|, RETURNN's default)"),
    ("learning-rate-control-relative-error-relative-lr", "bool", False,
     "RETURNN: divide the relative change by learning rate / initial learning rate"),
    ("learning-rate-control-min-num-epochs-per-new-lr", int, 0,
     "RETURNN: keep a new learning rate for at least N epochs"),
    ("newbob-error-threshold", float, -0.01,
     "RETURNN newbob_abs: decay when the absolute change is above this"),
    ("newbob-multi-num-epochs", int, 5, "RETURNN newbob_multi_epoch: epochs averaged"),
    ("newbob-multi-update-interval", int, None, "RETURNN newbob_multi_epoch: epochs between "
     "updates (default: --newbob-multi-num-epochs)"),
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
        if typ == "bool":
            add_bool(g, f"--{name}", default, help)
        else:
            g.add_argument(f"--{name}", type=typ, default=default,
                           help=help if default is None else f"{help} (default: {default})")


def make_lr_schedule(name: str, **options) -> LrSchedule:
    cls = SCHEDULES.get(name)
    if cls is None:
        raise ConfigError(f"unknown --lr-schedule {name!r} (one of: {', '.join(SCHEDULES)})")
    return cls(**options)


def lr_schedule_from_args(args) -> LrSchedule:
    opts = {n.replace("-", "_"): getattr(args, n.replace("-", "_")) for n, *_ in _OPTIONS}
    return make_lr_schedule(args.lr_schedule, **opts)
