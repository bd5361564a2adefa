"""The default number of leaves of a chain tree from the amount of training data.

Kaldi's mini_librispeech chain recipe (``local/chain/tuning/run_tdnn_1k.sh``) builds 3500
leaves on train_clean_5, about 5 hours; Kaldi's larger recipes stay at 3500-7000 for 80-300
hours. The default scales 3500 by the square root of the data's hours against those 5 hours
(3 subsampled frames are 30 ms of audio), within [50, 7000]: e.g. 1 hour: 1565 leaves; 10
minutes: 639; 1 minute: 202. The tree builder then stops earlier where the statistics are
too few to split (its minimum count per leaf)."""
from __future__ import annotations

import math

__all__ = ["chain_num_leaves"]

KALDI_LEAVES, KALDI_HOURS = 3500, 5.0
MIN_LEAVES, MAX_LEAVES = 50, 7000


def chain_num_leaves(num_frames: float, frame_shift_s: float = 0.01,
                     frame_subsampling_factor: int = 3) -> int:
    """Leaves for ``num_frames`` frames at the subsampled rate (the tree statistics' count)."""
    hours = max(float(num_frames), 0.0) * frame_shift_s * frame_subsampling_factor / 3600.0
    leaves = int(round(KALDI_LEAVES * math.sqrt(hours / KALDI_HOURS)))
    return max(MIN_LEAVES, min(MAX_LEAVES, leaves))
