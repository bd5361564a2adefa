"""Pseudo log-likelihoods from an alignment: a stand-in for a network when checking a graph,
the decoder or the scoring. Frame t gets ``good`` for the pdf of its aligned transition-id and
``bad`` for every other pdf, so the best path through the graph is the aligned one."""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError


def pseudo_loglikes(tids: np.ndarray, tid2pdf: np.ndarray, num_pdfs: int,
                    good: float = 0.0, bad: float = -10.0) -> np.ndarray:
    tids = np.asarray(tids, dtype=np.int64).reshape(-1)
    if len(tids) and (tids.min() < 1 or tids.max() >= len(tid2pdf)):
        raise FormatError(f"alignment has transition-ids outside 1..{len(tid2pdf) - 1}")
    m = np.full((len(tids), num_pdfs), bad, dtype=np.float32)
    m[np.arange(len(tids)), np.asarray(tid2pdf)[tids]] = good
    return m
