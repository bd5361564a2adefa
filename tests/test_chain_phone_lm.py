"""chain-est-phone-lm: the phone LM from kaldi_digits' real alignments."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from chain_helpers import digits_phone_seqs
from hybridasr.chain.den_graph import write_fst
from hybridasr.chain.phone_lm import PhoneLmEstimator, PhoneLmOptions, estimate_phone_lm
from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays


def _check_stochastic(lm: FstArrays) -> None:
    tot = np.exp(-lm.final.astype(np.float64)) + np.bincount(
        lm.src, np.exp(-lm.weight.astype(np.float64)), minlength=lm.num_states)
    assert np.allclose(tot, 1.0, atol=1e-6), tot


def _log_prob(lm: FstArrays, seq) -> float:
    s, lp = lm.start, 0.0
    for p in seq:
        k = np.flatnonzero((lm.src == s) & (lm.ilabel == p))
        assert len(k) == 1, f"phone {p} not allowed (or twice) from LM state {s}"
        lp -= float(lm.weight[k[0]])
        s = int(lm.dst[k[0]])
    assert np.isfinite(lm.final[s])
    return lp - float(lm.final[s])


def test_phone_lm_of_real_alignments_is_the_unpruned_4gram(kaldi_digits):
    seqs = digits_phone_seqs(kaldi_digits)
    assert len(seqs) == 120
    lm = estimate_phone_lm(seqs)  # defaults: order 4, no pruning below 3, 1000 extra states
    _check_stochastic(lm)
    assert np.all(lm.ilabel == lm.olabel) and np.all(lm.ilabel > 0)
    # with fewer states than the budget nothing is pruned: each sentence's log-probability
    # is the sum of log relative frequencies of its 4-grams (history padded with 0 = BOS)
    counts, hist_counts = Counter(), Counter()
    for s in seqs:
        h = (0,)
        for p in list(s) + [0]:
            counts[h + (p,)] += 1
            hist_counts[h] += 1
            h = (h + (p,))[-3:]
    for s in seqs[:40]:
        want, h = 0.0, (0,)
        for p in list(s) + [0]:
            want += math.log(counts[h + (p,)] / hist_counts[h])
            h = (h + (p,))[-3:]
        assert _log_prob(lm, s) == pytest.approx(want, abs=1e-4)


def test_pruned_phone_lm_keeps_basic_states_and_stays_stochastic(kaldi_digits):
    seqs = digits_phone_seqs(kaldi_digits)
    full = estimate_phone_lm(seqs)
    est = PhoneLmEstimator(PhoneLmOptions(num_extra_lm_states=3))
    for s in seqs:
        est.add_counts(s)
    lm = est.estimate()
    _check_stochastic(lm)
    assert lm.num_states < full.num_states
    assert est.num_active == lm.num_states
    # pruning stops at basic (history length 2) + 3 states, unless nothing is left to prune
    assert lm.num_states >= est.num_basic
    assert lm.num_states <= est.num_basic + 3 or not est._queue
    for s in seqs:  # every training sentence still has a path
        assert np.isfinite(_log_prob(lm, s))


def test_phone_lm_written_and_read_back_by_kaldifst(kaldi_digits, tmp_path):
    import kaldifst

    lm = estimate_phone_lm(digits_phone_seqs(kaldi_digits))
    write_fst(lm, str(tmp_path / "phone_lm.fst"))
    back = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(tmp_path / "phone_lm.fst")))
    assert back.start == lm.start and back.num_states == lm.num_states
    assert np.array_equal(back.ilabel, lm.ilabel) and np.array_equal(back.dst, lm.dst)
    assert np.array_equal(back.weight, lm.weight) and np.array_equal(back.final, lm.final)


def test_phone_lm_rejects_phone_zero_and_bad_orders():
    with pytest.raises(FormatError, match="phone 0"):
        estimate_phone_lm([[3, 0, 4]])
    with pytest.raises(FormatError, match="no-prune-ngram-order"):
        PhoneLmEstimator(PhoneLmOptions(ngram_order=2, no_prune_ngram_order=3))
