"""CTC training over sentencepiece units: ``--objective=ctc``.

The network (BLSTM or LSTM) has one output per unit of a units dir
(``steps/nnet/train_units.sh``, ``hybridasr.ctc.units``), blank = output 0, and is trained with
``torch.nn.functional.ctc_loss`` (``reduction="sum"``, ``zero_infinity``) against each
utterance's unit ids. No frame alignment is needed: for ``--objective=ctc`` the ``<ali-tr>``
and ``<ali-cv>`` arguments of ``train.py`` are units dirs (``targets.scp`` with each
utterance's unit ids; ``num_outputs`` of the training one is the network's output count; a
cross-validation dir made with ``train_units.py --model-in`` carries the same units), the
utterance list and lengths come from the features, and a batch has no frame targets: the
objective reads each row's unit sequence by its key.

Whole utterances only (``check_objective`` refuses strategies and ``--chunking`` that cut
them). ``--subsample N`` (with ``--stack-frames N``) makes the network run at 1/N of the frame
rate; an utterance whose output frames are fewer than its units plus its repeated adjacent
units (the blanks CTC must put between them) has no CTC path: such utterances are counted,
named in the log and left out, as are utterances without a unit sequence.

What is reported (``metrics.jsonl``, newbob's CV loss): the CTC loss (``-log P(units | x)``)
summed over the utterances and divided by their output frames, i.e. nats per output frame, as
the cross-entropy's; the training step is normalised the same way. ``train_fer`` / ``cv_fer``
(the loop's "errors per frame") are, for CTC, the greedy (best-path) decoding's unit edit
errors (Levenshtein against the reference units) divided by the output frames: counted on the
cross-validation pass only (0 in training, which keeps the loop free of a per-batch host
sync). ``ctc_report.json`` in the exp dir gives each set's counts.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Dict, List, Sequence, Tuple

import kaldialign
import numpy as np
import torch
import torch.nn.functional as F

from hybridasr.ctc import BLANK
from hybridasr.ctc.decode import collapse
from hybridasr.ctc.units import UnitsDir
from hybridasr.errors import ConfigError, FormatError
from hybridasr.train.objective import Objective, TrainingData

log = logging.getLogger(__name__)

__all__ = ["CtcObjective", "ctc_frames_needed", "edit_distance", "setup_ctc_data"]

_NAMED = 5  # utterances named in a log line


def ctc_frames_needed(units: Sequence[int]) -> int:
    """Fewest output frames with a CTC path for ``units``: one per unit and a blank between
    each pair of equal adjacent units."""
    u = list(units)
    return len(u) + sum(1 for a, b in zip(u, u[1:]) if a == b)


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance (substitutions, insertions, deletions) between two sequences
    (``kaldialign``'s, as the WER scoring's)."""
    return int(kaldialign.edit_distance(list(a), list(b))["total"])


def _keep(ds, targets: Dict[str, np.ndarray], what: str) -> Dict:
    """Restricts the dataset to utterances with a unit sequence that fits their output
    frames; returns the counts (and logs the utterances left out)."""
    out_len = ds.output_lengths
    missing = [k for k in ds.keys if k not in targets]
    short = [k for k in ds.keys if k in targets and ctc_frames_needed(targets[k]) > out_len[k]]
    drop = set(missing) | set(short)
    if missing:
        log.warning("%s: %d of %d utterances have no unit sequence in the units dir (e.g. %s): "
                    "left out", what, len(missing), len(ds.keys), ", ".join(missing[:_NAMED]))
    if short:
        log.warning("%s: %d utterances have fewer output frames than their units need (units "
                    "+ repeats; e.g. %s): no CTC path, left out (a smaller --subsample keeps "
                    "them)", what, len(short),
                    ", ".join(f"{k} ({out_len[k]} < {ctc_frames_needed(targets[k])})"
                              for k in short[:_NAMED]))
    kept = [k for k in ds.keys if k not in drop]
    if not kept:
        raise FormatError(f"{what}: no utterance is left for CTC training ({len(missing)} "
                          f"without units, {len(short)} too short for their units)")
    ds.keys = kept
    ds.lengths = {k: ds.lengths[k] for k in kept}
    units = sum(len(targets[k]) for k in kept)
    frames = sum(out_len[k] for k in kept)
    log.info("%s: %d utterances, %d units in %d output frames (%.2f frames a unit)", what,
             len(kept), units, frames, frames / max(units, 1))
    return {"utterances": len(kept), "without_units": len(missing), "too_short": len(short),
            "too_short_utterances": short[:100], "units": units, "output_frames": frames}


