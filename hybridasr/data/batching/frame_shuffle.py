"""``frame_shuffle`` — frame-level shuffling for MLPs (Kaldi nnet1 ``nnet-train-frmshuff``).

Utterances in random order fill randomizer buffers of ``--randomizer-size`` frames; the frames
of a buffer are permuted and cut into minibatches of min(--max-frames, --max-seqs) frames
(each frame is a sequence of length 1, so both limits count frames). A buffer is the unit a
loader worker reads; its permutation comes from a seed drawn from (seed, epoch). The pieces of
a split utterance (``--max-seq-length-mode=split``) go into one buffer, read once.

Every sequence is a single frame: a recurrent model (``--model=blstm`` or ``lstm``) trains,
but sees no context; a warning says so at start.
"""
from __future__ import annotations

import math
from typing import List

import numpy as np

from hybridasr.data.batching.base import (BatchingStrategy, FrameBufferPlan, Item,
                                          by_utterance, register_strategy, shuffled_utterances)
from hybridasr.errors import ConfigError


@register_strategy("frame_shuffle")
class FrameShuffle(BatchingStrategy):
    sequence_context = False

    def __init__(self, arg, config, limits):
        super().__init__(arg, config, limits)
        sizes = [x for x in (limits.max_frames, limits.max_seqs) if x]
        if not sizes:
            raise ConfigError("--seq-ordering=frame_shuffle needs --max-frames (the "
                              "minibatch size in frames)")
        self.minibatch = min(sizes)
        self.buffer_frames = config.randomizer_size

    def make_batches(self, items: List[Item], rng: np.random.Generator):
        buffers, cur, frames = [], [], 0
        for group in by_utterance(shuffled_utterances(items, rng)):
            cur.extend(group)
            frames += sum(it.length for it in group)
            if frames >= self.buffer_frames:
                buffers.append(cur)
                cur, frames = [], 0
        if cur:
            buffers.append(cur)
        out = []
        for buf in buffers:
            n = sum(it.length for it in buf)
            seed = int(rng.integers(0, 2 ** 63 - 1))
            out.append(FrameBufferPlan(buf, seed, max(1, math.ceil(n / self.minibatch))))
        return out

    def plan(self, items: List[Item], rng: np.random.Generator, world_size: int = 1):
        from hybridasr.data.sharding import deal_buffers_to_ranks

        return deal_buffers_to_ranks(self.make_batches(items, rng), world_size)
