"""CTC decoding without a graph: greedy (best path) and prefix beam search over units.

Inputs are per-frame log-probabilities ``[T, V]`` (numpy or torch; a log-softmax of the
network's outputs), blank = ``hybridasr.ctc.BLANK`` (0). Outputs are unit-id sequences (no
blanks) with their log scores; ``hybridasr.ctc.units.Units.decode`` turns them into words.

- ``greedy_decode``: the best frame labelling (argmax per frame), repeats merged, blanks
  removed (Graves et al. 2006's best path decoding); its score is that path's log-probability.
- ``prefix_beam_search``: Graves 2006's prefix search as Hannun et al. 2014 write it: each
  prefix keeps two log-probabilities, of the frames so far ending in a blank and ending in its
  last unit; a prefix is extended by a unit ``c`` from both, except that repeating the last
  unit is a new unit only after a blank (otherwise the frames merge). After each frame the
  ``beam_size`` most probable prefixes are kept. Each returned score is log P(units | frames)
  summed over all alignments of the prefix that survived the pruning; when nothing was
  pruned (a beam at least as large as the number of prefixes), the sum over all of them:
  exactly the CTC probability (``tests/test_ctc_decode.py`` checks this against brute force).
  ``cutoff_top_n`` extends only with the frame's n most probable units (0: all).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.ctc import BLANK
from hybridasr.errors import FormatError

__all__ = ["Hypothesis", "greedy_decode", "greedy_decode_batch", "prefix_beam_search",
           "collapse"]

NEG_INF = float("-inf")


@dataclass
class Hypothesis:
    units: List[int]  # unit ids, no blanks
    score: float  # log-probability (greedy: of the best path; prefix search: of the units)


def _as_array(log_probs, what: str = "log-probabilities") -> np.ndarray:
    if hasattr(log_probs, "detach"):  # a torch tensor
        log_probs = log_probs.detach().float().cpu().numpy()
    a = np.asarray(log_probs, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] < 1:
        raise FormatError(f"CTC decoding: {what} must be [T, V], got shape {a.shape}")
    if np.isnan(a).any():
        raise FormatError(f"CTC decoding: {what} contain NaN")
    return a


def collapse(labels: Sequence[int], blank: int = BLANK) -> List[int]:
    """A frame labelling as units: repeats merged, then blanks removed."""
    out: List[int] = []
    prev = None
    for x in labels:
        x = int(x)
        if x != prev and x != blank:
            out.append(x)
        prev = x
    return out


def greedy_decode(log_probs, blank: int = BLANK) -> Hypothesis:
    """Best path decoding of one utterance [T, V]."""
    a = _as_array(log_probs)
    if a.shape[0] == 0:
        return Hypothesis([], 0.0)
    best = a.argmax(axis=1)
    return Hypothesis(collapse(best.tolist(), blank), float(a[np.arange(len(best)), best].sum()))


def greedy_decode_batch(log_probs, lengths: Optional[Sequence[int]] = None,
                        blank: int = BLANK) -> List[Hypothesis]:
    """``greedy_decode`` of each sequence of a padded batch [B, T, V] (first ``lengths[b]``
    frames; default all)."""
    if hasattr(log_probs, "detach"):
        log_probs = log_probs.detach().float().cpu().numpy()
    a = np.asarray(log_probs)
    if a.ndim != 3:
        raise FormatError(f"CTC decoding: a batch must be [B, T, V], got shape {a.shape}")
    lengths = [a.shape[1]] * a.shape[0] if lengths is None else [int(n) for n in lengths]
    return [greedy_decode(a[b, :n], blank) for b, n in enumerate(lengths)]


def _logaddexp(x: float, y: float) -> float:
    if x == NEG_INF:
        return y
    if y == NEG_INF:
        return x
    return max(x, y) + float(np.log1p(np.exp(-abs(x - y))))


def prefix_beam_search(log_probs, beam_size: int = 8, blank: int = BLANK,
                       cutoff_top_n: int = 0, nbest: Optional[int] = None
                       ) -> List[Hypothesis]:
    """Prefix beam search of one utterance [T, V]: the best prefixes, most probable first
    (``nbest`` of them, default ``beam_size``)."""
    if beam_size < 1:
        raise ValueError("prefix_beam_search: beam_size must be >= 1")
    a = _as_array(log_probs)
    num_frames, num_units = a.shape
    if not 0 <= blank < num_units:
        raise ValueError(f"prefix_beam_search: blank {blank} outside the {num_units} units")
    # prefix -> [log P(frames so far, ending in blank), log P(..., ending in its last unit)]
    beams: Dict[Tuple[int, ...], List[float]] = {(): [0.0, NEG_INF]}
    units = np.array([u for u in range(num_units) if u != blank], dtype=np.int64)
    for t in range(num_frames):
        frame = a[t]
        cands = units
        if 0 < cutoff_top_n < len(units):
            cands = units[np.argsort(-frame[units], kind="stable")[:cutoff_top_n]]
        lp_cands = frame[cands].tolist()
        cands_list = cands.tolist()
        lp_blank = float(frame[blank])
        nxt: Dict[Tuple[int, ...], List[float]] = {}

        def entry(prefix):
            e = nxt.get(prefix)
            if e is None:
                e = nxt[prefix] = [NEG_INF, NEG_INF]
            return e

        for prefix, (pb, pnb) in beams.items():
            total = _logaddexp(pb, pnb)
            e = entry(prefix)
            e[0] = _logaddexp(e[0], total + lp_blank)  # a blank: same prefix, ends in blank
            last = prefix[-1] if prefix else None
            if last is not None:  # the last unit again, merged: same prefix
                e[1] = _logaddexp(e[1], pnb + float(frame[last]))
            for c, lp in zip(cands_list, lp_cands):
                new = entry(prefix + (c,))
                # the same unit twice needs a blank between (pb); another unit follows either
                new[1] = _logaddexp(new[1], (pb if c == last else total) + lp)
        scored = [(_logaddexp(pb, pnb), p) for p, (pb, pnb) in nxt.items()]
        keep = sorted((x for x in scored if x[0] > NEG_INF), key=lambda x: -x[0])[:beam_size]
        beams = {p: nxt[p] for _, p in keep}  # impossible prefixes (-inf) are dropped
    hyps = [Hypothesis(list(p), _logaddexp(pb, pnb)) for p, (pb, pnb) in beams.items()]
    hyps.sort(key=lambda h: -h.score)
    return hyps[:nbest or beam_size]


def decode_words_table(units, log_probs_table, write, beam_size: int = 0) -> Tuple[int, int]:
    """Words of each utterance of ``log_probs_table`` ((key, [T, V] log-posteriors) pairs,
    e.g. ``forward.py`` without priors, at the input frame rate or the network's): greedy
    (``beam_size`` 0) or prefix beam search, the units back to words with the ``Units``
    ``units``; ``write(key, words)``. Returns (utterances, words)."""
    num_utts = num_words = 0
    for key, lp in log_probs_table:
        if beam_size > 0:
            hyps = prefix_beam_search(lp, beam_size, nbest=1) if len(lp) else []
            ids = hyps[0].units if hyps else []
        else:
            ids = greedy_decode(lp).units
        words = units.decode(ids)
        write(key, words)
        num_utts += 1
        num_words += len(words)
    return num_utts, num_words
