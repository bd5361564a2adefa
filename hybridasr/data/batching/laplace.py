"""``laplace:N`` — alternated sorting (Doetsch, Golik, Ney).

Shuffle; cut the sequence into N bins of equal size; sort bin 1, 3, ... ascending and bin
2, 4, ... descending; cut consecutive batches. Neighbouring bins meet at similar lengths, so
padding stays small while batch composition changes every epoch. ``laplace:.K`` (RETURNN's
spelling) asks for bins of about K sequences instead.
"""
from __future__ import annotations

from typing import List

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, BatchPlan, Item, cut_consecutive,
                                          parse_int_arg, shuffled, sort_by_length)
from hybridasr.data.batching.registry import register_strategy


@register_strategy("laplace")
class AlternatedSorting(BatchingStrategy):
    takes_arg = True
    usage = "laplace:N | laplace:.K"

    def setup(self):
        arg = self.arg
        if arg and arg.startswith("."):
            self.seqs_per_bin, self.bins = parse_int_arg("laplace", arg[1:], what=".K"), None
        else:
            self.seqs_per_bin, self.bins = None, parse_int_arg("laplace", arg, default=2)

    def num_bins(self, num_items: int) -> int:
        if self.bins is not None:
            return max(1, min(self.bins, num_items))
        return max(2, num_items // self.seqs_per_bin)

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        order = shuffled(items, rng)
        n = self.num_bins(len(order))
        out: List[Item] = []
        for b, part in enumerate(np.array_split(np.arange(len(order)), n)):
            out.extend(sort_by_length([order[i] for i in part], rng, reverse=b % 2 == 1))
        return cut_consecutive(out, self.limits)
