"""``random``, ``sorted`` and ``sorted_reverse`` (RETURNN's names)."""
from __future__ import annotations

from typing import List

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, BatchPlan, Item, cut_consecutive,
                                          shuffled, sort_by_length)
from hybridasr.data.batching.registry import register_strategy


@register_strategy("random")
class RandomOrder(BatchingStrategy):
    """Shuffle all items, cut consecutive batches: most variety, most padding."""

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        return cut_consecutive(shuffled(items, rng), self.limits)


@register_strategy("sorted")
class SortedOrder(BatchingStrategy):
    """Short to long: almost no padding, the same batches every epoch (ties aside)."""

    reverse = False

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        return cut_consecutive(sort_by_length(items, rng, self.reverse), self.limits)


@register_strategy("sorted_reverse")
class SortedReverseOrder(SortedOrder):
    """Long to short (the largest batch first: an out-of-memory shows up at once)."""

    reverse = True
