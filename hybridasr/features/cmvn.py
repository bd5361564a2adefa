"""CMVN statistics in Kaldi's format and their application (``apply-cmvn``).

Kaldi's stats are a 2 x (dim+1) double matrix: row 0 holds the sums of the features and, in
the last column, the frame count; row 1 holds the sums of squares (last column 0).
"""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError


def accumulate_cmvn_stats(feats: np.ndarray, stats: np.ndarray | None = None) -> np.ndarray:
    """Adds a (frames x dim) matrix to Kaldi-format stats (created when ``stats`` is None)."""
    feats = np.asarray(feats, dtype=np.float64)
    dim = feats.shape[1]
    if stats is None:
        stats = np.zeros((2, dim + 1), dtype=np.float64)
    elif stats.shape != (2, dim + 1):
        raise FormatError(f"CMVN stats of shape {stats.shape} do not fit features of dim {dim}")
    stats[0, :dim] += feats.sum(axis=0)
    stats[1, :dim] += np.square(feats).sum(axis=0)
    stats[0, dim] += feats.shape[0]
    return stats


def apply_cmvn(feats: np.ndarray, stats: np.ndarray, norm_means: bool = True,
               norm_vars: bool = False, var_floor: float = 1.0e-20) -> np.ndarray:
    """Kaldi's ``apply-cmvn`` (``--norm-means``, ``--norm-vars``) on one matrix, as float32."""
    stats = np.asarray(stats, dtype=np.float64)
    dim = feats.shape[1]
    if stats.shape != (2, dim + 1):
        raise FormatError(f"CMVN stats of shape {stats.shape} do not fit features of dim {dim}")
    if not norm_means:
        if norm_vars:
            raise ValueError("norm_vars requires norm_means (as in Kaldi)")
        return np.asarray(feats, dtype=np.float32)
    count = stats[0, dim]
    if count < 1.0:
        raise FormatError(f"CMVN stats have a frame count of {count} (< 1)")
    mean = stats[0, :dim] / count
    if not norm_vars:
        return (feats - mean).astype(np.float32)
    var = stats[1, :dim] / count - mean * mean
    var = np.maximum(var, var_floor)
    return ((feats - mean) / np.sqrt(var)).astype(np.float32)
