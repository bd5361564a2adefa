"""Deltas (Kaldi ``add-deltas``) and frame splicing (Kaldi nnet1 ``--splice``)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=16)
def _delta_scales(order: int, window: int):
    scales = [np.array([1.0])]
    normalizer = float(sum(j * j for j in range(-window, window + 1)))
    for _ in range(order):
        prev = scales[-1]
        prev_off = (len(prev) - 1) // 2
        cur = np.zeros(len(prev) + 2 * window)
        cur_off = prev_off + window
        for j in range(-window, window + 1):
            for k in range(-prev_off, prev_off + 1):
                cur[j + k + cur_off] += j * prev[k + prev_off]
        scales.append(cur / normalizer)
    return tuple(scales)


def add_deltas(feats: np.ndarray, order: int = 2, window: int = 2) -> np.ndarray:
    """Kaldi's ``add-deltas --delta-order=order --delta-window=window`` (edges replicated)."""
    feats = np.asarray(feats, dtype=np.float32)
    T, D = feats.shape
    scales = _delta_scales(order, window)
    out = np.empty((T, D * (order + 1)), dtype=np.float32)
    out[:, :D] = feats
    if T == 0:
        return out
    for i in range(1, order + 1):
        s = scales[i]
        half = (len(s) - 1) // 2
        idx = np.clip(np.arange(T)[:, None] + np.arange(-half, half + 1)[None, :], 0, T - 1)
        out[:, i * D:(i + 1) * D] = np.einsum("tjd,j->td", feats[idx], s.astype(np.float32))
    return out


def splice_frames(feats: np.ndarray, left: int, right: int | None = None) -> np.ndarray:
    """Concatenates frames t-left..t+right (edges replicated), as Kaldi nnet1's ``--splice``.

    ``splice_frames(x, 5)`` gives 11 frames per output row, frame t-5 first.
    """
    right = left if right is None else right
    feats = np.asarray(feats, dtype=np.float32)
    T, D = feats.shape
    if left == 0 and right == 0:
        return feats
    idx = np.clip(np.arange(T)[:, None] + np.arange(-left, right + 1)[None, :], 0, max(T - 1, 0))
    return feats[idx].reshape(T, D * (left + right + 1))
