"""Label transforms the data pipeline applies to frame targets."""
from __future__ import annotations

import numpy as np


def delay_labels(targets: np.ndarray, n: int) -> np.ndarray:
    """Shifts the labels right by ``n`` frames (a unidirectional LSTM sees ``n`` frames of
    future context before emitting a frame's label): ``out[t] = targets[t - n]``, the first
    ``n`` frames repeat the first label. Same length; ``n < 0`` shifts left (the last label
    repeated at the end); ``n = 0`` returns a copy."""
    targets = np.asarray(targets)
    n = int(n)
    T = len(targets)
    if T == 0 or n == 0:
        return targets.copy()
    if abs(n) >= T:
        return np.full_like(targets, targets[0] if n > 0 else targets[-1])
    if n > 0:
        return np.concatenate([np.repeat(targets[:1], n, axis=0), targets[:-n]])
    return np.concatenate([targets[-n:], np.repeat(targets[-1:], -n, axis=0)])


def subsample_labels(targets: np.ndarray, factor: int) -> np.ndarray:
    """Every ``factor``-th label, from frame 0: frames 0, f, 2f, ... (``ceil(T / f)`` labels),
    the frames Kaldi's ``--frame-subsampling-factor`` keeps."""
    factor = int(factor)
    if factor < 1:
        raise ValueError(f"subsampling factor must be >= 1, got {factor}")
    return np.asarray(targets)[::factor].copy()
