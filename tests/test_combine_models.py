"""hybridasr.train.combine: Kaldi's final combination (nnet3-chain-combine): the moving
average of the last n models, newest first, the n with the best cv figure chosen."""
from __future__ import annotations

import torch

from hybridasr.train import combine


def _model(w: float, steps: int) -> torch.nn.Module:
    m = torch.nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.fill_(w)
        m.bias.fill_(-w)
    m.register_buffer("steps", torch.tensor(steps))  # (an integer buffer: the newest's)
    return m


def test_last_models_are_the_accepted_epochs_newest_first():
    history = [{"epoch": 0, "accepted": True, "model": "nnet/epoch0.nnet"},
               {"epoch": 1, "accepted": True, "model": "nnet/epoch1.nnet"},
               {"epoch": 2, "accepted": False, "model": "nnet/epoch2.nnet_rejected"},
               {"epoch": 3, "accepted": True, "model": "nnet/epoch3.nnet"},
               {"epoch": 4, "accepted": False, "model": None}]
    assert [r["epoch"] for r in combine.last_models(history, 5)] == [3, 1]
    assert [r["epoch"] for r in combine.last_models(history, 1)] == [3]


def test_moving_averages_and_the_best_n():
    weights = {"e4": 4.0, "e3": 2.0, "e2": 0.0, "e1": 10.0}
    records = [{"epoch": int(k[1]), "model": k} for k in ("e4", "e3", "e2", "e1")]
    seen = []

    def evaluate(m):  # best where the weight is 2 (the mean of the last 3: (4 + 2 + 0) / 3)
        w = float(m.weight.detach()[0, 0])
        seen.append(w)
        return abs(w - 2.0)

    model, n, report = combine.combine(records, lambda k: _model(weights[k], int(k[1])),
                                       evaluate)
    assert seen == [4.0, 3.0, 2.0, 4.0]  # the means of the last 1, 2, 3, 4 models
    assert n == 3 and report["chosen_epochs"] == [4, 3, 2]
    assert [c["models"] for c in report["candidates"]] == [1, 2, 3, 4]
    assert float(model.weight.detach()[0, 0]) == 2.0 and float(model.bias.detach()[0]) == -2.0
    assert int(model.steps) == 4  # not averaged


def test_the_newest_alone_when_no_average_is_better():
    records = [{"epoch": 2, "model": "a"}, {"epoch": 1, "model": "b"}]
    model, n, report = combine.combine(records, lambda k: _model(1.0 if k == "a" else 5.0, 0),
                                       lambda m: float(m.weight.detach()[0, 0]))
    assert n == 1 and report["chosen_epochs"] == [2] and float(model.weight.detach()[0, 0]) == 1.0
    assert report["candidates"][1]["cv_loss"] == 3.0 and report["criterion"] == "cv_loss"


def test_the_figure_is_named_by_the_criterion():
    """Under --cv-criterion=errors the report names the cv frame error rate, not a loss."""
    records = [{"epoch": 2, "model": "a"}, {"epoch": 1, "model": "b"}]
    _, n, report = combine.combine(records, lambda k: _model(1.0 if k == "a" else 0.0, 0),
                                   lambda m: float(m.weight.detach()[0, 0]), "cv_fer")
    assert n == 2 and report["criterion"] == "cv_fer" and report["cv_fer"] == 0.5
    assert [c["cv_fer"] for c in report["candidates"]] == [1.0, 0.5]
    assert not any("cv_loss" in c for c in report["candidates"]) and "cv_loss" not in report