def setup_ctc_data(units_tr: str, units_cv: str, data_tr: str, data_cv: str, transform,
                   use_cmvn: bool, exp_dir: str = ""):
    """(num_outputs, training set, cross-validation set, objective) of a CTC training: the
    ``UtteranceDataset``s of the data dirs without frame targets, restricted to the
    utterances CTC can train on, and the objective holding their unit sequences."""
    from hybridasr.data.dataset import UtteranceDataset

    tr_dir, cv_dir = UnitsDir(units_tr), UnitsDir(units_cv)
    num_outputs = tr_dir.num_outputs
    if os.path.exists(os.path.join(units_cv, "num_outputs")) and \
            cv_dir.num_outputs != num_outputs:
        raise FormatError(f"{units_tr} has {num_outputs} units, {units_cv} "
                          f"{cv_dir.num_outputs}: encode the cross-validation set with the "
                          f"training set's units.model (train_units.py --model-in)")
    targets = {k: np.asarray(v, np.int64).reshape(-1) for k, v in tr_dir.targets().items()}
    if os.path.abspath(units_cv) != os.path.abspath(units_tr):
        for k, v in cv_dir.targets().items():
            targets.setdefault(k, np.asarray(v, np.int64).reshape(-1))
    for k, v in targets.items():
        if v.size and (int(v.min()) <= BLANK or int(v.max()) >= num_outputs):
            raise FormatError(f"utterance {k}: unit ids {int(v.min())}..{int(v.max())} outside "
                              f"1..{num_outputs - 1} ({units_tr}/num_outputs; 0 is the blank)")
    report = {"num_outputs": num_outputs, "units_tr": units_tr, "units_cv": units_cv}
    sets = []
    for name, data in (("training", data_tr), ("cross-validation", data_cv)):
        ds = UtteranceDataset.from_data_dir(data, None, transform, use_cmvn)
        report[name] = _keep(ds, targets, f"CTC {name} set {data}")
        sets.append(ds)
    if exp_dir:
        from hybridasr.utils.atomic import atomic_open

        with atomic_open(os.path.join(exp_dir, "ctc_report.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return num_outputs, sets[0], sets[1], CtcObjective(targets)


class CtcObjective(Objective):
    """The CTC loss of a batch against the unit sequences of its rows (by key)."""

    whole_utterances = "sums over the CTC paths of whole utterances"
    errors_are = "greedy unit errors per output frame"

    def __init__(self, targets: Dict[str, np.ndarray]):
        self.targets = targets

    @classmethod
    def read_data(cls, opts, inputs, transform, use_cmvn: bool,
                  report_dir: str = "") -> TrainingData:
        """Units dirs (``<ali-tr>``, ``<ali-cv>``), no frame targets: ``setup_ctc_data``."""
        num_outputs, tr, cv, objective = setup_ctc_data(
            inputs.ali_tr, inputs.ali_cv, inputs.data_tr, inputs.data_cv, transform, use_cmvn,
            report_dir)
        return TrainingData(num_outputs, tr, cv, extra=objective.targets)

    @classmethod
    def build(cls, opts, data: TrainingData, inputs) -> "CtcObjective":
        return cls(data.extra)

    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        """(summed CTC loss, the same detached, greedy unit edit errors (evaluation only),
        output frames) of ``logits`` [B, T, V]."""
        rows = [i for i, k in enumerate(batch.keys) if k]
        lengths = batch.lengths.tolist()
        for i in rows:
            span = batch.spans[i] if batch.spans else (0, lengths[i])
            if span[0] != 0 or span[1] - span[0] != lengths[i]:
                raise ConfigError(f"utterance {batch.keys[i]}: a batch row of frames "
                                  f"{span[0]}..{span[1]}: --objective=ctc needs whole "
                                  f"utterances")
        try:
            seqs: List[np.ndarray] = [self.targets[batch.keys[i]] for i in rows]
        except KeyError as e:
            raise FormatError(f"utterance {e.args[0]}: no unit sequence (--objective=ctc)") \
                from None
        dev = logits.device
        logp = torch.log_softmax(logits[rows].float(), dim=-1)  # [B', T, V]
        in_len = torch.tensor([lengths[i] for i in rows], dtype=torch.long)
        tgt_len = torch.tensor([len(s) for s in seqs], dtype=torch.long)
        flat = torch.from_numpy(np.concatenate(seqs) if seqs else np.zeros(0, np.int64))
        loss = F.ctc_loss(logp.transpose(0, 1), flat.to(dev), in_len, tgt_len, blank=BLANK,
                          reduction="sum", zero_infinity=True)
        frames = int(in_len.sum())
        errors = torch.zeros((), dtype=torch.int64, device=dev)
        if not logits.requires_grad:  # evaluation: greedy unit errors
            best = logp.argmax(-1).cpu().numpy()
            errors += sum(edit_distance(collapse(best[j, :in_len[j]].tolist()), seqs[j].tolist())
                          for j in range(len(rows)))
        return loss, loss.detach(), errors, frames
