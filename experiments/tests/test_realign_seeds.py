"""experiments.realign_seeds' paired bootstrap (the interval of the WER difference between two
systems over the same utterances): none for equal errors, the exact difference where every
utterance moves the same way, an interval around 0 where they cancel."""
import pytest

from experiments import realign_seeds


def test_paired_bootstrap():
    same = [(3, 3, 10), (0, 0, 5), (2, 2, 8)]
    assert realign_seeds.paired_bootstrap(same, 500) == (0.0, 0.0)
    worse = [(1, 2, 10), (0, 1, 10), (2, 3, 10), (1, 2, 10)]  # one more error in every one
    lo, hi = realign_seeds.paired_bootstrap(worse, 500)
    assert lo == hi == pytest.approx(10.0)
    mixed = [(1, 0, 10), (0, 1, 10)] * 20
    lo, hi = realign_seeds.paired_bootstrap(mixed, 2000)
    assert lo < 0 < hi and hi - lo < 10
