"""How well word confidences tell correct from wrong words: the normalised cross entropy (NCE)
of NIST's ``sclite`` (and of Kaldi's ``steps/conf/`` calibration scripts).

Each hypothesis word is labelled correct or wrong by aligning the utterance's hypothesis to
its reference (``kaldialign``, as the WER scoring aligns): correct where it is paired with an
equal reference word; a substitution or an insertion is wrong. With ``n`` words, ``n_c`` of
them correct, ``p_c = n_c / n`` and confidences ``c`` clipped to ``[1e-10, 1 - 1e-10]``::

    H(C) = -(n_c log2 p_c + (n - n_c) log2(1 - p_c))
    NCE  = (H(C) + sum_correct log2 c + sum_wrong log2(1 - c)) / H(C)

1 is a perfect separation, 0 is no better than giving every word ``p_c``, and below 0 worse
than that. ``H(C)`` is 0 when every word is correct or every word is wrong: the NCE is
undefined there and ``nce`` raises ``UndefinedNce`` (naming the count).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import kaldialign
import numpy as np

from hybridasr.errors import FormatError, HybridAsrError

CLIP = 1e-10

__all__ = ["UndefinedNce", "ConfidenceStats", "label_words", "nce", "confidence_stats",
           "read_ctm_words"]


class UndefinedNce(HybridAsrError, ValueError):
    """The NCE of words all correct, all wrong, or of no words at all."""


def label_words(ref: Sequence[str], hyp: Sequence[str]) -> List[bool]:
    """For each hypothesis word in order: whether the alignment pairs it with an equal
    reference word."""
    eps = ""  # never a word (words are non-empty)
    return [r == h for r, h in kaldialign.align(list(ref), list(hyp), eps) if h != eps]


def nce(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """The normalised cross entropy (see the module's docstring)."""
    c = np.clip(np.asarray(confidences, np.float64), CLIP, 1.0 - CLIP)
    ok = np.asarray(correct, bool)
    if c.shape != ok.shape or c.ndim != 1:
        raise ValueError(f"{c.size} confidences but {ok.size} labels")
    n, n_c = ok.size, int(ok.sum())
    if n == 0:
        raise UndefinedNce("NCE of no words is undefined")
    if n_c in (0, n):
        raise UndefinedNce(f"NCE is undefined when all {n} words are "
                           f"{'correct' if n_c else 'wrong'} (H(C) = 0)")
    p_c = n_c / n
    h_c = -(n_c * math.log2(p_c) + (n - n_c) * math.log2(1.0 - p_c))
    ll = float(np.log2(c[ok]).sum() + np.log2(1.0 - c[~ok]).sum())
    return (h_c + ll) / h_c


@dataclass
class ConfidenceStats:
    words: int
    correct: int
    fraction_correct: float
    mean_conf_correct: float   # NaN without correct words
    mean_conf_wrong: float     # NaN without wrong words
    nce: float                 # NaN where undefined (all correct / all wrong)

    def as_dict(self) -> dict:
        return asdict(self)


def confidence_stats(refs: Mapping[str, Sequence[str]],
                     hyps: Mapping[str, Sequence[Tuple[str, float]]]) -> ConfidenceStats:
    """Labels each utterance's (word, confidence) hypothesis against its reference and sums
    up. A hypothesis without a reference is an error naming it; a reference without a
    hypothesis has no hypothesis words (its words are deletions, not in the NCE)."""
    confs: List[float] = []
    labels: List[bool] = []
    for utt, words in hyps.items():
        if utt not in refs:
            raise FormatError(f"utterance {utt} has a hypothesis but no reference")
        labels += label_words(refs[utt], [w for w, _ in words])
        confs += [c for _, c in words]
    ok = np.asarray(labels, bool)
    c = np.asarray(confs, np.float64)
    try:
        value = nce(c, ok)
    except UndefinedNce:
        value = math.nan
    return ConfidenceStats(
        words=int(ok.size), correct=int(ok.sum()),
        fraction_correct=float(ok.mean()) if ok.size else math.nan,
        mean_conf_correct=float(c[ok].mean()) if ok.any() else math.nan,
        mean_conf_wrong=float(c[~ok].mean()) if (~ok).any() else math.nan, nce=value)


def read_ctm_words(path: str) -> Dict[str, List[Tuple[str, float]]]:
    """``<utt> <channel> <start> <dur> <word> <conf>`` lines -> utterance -> [(word, conf)],
    in the file's order (Kaldi's CTM; ``hybridasr.decode.ctm`` writes it); a bad line is a
    FormatError naming the file and line (``hybridasr.decode.ctm.read_ctm``)."""
    from hybridasr.decode.ctm import read_ctm

    ctm = read_ctm(path)
    out: Dict[str, List[Tuple[str, float]]] = {}
    for utt, word, conf in zip(ctm.utts, ctm.words, ctm.confs):
        out.setdefault(utt, []).append((word, conf))
    return out
