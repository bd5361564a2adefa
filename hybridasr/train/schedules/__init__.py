"""Learning-rate schedules, one module per family; ``hybridasr.train.lr_schedule`` chooses one
by ``--lr-schedule`` and registers their options.

- ``base``: the trainer's protocol (``LrSchedule``, ``EpochDecision``), the options every
  schedule has, and ``constant``.
- ``newbob``: Kaldi nnet1's ``train_scheduler.sh`` rules.
- ``returnn``: RETURNN's ``newbob_rel``, ``newbob_abs`` and ``newbob_multi_epoch``.
- ``plateau``: like torch's ReduceLROnPlateau.
- ``exponential``: Kaldi's chain schedule (fixed epochs, exponentially decaying rate).

A schedule is a ``LrSchedule`` subclass with a ``name`` and an ``Options`` dataclass (its
``option()`` fields, the common ``ScheduleOptions`` included), listed in
``lr_schedule.SCHEDULES``.
"""
