"""Several trained networks as one: the average of their log-posteriors.

Kaldi's ``steps/nnet3/decode_score_fusion.sh`` averages the log-likelihoods of several
systems' networks before the search (``matrix-sum --average=true``); ``Ensemble`` does the same
inside one model file, so that every tool that runs a model (``forward.py``, alignment,
``transcribe.py``) runs the ensemble unchanged. Its output is the mean of the members'
``log_softmax`` (the log of the geometric mean of their posteriors): with one prior for all
members, the same as averaging their scaled log-likelihoods.

The members must read the same features (one feature transform, one input dim) and give the
same outputs (pdfs, frame rate); ``combine_models`` checks that and builds the file's contents
(``hybridasr.models.io.save_ensemble``). On small training sets the seeds of one recipe differ
by more than any lever's gain: kaldi_hindi_sat's 9 seeds made 7 to 14 errors of 60 test words,
three-network ensembles 10, 11 and 10 (docs/accuracy.md).
"""
from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn as nn


class Ensemble(nn.Module):
    """The members' log-posteriors averaged, frame by frame."""

    recurrent = False
    carries_state = False

    def __init__(self, members: List[nn.Module]):
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 networks, got {len(members)}")
        self.members = nn.ModuleList(members)
        factors = {int(getattr(m, "frame_subsampling_factor", 1) or 1) for m in members}
        if len(factors) > 1:
            raise ValueError(f"ensemble members of different frame rates: subsampling "
                             f"factors {sorted(factors)}")
        self.frame_subsampling_factor = factors.pop()
        self.recurrent = any(getattr(m, "recurrent", False) for m in members)

    @property
    def num_outputs(self) -> int:
        m = self.members[0]
        return int(getattr(m, "num_outputs", None) or m.output.out_features)

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None, state=None,
                return_state: bool = False):
        outs = []
        for m in self.members:
            y = m(x, lengths)
            if isinstance(y, (tuple, list)):
                y = y[0]
            outs.append(torch.log_softmax(y.float(), dim=-1))
        mean = torch.stack(outs).mean(dim=0)
        return (mean, None) if return_state else mean
