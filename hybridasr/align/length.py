"""The alignment/feature length check, with Kaldi nnet1's ``--length-tolerance`` semantics.

Kaldi's ``nnet-train-frmshuff`` accepts an utterance when ``max(len) - min(len) <
length_tolerance`` (strictly) and drops it otherwise. The targets must fit the features the
trainer will read, so here the targets are brought to the feature length: cut at the end when
longer, padded by repeating the last label when shorter.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

EXACT, TRIMMED, PADDED, DROPPED = "exact", "trimmed", "padded", "dropped"


def match_length(targets: np.ndarray, num_frames: int,
                 tolerance: int = 5) -> Tuple[Optional[np.ndarray], str]:
    """(targets of length ``num_frames`` or None, what happened: exact/trimmed/padded/dropped)."""
    n = len(targets)
    if n == num_frames:
        return targets, EXACT
    if abs(n - num_frames) >= tolerance or n == 0:
        return None, DROPPED
    if n > num_frames:
        return targets[:num_frames], TRIMMED
    return np.concatenate([targets, np.repeat(targets[-1:], num_frames - n)]), PADDED
