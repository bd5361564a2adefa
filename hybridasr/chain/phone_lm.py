"""The phone language model of the chain denominator graph, as Kaldi's ``chain-est-phone-lm``
(``chain/language-model.{h,cc}``, ``LanguageModelEstimator``).

An un-smoothed n-gram over phones (default order 4) with "hard" backoff: there are no backoff
arcs; an LM state whose history is at least ``no_prune_ngram_order`` (default 3) phones long
may be removed (its counts merged into the state of its history without the oldest phone),
greedily, least log-likelihood loss first, until the number of states with counts is the
number of histories of length ``no_prune_ngram_order - 1`` plus ``num_extra_lm_states``
(default 1000); the removal runs in 4 stages, each re-queueing every candidate, as Kaldi's
``DoBackoff``. Transitions to a removed history go to the longest suffix of it that kept a
state. Phone 0 (end of sentence) becomes the final cost; the sentence start is history [0].

This is a line-by-line port meant to give the same states, arcs, costs (float32
``-log(count/total)``) and state numbering (LM states with counts, in creation order; arcs in
ilabel order) as Kaldi given the same sentences in the same order; it was not compared with
Kaldi's binary (none here). Ties in the backoff queue are broken as ``std::priority_queue``
does (larger state index first); likelihood changes are rounded to float as Kaldi's.
"""
from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.options import option

__all__ = ["PhoneLmOptions", "PhoneLmEstimator", "alignment_phone_sequences", "estimate_phone_lm"]

log = logging.getLogger(__name__)


@dataclass
class PhoneLmOptions:
    ngram_order: int = option(4, "n-gram order for the phone language model used for the "
                                 "'denominator model'", minimum=2)
    num_extra_lm_states: int = option(1000, "number of LM states desired on top of the number "
                                             "determined by --no-prune-ngram-order", minimum=0)
    no_prune_ngram_order: int = option(3, "n-gram order below which the language model is not "
                                          "pruned (the tree's context width makes the graph "
                                          "most compact)", minimum=1)


def _f32(x: float) -> float:
    return float(np.float32(x))


@dataclass
class _LmState:
    history: Tuple[int, ...]
    counts: Dict[int, int] = field(default_factory=dict)
    tot_count: int = 0
    tot_count_with_parents: int = 0
    backoff: int = -1
    fst_state: int = -1
    backoff_allowed: bool = False

    def add_count(self, phone: int, count: int) -> None:
        self.counts[phone] = self.counts.get(phone, 0) + count
        self.tot_count += count

    def add(self, other: "_LmState") -> None:
        for p, c in sorted(other.counts.items()):
            self.add_count(p, c)

    def clear(self) -> None:
        self.counts = {}
        self.tot_count = 0
        self.tot_count_with_parents = 0
        self.backoff_allowed = False

    def log_like(self) -> float:
        return sum(c * math.log(c / self.tot_count) for _, c in sorted(self.counts.items()))


def _log_like(counts: Dict[int, int], total: int) -> float:
    return sum(c * math.log(c / total) for _, c in sorted(counts.items()))


