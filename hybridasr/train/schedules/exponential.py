"""``exponential``: Kaldi's chain (nnet3) schedule. A fixed number of epochs (``max_iters``,
Kaldi's ``--trainer.num-epochs``), every epoch kept (no cv-driven rejection: the last epoch's
model is final), and a learning rate that decays exponentially from ``learning_rate`` in the
first epoch to ``final_learning_rate`` in the last (Kaldi's ``--initial-effective-lrate`` and
``--final-effective-lrate``, 0.002 and 0.0002 in ``egs/mini_librispeech``'s chain recipe):
epoch e of N trains at ``learning_rate * (final / learning_rate) ** ((e - 1) / (N - 1))``.

Kaldi decays the rate at every iteration (a few per epoch); here it changes between epochs, so
the rate of an epoch is the one Kaldi reaches at its start. A NaN/inf epoch is rejected and
the whole curve is multiplied by ``halving_factor`` from then on (it still counts as one of
the N epochs)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from hybridasr.options import option
from hybridasr.train.schedules.base import EpochDecision, LrSchedule, ScheduleOptions


@dataclass
class ExponentialOptions(ScheduleOptions):
    final_learning_rate: float = option(0.0, "exponential: the last epoch's learning rate "
                                             "(0: --learning-rate / 10, the ratio of Kaldi's "
                                             "chain recipes)", minimum=0.0)


class Exponential(LrSchedule):
    name = "exponential"
    Options = ExponentialOptions
    keep_every_epoch = True

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        self.initial_lr = self.lr
        final = float(self.options.final_learning_rate)
        self.final_lr = final if final > 0 else self.initial_lr / 10
        self.scale = 1.0  # halved after a NaN/inf epoch

    def rate_of_epoch(self, epoch: int) -> float:
        """The learning rate of ``epoch`` (1-based) of ``max_iters``."""
        n = self.max_iters
        x = 0.0 if n <= 1 else min(max(epoch - 1, 0), n - 1) / (n - 1)
        return self.scale * self.initial_lr * (self.final_lr / self.initial_lr) ** x

    def _decide(self, epoch, cv):
        lr = self.rate_of_epoch(epoch + 1)
        return EpochDecision(True, lr, False, f"kept (exponential decay: epoch {epoch + 1} "
                                              f"of {self.max_iters} at {lr:g})")

    def diverged(self, epoch: int) -> EpochDecision:
        self.scale *= self.halving_factor
        d = super().diverged(epoch)
        self.lr = self.rate_of_epoch(epoch + 1)
        return EpochDecision(d.accept, self.lr, d.stop, d.reason + f"; the decay curve scaled "
                                                             f"by {self.scale:g}")
