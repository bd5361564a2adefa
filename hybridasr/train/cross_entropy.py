"""Frame cross-entropy against the imported alignment: ``--objective=ce`` (the default), with
label smoothing (``--label-smoothing``; Szegedy et al. 2016) as its option.

The loss of a batch is the sum of frame cross-entropies over its real (unpadded) frames (the
targets' ``IGNORE_INDEX`` marks padding, and the overlap a chunk does not count); errors are
the frames whose argmax is not the target.

With label smoothing the target distribution is ``1 - eps`` on the aligned pdf and ``eps``
spread evenly over all pdfs. Only the training loss is smoothed: the reported loss, the
cross-validation loss that newbob steers by, and the frame errors are those of plain
cross-entropy, so curves and newbob decisions compare with a training without it.

Not for hybrid decoding as it is: on kaldi_polish (fbank + speed perturbation, seed 777; docs/
accuracy.md) 0.1 raised test / cv WER from 54.61 / 47.82 to 76.32 / 71.80, nearly all
deletions, and LM weights down to 1 did not recover it. Decoding divides the posteriors by
the pdf priors: the floor of ``eps / num_pdfs`` that smoothing puts under every pdf becomes a
large likelihood for the rare ones."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import torch
import torch.nn.functional as F

from hybridasr.errors import ConfigError
from hybridasr.features.transform import IGNORE_INDEX
from hybridasr.options import option
from hybridasr.train.objective import Objective, TrainingData

__all__ = ["CrossEntropyOptions", "FrameCrossEntropy", "SmoothedCrossEntropy"]


@dataclass
class CrossEntropyOptions:
    label_smoothing: float = option(0.0, "--objective=ce: the training loss puts this much "
                                         "of each frame's target evenly on all pdfs (0: none); "
                                         "the reported and cv losses stay plain "
                                         "cross-entropy", minimum=0.0)


class FrameCrossEntropy(Objective):
    """Frame cross-entropy against the batch's targets."""

    Options = CrossEntropyOptions

    @classmethod
    def check_options(cls, opts) -> None:
        if not opts.label_smoothing < 1:
            raise ConfigError(f"--label-smoothing={opts.label_smoothing}: below 1 (0.1 is "
                              f"usual)")

    @classmethod
    def check_not_chosen(cls, opts, chosen: str) -> None:
        if opts.label_smoothing > 0:
            raise ConfigError(f"--label-smoothing is for --objective=ce, not "
                              f"--objective={chosen}")

    @classmethod
    def build(cls, opts, data: TrainingData = None, inputs=None) -> "FrameCrossEntropy":
        eps = getattr(opts, "label_smoothing", 0.0)
        return SmoothedCrossEntropy(eps) if eps > 0 else cls()

    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        num = int((batch.targets != IGNORE_INDEX).sum())  # on the host: no GPU sync
        flat = batch.targets.to(logits.device, non_blocking=True).reshape(-1)
        logits = logits.float().reshape(-1, logits.shape[-1])
        loss = F.cross_entropy(logits, flat, ignore_index=IGNORE_INDEX, reduction="sum")
        with torch.no_grad():
            errors = ((logits.argmax(-1) != flat) & (flat != IGNORE_INDEX)).sum()
        return loss, loss.detach(), errors, num


class SmoothedCrossEntropy(FrameCrossEntropy):
    """``--objective=ce`` with ``--label-smoothing`` > 0."""

    def __init__(self, eps: float):
        self.eps = float(eps)

    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        targets = batch.targets.to(logits.device, non_blocking=True).reshape(-1)
        num = int((batch.targets != IGNORE_INDEX).sum())  # on the host: no GPU sync
        logp = F.log_softmax(logits.float().reshape(-1, logits.shape[-1]), dim=-1)
        nll = F.nll_loss(logp, targets, ignore_index=IGNORE_INDEX, reduction="sum")
        real = targets != IGNORE_INDEX
        with torch.no_grad():
            errors = ((logp.argmax(-1) != targets) & real).sum()
        if not torch.is_grad_enabled():  # cross-validation: plain cross-entropy
            return nll, nll, errors, num
        uniform = -(logp.mean(-1) * real.to(logp.dtype)).sum()
        loss = (1.0 - self.eps) * nll + self.eps * uniform
        return loss, nll.detach(), errors, num
