"""``newbob``: Kaldi nnet1's ``egs/wsj/s5/steps/nnet/train_scheduler.sh`` (kaldi-asr/kaldi),
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
* the loop runs ``iter`` = 1 .. ``max_iters``. The options' defaults are the script's
  (``min_iters`` unset there is 0 here).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from hybridasr.errors import ConfigError
from hybridasr.options import option
from hybridasr.train.schedules.base import EpochDecision, LrSchedule, ScheduleOptions


@dataclass
class NewbobOptions(ScheduleOptions):
    min_iters: int = option(0, "newbob: do not stop before epoch N (rejections still happen)")
    keep_lr_iters: int = option(0, "newbob: accept every epoch and keep the learning rate for "
                                   "the first N epochs")
    start_halving_impr: float = option(0.01, "newbob: start halving below this rel. "
                                             "improvement")
    end_halving_impr: float = option(0.001, "newbob: stop below this rel. improvement "
                                            "(halving)")


class Newbob(LrSchedule):
    """Kaldi nnet1's train_scheduler.sh (see the module docstring)."""
    name = "newbob"
    Options = NewbobOptions

    def __init__(self, learning_rate: Optional[float] = None, **options):
        super().__init__(learning_rate, **options)
        o = self.options
        self.min_iters, self.keep_lr_iters = int(o.min_iters), int(o.keep_lr_iters)
        self.start_halving_impr, self.end_halving_impr = o.start_halving_impr, \
            o.end_halving_impr
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
