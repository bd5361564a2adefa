"""Frame cross-entropy with label smoothing (``--label-smoothing``; Szegedy et al. 2016): the
target distribution is ``1 - eps`` on the aligned pdf and ``eps`` spread evenly over all pdfs.
Only the training loss is smoothed: the reported loss, the cross-validation loss that newbob
steers by, and the frame errors are those of plain cross-entropy, so curves and newbob
decisions compare with a training without it.

Not for hybrid decoding as it is: on kaldi_polish (fbank + speed perturbation, seed 777; docs/
accuracy.md) 0.1 raised test / cv WER from 54.61 / 47.82 to 76.32 / 71.80, nearly all
deletions, and LM weights down to 1 did not recover it. Decoding divides the posteriors by
the pdf priors: the floor of ``eps / num_pdfs`` that smoothing puts under every pdf becomes a
large likelihood for the rare ones."""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F

from hybridasr.features.transform import IGNORE_INDEX


class SmoothedCrossEntropy:
    """The objective callable of ``hybridasr.train.loop.run_epoch`` for ``--objective=ce``
    with ``--label-smoothing`` > 0."""

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
