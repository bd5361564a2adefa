"""Truncated BPTT over a fixed set of streams (Kaldi nnet1 multistream; Variani et al.).

``--seq-ordering=tbptt:S:W``: S streams per batch, windows of W frames. Utterances, shuffled, go
one after another into the stream that has the least work so far (what nnet1 does when a stream
runs dry, and it keeps streams balanced); batch b holds window b of every stream. ``reset[s]``
is True where stream s starts an utterance (the trainer zeroes that stream's state), so state
is carried only inside an utterance. With R ranks, R x S streams are filled together and rank r
takes streams r*S .. r*S+S-1; every rank gets as many batches as the busiest stream has
windows, idle streams being ``None`` (length 0, reset). The pieces of a split utterance
(``--max-seq-length-mode=split``) follow each other in one stream, state carried across.

It needs a model that carries its recurrent state (``--model=lstm``); any other fails at start.
"""
from __future__ import annotations

import heapq
from typing import List, Optional

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, BatchPlan, Item, by_utterance,
                                          parse_int_pair_arg, shuffled_utterances)
from hybridasr.data.batching.registry import register_strategy
from hybridasr.errors import ConfigError


@register_strategy("tbptt")
class TruncatedBptt(BatchingStrategy):
    takes_arg = True
    usage = "tbptt:S:W (S streams, W-frame windows)"
    needs_stateful_model = True
    splits_utterances = True  # into windows

    def setup(self):
        self.streams, self.window = parse_int_pair_arg("tbptt", self.arg, "S:W")
        what, limits = self.describe(), self.limits
        if limits.max_seqs and self.streams > limits.max_seqs:
            raise ConfigError(f"{what}: {self.streams} streams exceed "
                              f"--max-seqs={limits.max_seqs}")
        if limits.max_frames and self.streams * self.window > limits.max_frames:
            raise ConfigError(f"{what}: {self.streams} x {self.window} frames "
                              f"exceed --max-frames={limits.max_frames}")

    @classmethod
    def upgrade_saved(cls, values):
        value = values.pop("tbptt", None)  # saved when --tbptt=S:W chose it (empty: not)
        if value:
            values["seq_ordering"] = f"tbptt:{value}"

    def cached_utterances(self) -> int:
        return 2 * self.streams  # the windows of an utterance come in a row

    def windows(self, item: Item) -> List[Item]:
        return [Item(item.utt, s, min(s + self.window, item.end))
                for s in range(item.start, item.end, self.window)]

    def fill_streams(self, items: List[Item], num_streams: int) -> List[List[Item]]:
        streams: List[List[Item]] = [[] for _ in range(num_streams)]
        heap = [(0, s) for s in range(num_streams)]
        for group in by_utterance(items):
            load, s = heapq.heappop(heap)
            win = [w for it in group for w in self.windows(it)]
            streams[s].extend(win)
            heapq.heappush(heap, (load + len(win), s))
        return streams

    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        return self.plan(items, rng, 1)[0]

    def plan(self, items: List[Item], rng: np.random.Generator,
             world_size: int = 1) -> List[List[BatchPlan]]:
        streams = self.fill_streams(shuffled_utterances(items, rng), self.streams * world_size)
        num_batches = max((len(s) for s in streams), default=0)
        out = []
        for r in range(world_size):
            mine = streams[r * self.streams:(r + 1) * self.streams]
            batches = []
            for b in range(num_batches):
                win: List[Optional[Item]] = [s[b] if b < len(s) else None for s in mine]
                reset = [w is None or b == 0 or s[b - 1].utt != w.utt or s[b - 1].end != w.start
                         for w, s in zip(win, mine)]
                batches.append(BatchPlan(win, reset=reset, carry_state=True))
            out.append(batches)
        return out
