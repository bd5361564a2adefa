"""Calibrated word confidences, as Kaldi's ``steps/conf/train_calibration.sh``: a logistic
regression from word features to P(the word is correct), fitted on held-out words with a
reference, saved as a small JSON file and applied to a CTM's confidences.

Features of a CTM word (``<utt> 1 <start> <dur> <word> <conf>``; Kaldi's set less the lattice
depth, which a CTM does not carry):

- ``logit_conf``: ``log(c / (1 - c))`` of the raw confidence rounded to the CTM's 2 decimals
  and clipped to ``[0.005, 0.995]`` (so 1.00, a word without competitor in the lattice, is
  +5.29 and the same whether the map is applied in the decoder or to a CTM file);
- ``log_chars``: log of the word's length in characters;
- ``log_seconds_per_char``: log of its duration (at least 0.01 s) per character.

The map ``sigmoid(bias + weights . features)`` is fitted by Newton's method on the mean
negative log-likelihood plus ``l2 * |weights|^2`` (the bias is not penalised; Kaldi's
``--normalizer`` is 0.0025): convex, deterministic, no random start. With the bias free the
fit cannot be worse than giving every word the fraction correct on its own training words
(NCE >= 0 there). Applied for output, the probabilities are kept in ``[0.01, 0.99]``: a CTM
has 2 decimals, and 0.00 or 1.00 would claim certainty the map does not have.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np

from hybridasr.decode.confidence import label_words
from hybridasr.decode.ctm import CtmWords, read_ctm
from hybridasr.errors import FormatError
from hybridasr.utils.atomic import atomic_open

FORMAT = "hybridasr-confidence-calibration"
VERSION = 1
FEATURES = ("logit_conf", "log_chars", "log_seconds_per_char")
CONF_CLIP = 0.005
OUT_MIN, OUT_MAX = 0.01, 0.99
DEFAULT_L2 = 0.0025

__all__ = ["FEATURES", "CtmWords", "ConfidenceCalibration", "word_features", "fit_logistic",
           "fit_calibration", "read_ctm", "labelled_ctm_words", "cross_fitted",
           "calibrate_ctm_file"]


def word_features(confs: Sequence[float], seconds: Sequence[float], words: Sequence[str],
                  names: Sequence[str] = FEATURES) -> np.ndarray:
    """(words, features) matrix of the named features (see the module's docstring)."""
    c = np.clip(np.round(np.asarray(confs, np.float64), 2), CONF_CLIP, 1.0 - CONF_CLIP)
    chars = np.asarray([max(len(w), 1) for w in words], np.float64)
    dur = np.maximum(np.asarray(seconds, np.float64), 0.01)
    table = {"logit_conf": lambda: np.log(c / (1.0 - c)),
             "log_chars": lambda: np.log(chars),
             "log_seconds_per_char": lambda: np.log(dur / chars),
             "log_seconds": lambda: np.log(dur)}
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown calibration features {unknown} (known: {sorted(table)})")
    if not (len(c) == len(chars) == len(dur)):
        raise ValueError(f"{len(c)} confidences, {len(dur)} durations, {len(chars)} words")
    return np.stack([table[n]() for n in names], 1) if names else np.zeros((len(c), 0))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow


def _objective(x, y, theta, l2):
    z = x @ theta
    nll = np.mean(np.logaddexp(0.0, z) - y * z)
    return nll + l2 * float(theta[1:] @ theta[1:])


def fit_logistic(x: np.ndarray, y: Sequence[bool], l2: float = DEFAULT_L2,
                 max_iters: int = 100, tol: float = 1e-10) -> Tuple[float, np.ndarray]:
    """(bias, weights) minimising mean NLL + ``l2 * |weights|^2`` (Newton's method with
    step halving). ``y``: the labels (True: correct); both classes must occur."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    n, k = x.shape
    if n != y.size:
        raise ValueError(f"{n} feature rows but {y.size} labels")
    n_c = float(y.sum())
    if n_c in (0.0, float(n)):
        raise ValueError(f"cannot fit a calibration: all {n} words are "
                         f"{'correct' if n_c else 'wrong'}")
    if l2 < 0:
        raise ValueError(f"l2 must be >= 0, not {l2}")
    xb = np.hstack([np.ones((n, 1)), x])
    theta = np.zeros(k + 1)
    theta[0] = math.log(n_c / (n - n_c))
    reg = 2.0 * l2 * np.eye(k + 1)
    reg[0, 0] = 0.0
    f = _objective(xb, y, theta, l2)
    for _ in range(max_iters):
        p = _sigmoid(xb @ theta)
        grad = xb.T @ (p - y) / n + reg @ theta
        hess = xb.T @ (xb * (p * (1.0 - p))[:, None]) / n + reg + 1e-12 * np.eye(k + 1)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8:
            cand = theta - t * step
            fc = _objective(xb, y, cand, l2)
            if fc <= f:
                break
            t *= 0.5
        else:
            break
        theta, done = cand, f - fc < tol
        f = fc
        if done:
            break
    return float(theta[0]), theta[1:].copy()


@dataclass
class ConfidenceCalibration:
    """A fitted map; ``save``/``load`` as JSON."""
    features: Tuple[str, ...]
    weights: List[float]
    bias: float
    l2: float = DEFAULT_L2
    trained_on: Dict = field(default_factory=dict)  # words, correct, NCE before/after

    def probabilities(self, confs, seconds, words) -> np.ndarray:
        """The map's P(correct) of each word (not clipped)."""
        x = word_features(confs, seconds, words, self.features)
        return _sigmoid(self.bias + x @ np.asarray(self.weights, np.float64))

    def apply(self, confs, seconds, words) -> np.ndarray:
        """Confidences to write: the probabilities kept in [0.01, 0.99]."""
        return np.clip(self.probabilities(confs, seconds, words), OUT_MIN, OUT_MAX)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "features": list(self.features),
                "weights": [float(w) for w in self.weights], "bias": float(self.bias),
                "l2": float(self.l2), "conf_clip": CONF_CLIP, "output_range": [OUT_MIN, OUT_MAX],
                "trained_on": self.trained_on}

    def save(self, path: str) -> None:
        with atomic_open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1, ensure_ascii=False)
            f.write("\n")

    @classmethod
    def load(cls, path: str) -> "ConfidenceCalibration":
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as e:
            raise FormatError(f"cannot read the confidence calibration {path}: "
                              f"{e.strerror}") from None
        except ValueError as e:
            raise FormatError(f"{path}: not a confidence calibration (not JSON: {e})") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise FormatError(f"{path}: not a confidence calibration (no \"format\": "
                              f"\"{FORMAT}\"; train_confidence_calibration.py writes one)")
        if d.get("version") != VERSION:
            raise FormatError(f"{path}: confidence calibration version {d.get('version')!r}, "
                              f"this code reads {VERSION}")
        try:
            feats = tuple(str(n) for n in d["features"])
            weights = [float(w) for w in d["weights"]]
            bias = float(d["bias"])
            word_features([0.5], [0.1], ["a"], feats)
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{path}: a bad confidence calibration ({type(e).__name__}: "
                              f"{e})") from None
        if len(weights) != len(feats) or not all(map(math.isfinite, weights + [bias])):
            raise FormatError(f"{path}: {len(weights)} weights for {len(feats)} features, or "
                              f"a weight that is not finite")
        return cls(feats, weights, bias, float(d.get("l2", DEFAULT_L2)),
                   dict(d.get("trained_on") or {}))


