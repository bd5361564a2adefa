"""The final combination of a training's last models, as Kaldi's chain and nnet3 recipes end
(``steps/nnet3/chain/train.py --trainer.optimization.do-final-combination``, the binary
``nnet3-chain-combine``): the average of the last n kept models for n = 1..N, the n whose
average has the best cv objective becoming ``final.nnet``.

``train.py --combine-models=N`` (0: off, ``final.nnet`` is the schedule's best or last model).
Kaldi averages the models of its last iterations (at most half an epoch's, 20 models); the
toolkit keeps one model an epoch, so N counts epochs (5 of the chain schedule's 10 is half of
the training, Kaldi's upper bound). Off in ``conf/schedule/chain.conf``: on polish it changed no
words (docs/chain.md). The models are those of the
accepted epochs, newest first; each average is of every parameter and buffer of a float type
(the others are the last model's). ``nnet/combined.nnet`` holds the chosen average (with
``combined_epochs`` in its meta); ``combine.json`` beside the logs lists each n's cv figure,
named as the training's history names it: ``cv_loss``, or ``cv_fer`` under ``--cv-criterion
errors`` (the report's ``criterion``).
The train state records the result (``combined``), so a resumed training does not combine
again; a new combination is made where the state has none.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Callable, Dict, List

import torch

log = logging.getLogger(__name__)

COMBINED = "nnet/combined.nnet"
REPORT = "combine.json"


def last_models(history: List[dict], n: int) -> List[dict]:
    """The history records of the last ``n`` accepted, trained epochs, newest first."""
    kept = [h for h in history if h.get("epoch", 0) > 0 and h.get("accepted") and h.get("model")]
    return kept[::-1][:n]


def _update_average(avg: Dict[str, torch.Tensor], new: Dict[str, torch.Tensor],
                    count: int) -> None:
    """``avg`` becomes the mean of ``count`` models, given the mean of the first ``count - 1``
    (Kaldi's ``UpdateNnetMovingAverage``)."""
    for k, v in avg.items():
        if v.is_floating_point():
            v.mul_((count - 1) / count).add_(new[k].to(v.dtype), alpha=1.0 / count)


def combine(records: List[dict], load: Callable[[str], torch.nn.Module],
            evaluate: Callable[[torch.nn.Module], float], criterion: str = "cv_loss"):
    """(model, n, report) for ``records`` (newest first, ``last_models``): ``load(rel)`` gives a
    record's model, ``evaluate(model)`` its cv figure (lower is better), reported under the name
    ``criterion``. The report has each n's figure; the first (the newest model alone) is the
    baseline an average must beat."""
    model = load(records[0]["model"])
    avg = {k: v.detach().clone() for k, v in model.state_dict().items()}
    best_loss, best_n = evaluate(model), 1
    best_state = {k: v.clone() for k, v in avg.items()}  # (the newest alone: not read again)
    rows = [{"models": 1, "epochs": [records[0]["epoch"]], criterion: best_loss}]
    for i, rec in enumerate(records[1:], start=2):
        _update_average(avg, load(rec["model"]).state_dict(), i)
        model.load_state_dict(avg)
        loss = evaluate(model)
        rows.append({"models": i, "epochs": [r["epoch"] for r in records[:i]],
                     criterion: loss})
        log.info("combining the last %d models (epochs %s): %s %.4f", i,
                 ",".join(str(r["epoch"]) for r in records[:i]), criterion, loss)
        if loss < best_loss:
            best_loss, best_n = loss, i
            best_state = {k: v.clone() for k, v in avg.items()}
    model.load_state_dict(best_state)
    report = {"chosen_models": best_n, "chosen_epochs": [r["epoch"] for r in records[:best_n]],
              "criterion": criterion, criterion: best_loss, "candidates": rows}
    return model, best_n, report


def write_report(exp_dir: str, report: dict) -> None:
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(os.path.join(exp_dir, REPORT), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
        fh.write("\n")
