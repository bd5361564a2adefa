"""Pdf frame counts (Kaldi's ``analyze-counts``, nnet1's ``ali_train_pdf.counts``) and the
log-priors a hybrid decoder subtracts (Kaldi nnet1's ``PdfPrior``)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.vector_io import read_kaldi_vector, write_kaldi_vector

# Kaldi's PdfPrior sets the log-prior of a pdf below the floor to sqrt(FLT_MAX): subtracted
# from the network's log-posteriors, it removes that pdf from decoding.
DISABLED_LOG_PRIOR = float(np.sqrt(np.finfo(np.float32).max))


def count_labels(labels: Iterable[np.ndarray], num_classes: int) -> np.ndarray:
    """Frame counts of each class over integer label sequences (int64, length num_classes)."""
    counts = np.zeros(num_classes, dtype=np.int64)
    for seq in labels:
        seq = np.asarray(seq)
        if seq.size == 0:
            continue
        lo, hi = int(seq.min()), int(seq.max())
        if lo < 0 or hi >= num_classes:
            raise FormatError(f"label {lo if lo < 0 else hi} outside [0, {num_classes})")
        counts += np.bincount(seq, minlength=num_classes)
    return counts


def read_counts(path: str) -> np.ndarray:
    """A counts file ``[ c0 c1 ... ]`` (text, or Kaldi binary) as a float64 array."""
    counts = read_kaldi_vector(path)
    if counts.size == 0:
        raise FormatError(f"{path}: empty counts vector")
    if (counts < 0).any() or not np.isfinite(counts).all():
        raise FormatError(f"{path}: counts must be finite and non-negative")
    return counts


def write_counts(path: str, counts, binary: bool = False) -> None:
    write_kaldi_vector(path, counts, binary=binary)


def log_priors(counts, floor: float = 1e-10) -> np.ndarray:
    """log(counts / sum) as Kaldi nnet1's PdfPrior computes it (log(p + 1e-20)); a pdf whose
    prior is below ``floor`` gets ``DISABLED_LOG_PRIOR`` (sqrt(FLT_MAX)), so that subtracting
    the priors from log-posteriors disables it."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if counts.ndim != 1 or counts.size == 0 or not total > 0:
        raise FormatError("log_priors: counts must be a non-empty vector with a positive sum")
    rel = counts / total
    out = np.log(rel + 1e-20)
    out[rel < floor] = DISABLED_LOG_PRIOR
    return out.astype(np.float32)


def load_log_priors(counts_path: str, num_pdfs: int, prior_floor: float = 1e-10) -> np.ndarray:
    """Log-priors from a counts file (``ali_train_pdf.counts``); its size must be the model's
    number of outputs."""
    counts = np.asarray(read_counts(counts_path))
    if counts.size != num_pdfs:
        raise FormatError(f"{counts_path} has {counts.size} pdf counts but the model has "
                          f"{num_pdfs} outputs: the counts (and the alignment model) do not "
                          f"belong to this network")
    return np.asarray(log_priors(counts, floor=prior_floor), dtype=np.float32)