def fit_calibration(words: CtmWords, features: Sequence[str] = FEATURES,
                    l2: float = DEFAULT_L2) -> ConfidenceCalibration:
    """The map fitted on labelled words (``labelled_ctm_words``), with its training figures."""
    from hybridasr.decode.confidence import nce

    if words.correct is None:
        raise ValueError("the words have no labels (labelled_ctm_words)")
    x = word_features(words.confs, words.seconds, words.words, features)
    bias, w = fit_logistic(x, words.correct, l2)
    cal = ConfidenceCalibration(tuple(features), [float(v) for v in w], bias, l2)
    ok = np.asarray(words.correct, bool)
    cal.trained_on = {"words": int(ok.size), "correct": int(ok.sum()),
                      "utterances": len(set(words.utts)),
                      "nce_raw": nce(words.confs, ok),
                      "nce_calibrated": nce(cal.apply(words.confs, words.seconds, words.words),
                                            ok)}
    return cal


def labelled_ctm_words(ctm: CtmWords, refs: Mapping[str, Sequence[str]],
                       what: str = "the CTM") -> CtmWords:
    """Each word labelled correct/wrong by aligning its utterance's words to the reference
    (``hybridasr.decode.confidence.label_words``); an utterance without a reference is an
    error naming it."""
    by_utt: Dict[str, List[int]] = {}
    for i, u in enumerate(ctm.utts):
        by_utt.setdefault(u, []).append(i)
    correct = [False] * len(ctm)
    for u, idx in by_utt.items():
        if u not in refs:
            raise FormatError(f"{what}: utterance {u} has no reference text")
        for i, ok in zip(idx, label_words(refs[u], [ctm.words[i] for i in idx])):
            correct[i] = ok
    return CtmWords(list(ctm.utts), list(ctm.words), list(ctm.seconds), list(ctm.confs),
                    correct)


