"""Learning-rate control from the cross-validation loss, chosen by ``--lr-schedule``.

The schedules live in ``hybridasr.train.schedules`` (each module says its rules): ``newbob``
(Kaldi nnet1's), ``newbob_rel``, ``newbob_abs``, ``newbob_multi_epoch`` (RETURNN's),
``constant``, ``plateau`` and ``exponential`` (Kaldi's chain schedule). ``SCHEDULES`` is
their registry (``hybridasr.registry``): one line per schedule. Each declares its options
(``Options``); ``schedule_options()`` is all of them once, for the command line and the
``--schedule-config`` files (``SCHEDULE_CONFIG``), and ``lr_schedule_from_args`` builds the
chosen schedule from parsed options.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List

from hybridasr.options import OptionSpec, option
from hybridasr.registry import Registry
from hybridasr.train.schedules.base import (Constant, EpochDecision,  # noqa: F401
                                            LrSchedule, ScheduleOptions)
from hybridasr.train.schedules.exponential import Exponential
from hybridasr.train.schedules.newbob import Newbob
from hybridasr.train.schedules.plateau import Plateau
from hybridasr.train.schedules.returnn import NewbobAbs, NewbobMultiEpoch, NewbobRelative

SCHEDULES = Registry("learning-rate schedule", "--lr-schedule")
SCHEDULES.add("newbob", Newbob)
SCHEDULES.add("newbob_rel", NewbobRelative)
SCHEDULES.add("newbob_abs", NewbobAbs)
SCHEDULES.add("newbob_multi_epoch", NewbobMultiEpoch)
SCHEDULES.add("constant", Constant)
SCHEDULES.add("plateau", Plateau)
SCHEDULES.add("exponential", Exponential)
# the config-file option of these options (``parser.add_config_file_option(*SCHEDULE_CONFIG)``)
SCHEDULE_CONFIG = ("--schedule-config", "config file of learning-rate schedule options (e.g. "
                   "conf/schedule/newbob.conf); read after --config, the command line wins")


@dataclass
class LrScheduleChoice:
    lr_schedule: str = option("newbob", SCHEDULES.choice_help(), choices=tuple(SCHEDULES))


def schedule_options() -> List[OptionSpec]:
    """``--lr-schedule`` and every schedule's options, each once (the common ones first)."""
    return SCHEDULES.option_specs(LrScheduleChoice, ScheduleOptions)


def make_lr_schedule(name: str, **options) -> LrSchedule:
    """The schedule ``name`` with ``options`` (those of other schedules are ignored; an
    option no schedule has is an error)."""
    opts = SCHEDULES.options(name, options)
    return SCHEDULES[name](**dataclasses.asdict(opts))


def lr_schedule_from_args(args) -> LrSchedule:
    """The schedule of parsed options (``--lr-schedule`` and the schedule's own)."""
    opts = {s.dest: getattr(args, s.dest) for s in schedule_options()
            if s.dest != "lr_schedule" and hasattr(args, s.dest)}
    return make_lr_schedule(args.lr_schedule, **opts)
