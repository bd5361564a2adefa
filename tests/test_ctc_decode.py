"""CTC decoding without a graph (hybridasr.ctc.decode): greedy and prefix beam search are exact
on hand-built posteriors; prefix beam search with a beam that prunes nothing gives every unit
sequence its CTC probability, the sum over all its alignments by brute-force enumeration (and
torch's ctc_loss)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from hybridasr.ctc.decode import (collapse, greedy_decode, greedy_decode_batch,
                                  prefix_beam_search)
from hybridasr.errors import FormatError


def _log_softmax(rng, t, v):
    x = rng.normal(size=(t, v)) * 2.0
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def _brute_force(lp):
    """{units: log P(units)} summing every alignment (V**T labellings)."""
    t, v = lp.shape
    probs = {}
    for path in itertools.product(range(v), repeat=t):
        key = tuple(collapse(path))
        probs[key] = probs.get(key, 0.0) + math.exp(sum(lp[i, s] for i, s in enumerate(path)))
    return {k: math.log(p) for k, p in probs.items()}


def test_collapse_and_greedy_on_hand_built_posteriors():
    assert collapse([0, 1, 1, 0, 1, 2, 2, 0, 0, 3]) == [1, 1, 2, 3]
    assert collapse([0, 0]) == [] and collapse([]) == []
    frames = [0, 2, 2, 0, 2, 1, 1, 1, 0, 3]
    lp = np.full((len(frames), 4), math.log(0.1 / 3))
    lp[np.arange(len(frames)), frames] = math.log(0.9)
    h = greedy_decode(lp)
    assert h.units == [2, 2, 1, 3]
    assert h.score == pytest.approx(len(frames) * math.log(0.9))
    assert greedy_decode(torch.tensor(lp)).units == [2, 2, 1, 3]  # torch in, same result
    assert greedy_decode(np.zeros((0, 4))).units == []
    batch = np.stack([lp, np.roll(lp, 1, axis=0)])
    hyps = greedy_decode_batch(torch.tensor(batch), lengths=[10, 4])
    assert hyps[0].units == [2, 2, 1, 3] and hyps[1].units == collapse([3, 0, 2, 2])
    with pytest.raises(FormatError, match=r"\[T, V\]"):
        greedy_decode(np.zeros(5))


def test_prefix_search_finds_the_best_labelling_that_greedy_misses():
    """Two frames, P(blank) = 0.6, P(a) = 0.4 each: the best path is blank blank (0.36), the
    best labelling "a" (0.16 + 0.24 + 0.24 = 0.64)."""
    lp = np.log(np.array([[0.6, 0.4], [0.6, 0.4]]))
    g = greedy_decode(lp)
    assert g.units == [] and g.score == pytest.approx(math.log(0.36))
    best, second = prefix_beam_search(lp, beam_size=4)[:2]
    assert best.units == [1] and best.score == pytest.approx(math.log(0.64))
    assert second.units == [] and second.score == pytest.approx(math.log(0.36))
    # "a a" needs a blank between its units: impossible in 2 frames, so not returned
    assert [h.units for h in prefix_beam_search(lp, beam_size=4)] == [[1], []]


@pytest.mark.parametrize("t,v,seed", [(4, 3, 0), (5, 3, 1), (5, 4, 2), (6, 3, 3)])
def test_prefix_beam_search_is_exact_against_brute_force(t, v, seed):
    lp = _log_softmax(np.random.default_rng(seed), t, v)
    exact = _brute_force(lp)
    hyps = prefix_beam_search(lp, beam_size=10 ** 6)
    got = {tuple(h.units): h.score for h in hyps}
    assert set(got) == set(exact)
    for k, s in exact.items():
        assert got[k] == pytest.approx(s, abs=1e-9), k
    assert math.fsum(math.exp(s) for s in got.values()) == pytest.approx(1.0, abs=1e-9)
    assert tuple(hyps[0].units) == max(exact, key=exact.get)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    # torch's CTC loss is the same number for the best labelling
    units = hyps[0].units
    if units:
        loss = torch.nn.functional.ctc_loss(
            torch.tensor(lp).unsqueeze(1), torch.tensor([units]), torch.tensor([t]),
            torch.tensor([len(units)]), blank=0, reduction="sum")
        assert -float(loss) == pytest.approx(exact[tuple(units)], abs=1e-6)
    # a small beam: the kept prefixes' scores are sums over fewer alignments, never more
    for beam in (1, 2, 3):
        small = prefix_beam_search(lp, beam_size=beam)
        assert 1 <= len(small) <= beam
        for h in small:
            assert h.score <= exact.get(tuple(h.units), float("-inf")) + 1e-9
    # cutoff_top_n: extensions only by each frame's best units; all of them = no cutoff
    assert [h.units for h in prefix_beam_search(lp, 8, cutoff_top_n=v - 1)] == \
        [h.units for h in prefix_beam_search(lp, 8)]
    top1 = prefix_beam_search(lp, 10 ** 6, cutoff_top_n=1)
    assert all(h.score <= exact[tuple(h.units)] + 1e-9 for h in top1 if h.units)


def test_prefix_beam_search_on_a_peaked_utterance():
    """A hand-built posteriorgram (0.9 on the intended frame label) over 30 units: the best
    prefix is the intended unit sequence, repeated units included, with nbest as asked."""
    frames = [0, 5, 5, 0, 5, 0, 7, 12, 12, 12, 0, 0, 29, 1, 0]
    v = 30
    lp = np.full((len(frames), v), math.log(0.1 / (v - 1)))
    lp[np.arange(len(frames)), frames] = math.log(0.9)
    hyps = prefix_beam_search(torch.tensor(lp, dtype=torch.float32), beam_size=5, nbest=3)
    assert len(hyps) == 3 and hyps[0].units == collapse(frames) == [5, 5, 7, 12, 29, 1]
    assert hyps[0].score > hyps[1].score
    assert hyps[0].score >= greedy_decode(lp).score - 1e-4
    with pytest.raises(ValueError, match="beam_size"):
        prefix_beam_search(lp, beam_size=0)
