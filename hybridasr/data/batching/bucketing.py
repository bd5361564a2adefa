"""``bucketing`` — MXNet/TensorFlow style: fixed length ranges, batches inside a range.

Boundaries come from ``--bucket-boundaries=200,400,800`` (bucket i holds lengths in
(b[i-1], b[i]], the last one everything longer) or ``--bucket-width=W``. Items are shuffled
inside their bucket and cut into batches; ``--bucket-order=random`` then shuffles all batches
(each batch drawn from a randomly chosen bucket, in proportion to what is left in it),
``curriculum`` visits buckets short to long.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, BatchPlan, Item, cut_consecutive,
                                          register_strategy, shuffled)
from hybridasr.errors import ConfigError


def batches_in_buckets(bucket_of: List[int], items: List[Item], rng: np.random.Generator,
                       limits, order: str) -> List[BatchPlan]:
    """Batches cut inside each bucket, then ordered (``random`` or ``curriculum``)."""
    groups: Dict[int, List[Item]] = {}
    for b, it in zip(bucket_of, items):
        groups.setdefault(b, []).append(it)
    per_bucket = [cut_consecutive(shuffled(groups[b], rng), limits) for b in sorted(groups)]
    if order == "curriculum":
        return [batch for batches in per_bucket for batch in batches]
    flat = [batch for batches in per_bucket for batch in batches]
    return [flat[i] for i in rng.permutation(len(flat))]


@register_strategy("bucketing")
class Bucketing(BatchingStrategy):

    def __init__(self, arg, config, limits):
        super().__init__(arg, config, limits)
        self.boundaries = config.boundaries()
        if not self.boundaries and not config.bucket_width:
            raise ConfigError("--seq-ordering=bucketing needs --bucket-boundaries=b1,b2,... "
                              "or --bucket-width=W")

    def bucket_index(self, length: int) -> int:
        if self.boundaries:
            return int(np.searchsorted(self.boundaries, length, side="left"))
        return (length - 1) // self.config.bucket_width

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        buckets = [self.bucket_index(it.length) for it in items]
        return batches_in_buckets(buckets, items, rng, self.limits, self.config.bucket_order)
