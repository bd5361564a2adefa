"""Online CMVN for a lone recording, as Kaldi's ``OnlineCmvn`` (online-feature.cc) does it, and
the training set's global CMVN statistics it starts from (``global_cmvn.stats``).

Frame t is normalised with the statistics of the frames of a window ending at t (at most
``cmn_window``, Kaldi's 600); while the window holds fewer than ``cmn_window`` frames, the
global statistics make up the rest, at most ``global_frames`` (Kaldi's 200) frames' worth
(``SmoothOnlineCmvnStats`` with no speaker statistics). The statistics are Kaldi's 2 x (dim+1)
double matrix (``hybridasr.features.cmvn``); ``global_cmvn_stats`` sums a ``cmvn.scp`` (Kaldi's
``matrix-sum scp:data/train/cmvn.scp``, what ``steps/online/nnet2/prepare_online_decoding.sh``
writes into a model dir).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.matrix_reader import read_matrices, read_matrix_rx
from hybridasr.kaldi.io.streams import OutputStream
from hybridasr.kaldi.io.table_writer import encode_text_matrix

CMN_WINDOW = 600     # Kaldi's OnlineCmvnOptions defaults
GLOBAL_FRAMES = 200


def check_stats(stats: np.ndarray, what: str) -> np.ndarray:
    stats = np.asarray(stats, dtype=np.float64)
    if stats.ndim != 2 or stats.shape[0] != 2 or stats.shape[1] < 2:
        raise FormatError(f"{what}: CMVN stats must be a 2 x (dim+1) matrix, got shape "
                          f"{stats.shape}")
    if stats[0, -1] < 1.0:
        raise FormatError(f"{what}: CMVN stats with a frame count of {stats[0, -1]} (< 1)")
    return stats


def global_cmvn_stats(rspecifier: str, base: str = "") -> np.ndarray:
    """The sum of every matrix of a table of CMVN stats (``scp:data/train/cmvn.scp``: the
    training set's per-speaker stats; an scp's relative paths relative to ``base``)."""
    total = None
    for key, m in read_matrices(rspecifier, base):
        m = np.asarray(m, dtype=np.float64)
        if total is None:
            total = np.zeros_like(m)
        if m.shape != total.shape:
            raise FormatError(f"{rspecifier}: stats of {key} have shape {m.shape}, the first "
                              f"ones {total.shape}")
        total += m
    if total is None:
        raise FormatError(f"{rspecifier}: no CMVN stats in it")
    return check_stats(total, rspecifier)


def write_stats(path: str, stats: np.ndarray) -> None:
    """One matrix in Kaldi's text format (as ``matrix-sum --binary=false``), atomically."""
    out = OutputStream(path)
    try:
        out.write(encode_text_matrix(np.asarray(stats, dtype=np.float64)))
    except BaseException:
        out.abort()
        raise
    out.commit()


def read_stats(path: str) -> np.ndarray:
    return check_stats(read_matrix_rx(path, None), path)


def online_cmvn(feats: np.ndarray, global_stats: Optional[np.ndarray], norm_vars: bool = False,
                cmn_window: int = CMN_WINDOW, global_frames: int = GLOBAL_FRAMES) -> np.ndarray:
    """Kaldi's ``OnlineCmvn`` over a whole recording (every frame as it would be given out
    frame by frame), float32. ``global_stats`` None: the window alone (per-utterance CMVN
    with a running window, Kaldi's ``apply-cmvn-sliding --center=false``)."""
    x = np.asarray(feats, dtype=np.float32)
    t, dim = x.shape
    if t == 0:
        return x.copy()
    xd = x.astype(np.float64)
    zero = np.zeros((1, dim))
    csum = np.concatenate([zero, np.cumsum(xd, axis=0)])
    csq = np.concatenate([zero, np.cumsum(xd * xd, axis=0)]) if norm_vars else None
    hi = np.arange(1, t + 1)
    lo = np.maximum(0, hi - cmn_window)
    count = (hi - lo).astype(np.float64)
    sums = csum[hi] - csum[lo]
    sq = csq[hi] - csq[lo] if norm_vars else None
    return window_normalise(xd, sums, sq, count, global_stats, norm_vars, cmn_window,
                            global_frames)


def window_normalise(xd: np.ndarray, sums: np.ndarray, sq: Optional[np.ndarray],
                     count: np.ndarray, global_stats: Optional[np.ndarray], norm_vars: bool,
                     cmn_window: int = CMN_WINDOW, global_frames: int = GLOBAL_FRAMES
                     ) -> np.ndarray:
    """Frames ``xd`` (float64) normalised by the sums (and squares) of their windows of
    ``count`` frames, made up to ``cmn_window`` frames with at most ``global_frames`` frames'
    worth of ``global_stats`` (Kaldi's OnlineCmvn), float32."""
    dim = xd.shape[1]
    if global_stats is not None:
        g = check_stats(global_stats, "global CMVN stats")
        if g.shape[1] != dim + 1:
            raise FormatError(f"global CMVN stats of dim {g.shape[1] - 1} do not fit features "
                              f"of dim {dim}")
        extra = np.clip(cmn_window - count, 0, global_frames)  # frames' worth of global stats
        w = (extra / g[0, dim])[:, None]
        sums = sums + w * g[0, :dim]
        if norm_vars:
            sq = sq + w * g[1, :dim]
        count = count + extra
    mean = sums / count[:, None]
    if not norm_vars:
        return (xd - mean).astype(np.float32)
    var = np.maximum(sq / count[:, None] - mean * mean, 1.0e-20)
    return ((xd - mean) / np.sqrt(var)).astype(np.float32)
