"""The alignment/feature length check, with Kaldi nnet1's ``--length-tolerance`` semantics.

Kaldi's ``nnet-train-frmshuff`` accepts an utterance when ``max(len) - min(len) <
length_tolerance`` (strictly) and then trims **both** the features and the targets to the
shorter of the two; it drops the utterance otherwise. Here the importer does the targets' half:
targets longer than the features are cut to the feature length, shorter ones are kept as they
are (their length is recorded in ``target_lengths``) and the dataset trims the features to them
when it reads an utterance. No label is ever made up.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

EXACT, TRIMMED, SHORTER, DROPPED = "exact", "trimmed", "shorter", "dropped"
DEFAULT_LENGTH_TOLERANCE = 5  # Kaldi nnet1's --length-tolerance default


def match_length(targets: np.ndarray, num_frames: int,
                 tolerance: int = DEFAULT_LENGTH_TOLERANCE) -> Tuple[Optional[np.ndarray], str]:
    """(targets, what happened) for an alignment of an utterance with ``num_frames`` feature
    frames: ``exact``; ``trimmed`` (longer targets cut to ``num_frames``); ``shorter`` (targets
    kept as they are: the features are to be trimmed to them); ``dropped`` (None: the lengths
    differ by ``tolerance`` or more, or the alignment is empty)."""
    n = len(targets)
    if n == num_frames:
        return targets, EXACT
    if abs(n - num_frames) >= tolerance or n == 0:
        return None, DROPPED
    if n > num_frames:
        return targets[:num_frames], TRIMMED
    return targets, SHORTER


def within_tolerance(num_targets: int, num_frames: int,
                     tolerance: int = DEFAULT_LENGTH_TOLERANCE) -> bool:
    """Whether Kaldi nnet1 would keep an utterance of these lengths (trimming both)."""
    return num_targets > 0 and abs(num_targets - num_frames) < tolerance
