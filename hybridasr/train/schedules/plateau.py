"""``plateau``: like torch's ReduceLROnPlateau on the CV loss (``plateau_patience`` epochs
without a relative improvement of ``plateau_threshold`` multiply the rate by
``plateau_factor``); only improving epochs are accepted; stops at ``max_iters`` or when the
rate falls below ``min_learning_rate`` (when that is set)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from hybridasr.options import option
from hybridasr.train.schedules.base import EpochDecision, LrSchedule, ScheduleOptions


@dataclass
class PlateauOptions(ScheduleOptions):
    plateau_patience: int = option(2, "plateau: epochs without improvement before decaying")
    plateau_factor: float = option(0.5, "plateau: decay factor; 0 < f <= 1", above=0.0,
                                   maximum=1.0)
    plateau_threshold: float = option(1e-3, "plateau: relative improvement that counts")


class Plateau(LrSchedule):
    name = "plateau"
    Options = PlateauOptions

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        o = self.options
        self.patience, self.factor = int(o.plateau_patience), float(o.plateau_factor)
        self.threshold = float(o.plateau_threshold)
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
