"""``optimal_buckets:Q`` — Khomenko et al.'s bucket boundaries by dynamic programming.

Over the histogram of distinct lengths l_1 < ... < l_L with cumulative counts C, choose Q
bucket ends minimising sum over buckets of (sequences in it) x (its largest length):
dp[q][i] = min_{j<i} dp[q-1][j] + (C[i] - C[j]) * l_i, with back-pointers. O(Q L^2).
Batches are then cut inside buckets; ``--bucket-order`` picks random or short-to-long
(the paper's curriculum) visiting order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from hybridasr.data.batching.base import BatchingStrategy, BatchPlan, Item, parse_int_arg
from hybridasr.data.batching.bucketing import batches_in_buckets, bucket_order_option
from hybridasr.data.batching.registry import register_strategy


def optimal_bucket_ends(lengths: Sequence[int], num_buckets: int) -> List[int]:
    """The largest length of each bucket (ascending), for at most ``num_buckets`` buckets."""
    values, counts = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
    L = len(values)
    if L == 0:
        return []
    Q = min(num_buckets, L)
    cum = np.concatenate([[0], np.cumsum(counts)]).astype(np.float64)  # cum[i] = count <= values[i-1]
    lens = values.astype(np.float64)
    # dp[i] for prefix of i distinct lengths (1..L) in q buckets; the last bucket ends at i.
    dp = cum[1:] * lens  # q = 1
    back = np.zeros((Q, L), dtype=np.int64)
    for q in range(1, Q):
        new = np.full(L, np.inf)
        for i in range(q, L):
            # previous bucket ends at j (index into values), j in [q-1, i-1]
            j = np.arange(q - 1, i)
            cost = dp[j] + (cum[i + 1] - cum[j + 1]) * lens[i]
            k = int(np.argmin(cost))
            new[i], back[q, i] = cost[k], j[k]
        dp = new
    ends, i = [], L - 1
    for q in range(Q - 1, -1, -1):
        ends.append(int(values[i]))
        i = back[q, i]
    return ends[::-1]


@dataclass
class OptimalBucketsOptions:
    bucket_order: str = bucket_order_option()


@register_strategy("optimal_buckets")
class OptimalBuckets(BatchingStrategy):
    takes_arg = True
    usage = "optimal_buckets:Q"
    Options = OptimalBucketsOptions

    def setup(self):
        self.num_buckets = parse_int_arg("optimal_buckets", self.arg, default=4, what="Q")

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        ends = optimal_bucket_ends([it.length for it in items], self.num_buckets)
        buckets = np.searchsorted(ends, [it.length for it in items], side="left").tolist()
        return batches_in_buckets(buckets, items, rng, self.limits,
                                  self.options.bucket_order)
