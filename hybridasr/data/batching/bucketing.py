"""``bucketing`` — MXNet/TensorFlow style: fixed length ranges, batches inside a range.

Boundaries come from ``--bucket-boundaries=200,400,800`` (bucket i holds lengths in
(b[i-1], b[i]], the last one everything longer) or ``--bucket-width=W``. Items are shuffled
inside their bucket and cut into batches; ``--bucket-order=random`` then shuffles all batches
(each batch drawn from a randomly chosen bucket, in proportion to what is left in it),
``curriculum`` visits buckets short to long.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, BatchPlan, Item, cut_consecutive,
                                          shuffled)
from hybridasr.data.batching.registry import register_strategy
from hybridasr.errors import ConfigError
from hybridasr.options import option


def bucket_order_option():
    """``--bucket-order``, declared here once for every strategy that batches in buckets."""
    return option("random", "batches in random order, or buckets short to long",
                  choices=("random", "curriculum"))


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


def parse_boundaries(text: str) -> List[int]:
    if not text:
        return []
    try:
        b = [int(x) for x in text.replace(":", ",").split(",") if x]
    except ValueError:
        raise ConfigError(f"--bucket-boundaries={text!r}: expected increasing integers, "
                          f"e.g. 200,400,800") from None
    if any(x <= 0 for x in b) or b != sorted(set(b)):
        raise ConfigError(f"--bucket-boundaries={text!r}: expected increasing positive "
                          f"integers")
    return b


@dataclass
class BucketingOptions:
    bucket_boundaries: str = option("", "increasing lengths b1,b2,... (frames)")
    bucket_width: int = option(0, "buckets of this many frames (instead of boundaries)",
                               minimum=0)
    bucket_order: str = bucket_order_option()


@register_strategy("bucketing")
class Bucketing(BatchingStrategy):
    Options = BucketingOptions

    def setup(self):
        self.boundaries = parse_boundaries(self.options.bucket_boundaries)
        if not self.boundaries and not self.options.bucket_width:
            raise ConfigError("--seq-ordering=bucketing needs --bucket-boundaries=b1,b2,... "
                              "or --bucket-width=W")

    @classmethod
    def check_options(cls, options) -> None:
        parse_boundaries(options.bucket_boundaries)

    def bucket_index(self, length: int) -> int:
        if self.boundaries:
            return int(np.searchsorted(self.boundaries, length, side="left"))
        return (length - 1) // self.options.bucket_width

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        buckets = [self.bucket_index(it.length) for it in items]
        return batches_in_buckets(buckets, items, rng, self.limits, self.options.bucket_order)
