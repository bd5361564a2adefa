"""Learning-rate control from the cross-validation loss, chosen by ``--lr-schedule``.

The schedules live in ``hybridasr.train.schedules`` (each module says its rules): ``newbob``
(Kaldi nnet1's), ``newbob_rel``, ``newbob_abs``, ``newbob_multi_epoch`` (RETURNN's),
``constant`` and ``plateau``. Each declares its options (``Options``); ``schedule_options()``
is all of them once, for the command line and the ``--schedule-config`` files
(``SCHEDULE_CONFIG``), and
``lr_schedule_from_args`` builds the chosen schedule from parsed options.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

from hybridasr.errors import ConfigError
from hybridasr.options import OptionSpec, option, option_specs
from hybridasr.train.schedules.base import (Constant, EpochDecision,  # noqa: F401
                                            LrSchedule, ScheduleOptions)
from hybridasr.train.schedules.newbob import Newbob
from hybridasr.train.schedules.plateau import Plateau
from hybridasr.train.schedules.returnn import NewbobAbs, NewbobMultiEpoch, NewbobRelative

SCHEDULES: Dict[str, type] = {c.name: c for c in (Newbob, NewbobRelative, NewbobAbs,
                                                  NewbobMultiEpoch, Constant, Plateau)}
# the config-file option of these options (``parser.add_config_file_option(*SCHEDULE_CONFIG)``)
SCHEDULE_CONFIG = ("--schedule-config", "config file of learning-rate schedule options (e.g. "
                   "conf/schedule/newbob.conf); read after --config, the command line wins")


@dataclass
class LrScheduleChoice:
    lr_schedule: str = option("newbob", " | ".join(SCHEDULES), choices=tuple(SCHEDULES))


def schedule_options() -> List[OptionSpec]:
    """``--lr-schedule`` and every schedule's options, each once (the common ones first)."""
    specs: Dict[str, OptionSpec] = {}
    for cls in (LrScheduleChoice, ScheduleOptions, *(s.Options for s in SCHEDULES.values())):
        for s in option_specs(cls):
            if specs.setdefault(s.dest, s) != s:
                raise TypeError(f"{cls.__name__} declares {s.flag} unlike another schedule")
    return list(specs.values())


def make_lr_schedule(name: str, **options) -> LrSchedule:
    """The schedule ``name`` with ``options`` (those of other schedules are ignored; an
    option no schedule has is an error)."""
    cls = SCHEDULES.get(name)
    if cls is None:
        raise ConfigError(f"unknown --lr-schedule {name!r} (one of: {', '.join(SCHEDULES)})")
    unknown = sorted(set(options) - {s.dest for s in schedule_options()})
    if unknown:
        raise ConfigError(f"unknown learning-rate schedule option(s) "
                          f"{', '.join('--' + k.replace('_', '-') for k in unknown)}")
    own = {s.dest for s in option_specs(cls.Options)}
    return cls(**{k: v for k, v in options.items() if k in own})


def lr_schedule_from_args(args) -> LrSchedule:
    """The schedule of parsed options (``--lr-schedule`` and the schedule's own)."""
    opts = {s.dest: getattr(args, s.dest) for s in schedule_options()
            if s.dest != "lr_schedule" and hasattr(args, s.dest)}
    return make_lr_schedule(args.lr_schedule, **opts)
