"""CMVN statistics in Kaldi's format and their application (``apply-cmvn``).

Kaldi's stats are a 2 x (dim+1) double matrix: row 0 holds the sums of the features and, in
the last column, the frame count; row 1 holds the sums of squares (last column 0).
"""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError


def accumulate_cmvn_stats(feats: np.ndarray, stats: np.ndarray | None = None) -> np.ndarray:
    """Adds a (frames x dim) matrix to Kaldi-format stats (created when ``stats`` is None).

    As Kaldi's ``AccCmvnStats``: the squares are float products (of float features), the sums
    double, so stats of the same features equal Kaldi's to double rounding.
    """
    feats = np.asarray(feats)
    if feats.dtype != np.float64:
        feats = feats.astype(np.float32, copy=False)
    dim = feats.shape[1]
    if stats is None:
        stats = np.zeros((2, dim + 1), dtype=np.float64)
    elif stats.shape != (2, dim + 1):
        raise FormatError(f"CMVN stats of shape {stats.shape} do not fit features of dim {dim}")
    stats[0, :dim] += feats.sum(axis=0, dtype=np.float64)
    stats[1, :dim] += np.square(feats).sum(axis=0, dtype=np.float64)
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


def fake_cmvn_stats(dim: int) -> np.ndarray:
    """Stats that make ``apply_cmvn`` the identity (mean 0, variance 1, count 1), as Kaldi's
    ``compute_cmvn_stats.sh --fake`` writes them."""
    stats = np.zeros((2, dim + 1), dtype=np.float64)
    stats[0, dim] = 1.0
    stats[1, :dim] = 1.0
    return stats


def fake_dims(stats: np.ndarray, dims) -> np.ndarray:
    """Kaldi's ``modify-cmvn-stats``/``--fake-dims``: the given dimensions get fake stats
    (mean 0, variance 1 at the stats' own count)."""
    stats = np.array(stats, dtype=np.float64)
    dim = stats.shape[1] - 1
    count = stats[0, dim]
    for d in dims:
        if not 0 <= d < dim:
            raise FormatError(f"--fake-dims: dimension {d} is outside 0..{dim - 1}")
        stats[0, d] = 0.0
        stats[1, d] = count
    return stats


def parse_cmvn_opts(text: str, source: str = "cmvn_opts") -> dict:
    """The ``apply_cmvn`` keyword arguments a Kaldi ``cmvn_opts`` string asks for
    (``--norm-means=true|false``, ``--norm-vars=true|false``; empty = Kaldi's defaults,
    means only). Other apply-cmvn options are an error naming ``source``."""
    from hybridasr.errors import ConfigError

    out = {"norm_means": True, "norm_vars": False}
    words = text.split()
    i = 0
    while i < len(words):
        w = words[i]
        name, sep, value = w.partition("=")
        key = name.lstrip("-").replace("-", "_")
        if not w.startswith("--") or key not in out:
            raise ConfigError(f"{source}: unsupported apply-cmvn option {w!r} "
                              f"(supported: --norm-means, --norm-vars)")
        if not sep:  # "--norm-vars true" or a bare "--norm-vars"
            if i + 1 < len(words) and words[i + 1] in ("true", "false"):
                value, i = words[i + 1], i + 1
            else:
                value = "true"
        if value not in ("true", "false"):
            raise ConfigError(f"{source}: {name} needs true or false, got {value!r}")
        out[key] = value == "true"
        i += 1
    if out["norm_vars"] and not out["norm_means"]:
        raise ConfigError(f"{source}: --norm-vars=true needs --norm-means=true (as in Kaldi)")
    return out


def read_cmvn_opts(path: str) -> dict:
    """``parse_cmvn_opts`` of a file (e.g. ``exp/tri3_ali/cmvn_opts``)."""
    from hybridasr.errors import ConfigError

    try:
        with open(path, encoding="utf-8") as f:
            return parse_cmvn_opts(f.read(), source=path)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
