"""Label transforms on frame targets.

There is no label delay here: the one label delay is the training transform's
(``FeatureTransform.label_delay``, ``--label-delay`` of ``pybin/train.py``), stored with the
model and undone at decoding; frames it leaves without a label get the ignore index.
"""
from __future__ import annotations

import numpy as np


def subsample_labels(targets: np.ndarray, factor: int) -> np.ndarray:
    """Every ``factor``-th label, from frame 0: frames 0, f, 2f, ... (``ceil(T / f)`` labels),
    the frames Kaldi's ``--frame-subsampling-factor`` keeps."""
    factor = int(factor)
    if factor < 1:
        raise ValueError(f"subsampling factor must be >= 1, got {factor}")
    return np.asarray(targets)[::factor].copy()