class PhoneLmEstimator:
    """``add_counts(sentence)`` for each phone sequence, then ``estimate()`` -> ``FstArrays``."""

    def __init__(self, opts: PhoneLmOptions = PhoneLmOptions()):
        if opts.ngram_order < 2:
            raise FormatError("--ngram-order must be >= 2")
        if opts.no_prune_ngram_order < 1 or opts.ngram_order < opts.no_prune_ngram_order:
            raise FormatError(f"--no-prune-ngram-order={opts.no_prune_ngram_order} must be in "
                              f"1..--ngram-order={opts.ngram_order}")
        self.opts = opts
        self.states: List[_LmState] = []
        self.index: Dict[Tuple[int, ...], int] = {}
        self.num_active = 0
        self.num_basic = 0
        self.num_sentences = 0
        self._queue: List[Tuple[float, int]] = []

    # ------------------------------------------------------------ counting
    def add_counts(self, sentence: Sequence[int], what: str = "sentence") -> None:
        hist: List[int] = [0]
        for p in sentence:
            p = int(p)
            if p <= 0:
                raise FormatError(f"{what}: phone {p} in a phone sequence (phones must be > 0)")
            self._increment(tuple(hist), p)
            hist.append(p)
            if len(hist) >= self.opts.ngram_order:
                del hist[0]
        self._increment(tuple(hist), 0)
        self.num_sentences += 1

    def _increment(self, hist: Tuple[int, ...], phone: int) -> None:
        st = self.states[self._find_or_create(hist)]
        if st.tot_count == 0:
            self.num_active += 1
        st.add_count(phone, 1)

    def _find_or_create(self, hist: Tuple[int, ...]) -> int:
        i = self.index.get(hist)
        if i is not None:
            return i
        i = len(self.states)
        self.states.append(_LmState(hist))
        self.index[hist] = i
        if len(hist) >= self.opts.no_prune_ngram_order:
            self.states[i].backoff = self._find_or_create(hist[1:])
        return i

    def _find_nonzero(self, hist: Tuple[int, ...]) -> int:
        while True:
            i = self.index.get(hist, -1)
            if i == -1 or self.states[i].tot_count == 0:
                if not hist:
                    raise FormatError("phone LM: no LM state for a history (no sentences?)")
                hist = hist[1:]
            else:
                return i

    # ------------------------------------------------------------ backoff
    def _set_parent_counts(self) -> None:
        for l, st in enumerate(self.states):
            c, j = st.tot_count, l
            while j != -1:
                self.states[j].tot_count_with_parents += c
                j = self.states[j].backoff

    def _count_basic(self) -> int:
        active = sum(1 for s in self.states if s.tot_count != 0)
        assert active == self.num_active
        return sum(1 for s in self.states if len(s.history) == self.opts.no_prune_ngram_order - 1)

    def _backoff_allowed(self, l: int) -> bool:
        st = self.states[l]
        if len(st.history) < self.opts.no_prune_ngram_order:
            return False
        if st.tot_count != st.tot_count_with_parents or st.tot_count == 0:
            return False
        if len(st.history) == self.opts.ngram_order - 1:
            return True
        for p in st.counts:
            if p != 0:
                nxt = self.index.get(st.history + (p,), -1)
                if nxt != -1 and self.states[nxt].tot_count_with_parents != 0:
                    return False
        return True

    def _like_change(self, l: int) -> float:
        st = self.states[l]
        b = self.states[st.backoff]
        if b.tot_count == 0:
            return _f32(-1.0e-15 * st.tot_count)
        merged = dict(b.counts)
        for p, c in st.counts.items():
            merged[p] = merged.get(p, 0) + c
        # float arithmetic on float-rounded log-likelihoods, as Kaldi's BaseFloat code
        change = _f32(_f32(_f32(_log_like(merged, b.tot_count + st.tot_count))
                           - _f32(st.log_like())) - _f32(b.log_like()))
        if change >= 0.1:
            raise AssertionError(f"phone LM: positive likelihood change {change} (a bug)")
        return min(change, 0.0)

    def _push(self, change: float, l: int) -> None:
        # a max-heap on (change, index), as std::priority_queue<pair<float,int>>
        heapq.heappush(self._queue, (-change, -l))

    def _initialize_queue(self) -> None:
        self._queue = []
        for l, st in enumerate(self.states):
            st.backoff_allowed = self._backoff_allowed(l)
            if st.backoff_allowed:
                self._push(self._like_change(l), l)

    def _back_off_state(self, l: int) -> None:
        st = self.states[l]
        b_idx = st.backoff
        b = self.states[b_idx]
        had_allowed = b.backoff_allowed
        if b.tot_count != 0:
            self.num_active -= 1
        b.add(st)
        st.clear()
        b.backoff_allowed = self._backoff_allowed(b_idx)
        if not had_allowed and b.backoff_allowed:
            self._push(self._like_change(b_idx), b_idx)

    def _do_backoff(self) -> None:
        initial = self.num_active
        target = self.num_basic + self.opts.num_extra_lm_states
        targets = [initial + ((target - initial) * (t + 1)) // 4 for t in range(4)]
        for this_target in targets:
            self._initialize_queue()
            while self.num_active > this_target and self._queue:
                neg_change, neg_l = heapq.heappop(self._queue)
                change, l = -neg_change, -neg_l
                recomputed = self._like_change(l)
                if not _approx_equal(change, recomputed):
                    self._push(recomputed, l)
                else:
                    self._back_off_state(l)
        log.info("In LM [hard] backoff, target num states was %d + --num-extra-lm-states=%d "
                 "= %d, pruned from %d to %d", self.num_basic, self.opts.num_extra_lm_states,
                 target, initial, self.num_active)

    # ------------------------------------------------------------ output
    def estimate(self) -> FstArrays:
        if not self.states:
            raise FormatError("phone LM: no phone sequences were given")
        self._set_parent_counts()
        self.num_basic = self._count_basic()
        self._do_backoff()
        n = 0
        for st in self.states:
            if st.tot_count != 0:
                st.fst_state = n
                n += 1
        assert n == self.num_active
        start = self.states[self._find_nonzero((0,))].fst_state
        final = np.full(n, np.inf, dtype=np.float32)
        arcs: List[List[tuple]] = [[] for _ in range(n)]
        tot_count, tot_logprob = 0, 0.0
        for st in self.states:
            if st.fst_state == -1:
                continue
            for p, c in sorted(st.counts.items()):  # std::map order: ilabel-sorted arcs
                logprob = math.log(c / st.tot_count)
                tot_count += c
                tot_logprob += _f32(logprob) * c
                if p == 0:
                    final[st.fst_state] = -logprob
                else:
                    dst = self.states[self._find_nonzero(st.history + (p,))].fst_state
                    arcs[st.fst_state].append((p, p, _f32(-logprob), dst))
        self.perplexity = math.exp(-(tot_logprob / tot_count))
        fst = FstArrays.from_lists(start, final, arcs) if any(arcs) else FstArrays(
            start, final, *(np.zeros(0, dtype=t) for t in
                            (np.int64, np.int64, np.int64, np.float32, np.int64)))
        log.info("Created phone language model with %d states and %d arcs; perplexity on "
                 "training data %.3f (%d phone instances)", n, fst.num_arcs,
                 self.perplexity, tot_count)
        return fst


def _approx_equal(a: float, b: float, delta: float = 0.0001) -> bool:
    """Kaldi's ``ApproxEqual(float, float)``."""
    if a == b:
        return True
    return abs(a - b) <= delta * max(abs(a), abs(b))


def alignment_phone_sequences(model: str, ali_rspecifier: str) -> Iterator[Tuple[str, List[int]]]:
    """(utterance, phone sequence) of each alignment, as ``ali-to-phones`` gives them (an
    alignment that does not split into phones of ``model`` is an error naming it)."""
    from hybridasr.align.phones import phone_segments
    from hybridasr.kaldi.io.intvec import read_int_vectors
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(model)
    for utt, ali in read_int_vectors(ali_rspecifier):
        segs = phone_segments(tm, ali, f"{ali_rspecifier}: utterance {utt}")
        yield utt, [p for p, _ in segs]


def estimate_phone_lm(sentences: Iterable[Sequence[int]],
                      opts: PhoneLmOptions = PhoneLmOptions()) -> FstArrays:
    """``chain-est-phone-lm`` on phone sequences: the phone LM as an acceptor (phones on both
    sides, costs ``-log p``, final cost for the end of sentence)."""
    est = PhoneLmEstimator(opts)
    for i, s in enumerate(sentences):
        est.add_counts(s, what=f"phone sequence {i}")
    return est.estimate()
