"""Whether two feature tables hold the same features, as Kaldi's ``compare-feats`` asks: here,
whether the features the recipe made are the ones a Kaldi dir's GMM was trained on (its own
``feats.scp``), so that the GMM may score them (``run.sh --gmm-weight``).

The measure is the relative rms difference over the utterances both tables hold (at most
``max_utts``, in the first table's order): each utterance's matrices are cut to the shorter,
their per-utterance means removed (CMN makes those irrelevant to a GMM trained with it), and
``sqrt(sum (a - b)^2 / sum b^2)`` taken over all of them. The same MFCC options on the same
audio differ by dither only: 0.02-0.08 on the shared Kaldi dirs; 16 kHz features against the
8 kHz ones of the same recordings, or 44.1 kHz against 16 kHz: 1.2-1.3."""
from __future__ import annotations

from typing import Optional

import numpy as np


__all__ = ["compare_feature_tables", "SAME_FEATURES_MAX_REL_RMS"]

# below this relative rms difference two tables hold the same features (dither apart)
SAME_FEATURES_MAX_REL_RMS = 0.3


def compare_feature_tables(scp_a: str, scp_b: str, base_a: str = "", base_b: str = "",
                           max_utts: int = 20,
                           threshold: float = SAME_FEATURES_MAX_REL_RMS) -> dict:
    """{"utterances", "frames_differ", "rel_rms", "same", "threshold", "note"} of two
    feats.scp (``base_*``: the dirs their relative entries are relative to, as Kaldi's s5 dir).
    No utterance in common, or another feature dimension, is "same": false with the reason in
    "note" ("rel_rms" None); else "note" gives the difference in words."""
    from hybridasr.kaldi.io.matrix_reader import iter_feature_scp, read_scp_entry
    from hybridasr.kaldi.io.open_files import OpenFiles
    from hybridasr.kaldi.io.table import iter_map_lines

    where_b = {key: (n, rx) for n, key, rx in iter_map_lines(scp_b)}
    diff = ref = 0.0
    n = frames_differ = 0
    why: Optional[str] = None
    with OpenFiles() as files:
        for key, a in iter_feature_scp(scp_a, base_a):
            if n >= max_utts:
                break
            if key not in where_b:
                continue
            lineno, rx = where_b[key]
            b = read_scp_entry(scp_b, lineno, key, rx, files, base_b)
            if a.shape[1] != b.shape[1]:
                why = f"utterance {key}: dim {a.shape[1]} in {scp_a}, {b.shape[1]} in {scp_b}"
                break
            m = min(len(a), len(b))
            frames_differ += abs(len(a) - len(b))
            x = np.asarray(a[:m], dtype=np.float64)
            y = np.asarray(b[:m], dtype=np.float64)
            x, y = x - x.mean(0), y - y.mean(0)
            diff += float(((x - y) ** 2).sum())
            ref += float((y ** 2).sum())
            n += 1
    if why is None and n == 0:
        why = f"no utterance of {scp_a} is in {scp_b}"
    rel = (diff / ref) ** 0.5 if ref > 0 else float("inf")
    out = {"utterances": n, "frames_differ": frames_differ,
           "rel_rms": round(rel, 4) if why is None else None,
           "same": why is None and rel <= threshold, "threshold": threshold,
           "note": why or f"relative difference {rel:.3g} over {n} utterance(s) (the same "
                          f"features: at most {threshold:g})"}
    return out
