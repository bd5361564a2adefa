"""Kaldi's dropout schedule (``--trainer.dropout-schedule`` of ``steps/nnet3/train*.py``;
here train.py's ``--dropout-schedule``): the model's dropout proportion as a piecewise-linear
function of how far training has gone, e.g. ``0,0@0.20,0.5@0.50,0`` (0 up to a fifth of the
training, rising to 0.5 at half, back to 0 at the end).

Kaldi sets it at every iteration from the fraction of the data processed; the trainer sets it
at the start of each epoch, at that epoch's midpoint: epoch e of N (``--max-iters``) at
(e - 0.5) / N. The model takes it through its ``set_dropout(p)`` (the TDNN-F's)."""
from __future__ import annotations

from typing import List, Tuple

from hybridasr.errors import ConfigError

__all__ = ["dropout_schedule_value", "epoch_dropout", "apply_dropout_schedule"]


def dropout_schedule_value(schedule: str, fraction: float) -> float:
    """The dropout proportion of Kaldi's ``--trainer.dropout-schedule`` (e.g.
    ``0,0@0.20,0.5@0.50,0``: values at fractions of the training data, the first at 0 and the
    last at 1 unless given, linear in between) after ``fraction`` of the data."""
    points: List[Tuple[float, float]] = []
    parts = [p.strip() for p in str(schedule).split(",")]
    try:
        for i, p in enumerate(parts):
            v, _, at = p.partition("@")
            x = float(at) if at else (0.0 if i == 0 else 1.0 if i == len(parts) - 1 else None)
            if x is None:
                raise ValueError(p)
            points.append((x, float(v)))
    except ValueError:
        raise ConfigError(f"dropout schedule {schedule!r}: expected e.g. 0,0@0.20,0.5@0.50,0")
    if any(b[0] < a[0] for a, b in zip(points, points[1:])):
        raise ConfigError(f"dropout schedule {schedule!r}: fractions must not decrease")
    f = min(max(float(fraction), 0.0), 1.0)
    if f <= points[0][0]:
        return points[0][1]
    for (x0, v0), (x1, v1) in zip(points, points[1:]):
        if f <= x1:
            return v1 if x1 == x0 else v0 + (v1 - v0) * (f - x0) / (x1 - x0)
    return points[-1][1]


def epoch_dropout(schedule: str, epoch: int, num_epochs: int) -> float:
    """The proportion of ``epoch`` (1-based) of ``num_epochs``: the schedule at its midpoint."""
    return dropout_schedule_value(schedule, (epoch - 0.5) / max(int(num_epochs), 1))


def apply_dropout_schedule(model, schedule: str, epoch: int, num_epochs: int) -> float:
    """Sets ``model``'s dropout for ``epoch`` and returns it; a model without ``set_dropout``
    is an error naming the option."""
    setter = getattr(model, "set_dropout", None)
    if setter is None:
        raise ConfigError(f"--dropout-schedule={schedule}: the model "
                          f"({type(model).__name__}) has no dropout to schedule (the TDNN-F "
                          f"and the BLSTM have: --model=tdnnf, --model=blstm)")
    p = epoch_dropout(schedule, epoch, num_epochs)
    setter(p)
    return p