def cross_fitted(words: CtmWords, folds: int = 5, features: Sequence[str] = FEATURES,
                 l2: float = DEFAULT_L2) -> np.ndarray:
    """Each word's calibrated confidence from a map fitted without its utterance: the
    utterances (sorted) dealt round-robin into ``folds`` folds, deterministically."""
    utts = sorted(set(words.utts))
    if folds < 2 or folds > len(utts):
        raise ValueError(f"{folds} folds of {len(utts)} utterances")
    fold_of = {u: i % folds for i, u in enumerate(utts)}
    fold = np.asarray([fold_of[u] for u in words.utts])
    out = np.zeros(len(words))
    cols = (np.asarray(words.confs), np.asarray(words.seconds), np.asarray(words.words),
            np.asarray(words.correct, bool))
    for k in range(folds):
        tr, te = fold != k, fold == k
        sub = CtmWords([], list(cols[2][tr]), list(cols[1][tr]), list(cols[0][tr]),
                       list(cols[3][tr]))
        x = word_features(sub.confs, sub.seconds, sub.words, features)
        bias, w = fit_logistic(x, sub.correct, l2)
        cal = ConfidenceCalibration(tuple(features), list(w), bias, l2)
        out[te] = cal.apply(cols[0][te], cols[1][te], cols[2][te])
    return out


def calibrate_ctm_text(cal: ConfidenceCalibration, text: str) -> str:
    """CTM lines (``<utt> <ch> <start> <dur> <word> <conf>``) with the confidence replaced by
    the map's (2 decimals)."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip()]
    if not rows:
        return text
    bad = [r for r in rows if len(r) != 6]
    if bad:
        raise FormatError(f"not a CTM line with a confidence: {' '.join(bad[0])}")
    new = cal.apply([float(r[5]) for r in rows], [float(r[3]) for r in rows],
                    [r[4] for r in rows])
    return "".join(f"{' '.join(r[:5])} {c:.2f}\n" for r, c in zip(rows, new))


def calibrate_ctm_file(cal: ConfidenceCalibration, src: str, dst: str) -> int:
    """``src`` CTM to ``dst`` (atomically; may be the same file) with calibrated confidences;
    returns the number of words."""
    words = read_ctm(src)  # validates, naming the line
    with open(src, encoding="utf-8") as f:
        text = f.read()
    out = calibrate_ctm_text(cal, text)
    with atomic_open(dst, "w", encoding="utf-8") as f:
        f.write(out)
    return len(words)


def calibrate_words(cal: ConfidenceCalibration, words, symbols: Mapping[int, str],
                    frame_shift: float) -> None:
    """Sets the ``conf`` of each ``hybridasr.decode.ctm.CtmWord`` to the map's, from the
    features its CTM line will carry (the duration in seconds to 2 decimals, the word's
    spelling in ``symbols``)."""
    if not words:
        return
    new = cal.apply([w.conf for w in words],
                    [round(w.frames * frame_shift, 2) for w in words],
                    [symbols.get(w.word, str(w.word)) for w in words])
    for w, c in zip(words, new):
        w.conf = float(c)
