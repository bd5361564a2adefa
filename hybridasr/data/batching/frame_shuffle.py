"""``frame_shuffle`` — frame-level shuffling for MLPs (Kaldi nnet1 ``nnet-train-frmshuff``).

Utterances in random order fill randomizer buffers of ``--randomizer-size`` frames; the frames
of a buffer are permuted and cut into minibatches of min(--max-frames, --max-seqs) frames
(each frame is a sequence of length 1, so both limits count frames). A buffer
(``FrameBufferPlan``) is the unit a loader worker reads (``load``); its permutation comes from
a seed drawn from (seed, epoch). The pieces of a split utterance
(``--max-seq-length-mode=split``) go into one buffer, read once.

Every sequence is a single frame: a recurrent model (``--model=blstm`` or ``lstm``) trains,
but sees no context; a warning says so at start.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

import numpy as np

from hybridasr.data.batching.base import BatchingStrategy, by_utterance, shuffled_utterances
from hybridasr.data.batching.plans import Item
from hybridasr.data.batching.registry import register_strategy
from hybridasr.errors import ConfigError


@dataclass
class FrameBufferPlan:
    """The utterances of one randomizer buffer; the loader reads them all, permutes their
    frames with ``seed`` and cuts ``num_batches`` minibatches."""
    items: List[Item]
    seed: int
    num_batches: int

    @property
    def num_frames(self) -> int:
        return sum(it.length for it in self.items)

    num_real_frames = num_padded_frames = num_sequences = num_frames  # a frame per sequence

    def frame_batches(self) -> List[np.ndarray]:
        """Per minibatch, indices into the concatenation of the items' frames."""
        perm = np.random.default_rng(self.seed).permutation(self.num_frames)
        return np.array_split(perm, self.num_batches)

    def locate(self, index: np.ndarray):
        """(item indices, frame offsets inside the items) of concatenation indices."""
        ends = np.cumsum([it.length for it in self.items])
        which = np.searchsorted(ends, index, side="right")
        return which, index - (ends[which] - np.array([it.length for it in self.items])[which])

    def load(self, read_items, dim: int) -> "LoadedFrameBuffer":
        """In a loader worker: the buffer's frames (``read_items``: see ``plans``)."""
        return LoadedFrameBuffer(self, dim, read_items(self.items))


class LoadedFrameBuffer:
    """A buffer as loaded by a worker: its frames in two tensors (one transfer between
    processes) and the minibatch indices; ``batches()`` cuts the minibatches. (torch is
    imported here, where batches are made: planning needs only numpy.)"""

    def __init__(self, plan: FrameBufferPlan, dim: int, loaded):
        import torch

        self.feats = torch.from_numpy(np.concatenate([x for x, _ in loaded]) if loaded
                                      else np.zeros((0, dim), np.float32))
        self.targets = torch.from_numpy(np.concatenate([y for _, y in loaded])) \
            if loaded and loaded[0][1] is not None else None
        self.plan = plan

    def batches(self) -> list:
        import torch

        from hybridasr.data.batch import Batch

        plan = self.plan
        utts = [it.utt for it in plan.items]
        starts = np.array([it.start for it in plan.items], dtype=np.int64)
        out = []
        for index in plan.frame_batches():
            which, t = plan.locate(index)
            pos = (starts[which] + t).tolist()
            idx = torch.from_numpy(index)
            out.append(Batch(
                self.feats[idx][:, None, :],
                None if self.targets is None else self.targets[idx][:, None],
                torch.ones(len(index), dtype=torch.int64),
                [utts[i] for i in which.tolist()], [(p, p + 1) for p in pos]))
        return out


def deal_buffers_to_ranks(buffers: List[FrameBufferPlan],
                          world_size: int) -> List[List[FrameBufferPlan]]:
    """Buffers dealt round-robin; ranks short of minibatches cut some of their buffers into
    more (smaller) minibatches, so every rank has as many."""
    buffers = list(buffers)
    while 0 < len(buffers) < world_size:  # tiny data: halve the largest buffer
        i = max(range(len(buffers)), key=lambda k: len(buffers[k].items))
        b = buffers[i]
        if len(b.items) < 2:
            break
        h = len(b.items) // 2
        halves = [FrameBufferPlan(b.items[:h], b.seed, 1),
                  FrameBufferPlan(b.items[h:], b.seed + 1, 1)]
        buffers[i:i + 1] = halves
    shares = [buffers[r::world_size] for r in range(world_size)]
    counts = [sum(b.num_batches for b in s) for s in shares]
    target = max(counts, default=0)
    for share, count in zip(shares, counts):
        extra = target - count
        for b in sorted(share, key=lambda b: -b.num_frames):
            if not extra:
                break
            add = min(extra, b.num_frames - b.num_batches)
            b.num_batches += add
            extra -= add
        if extra:
            raise ConfigError(f"too few frames to give every one of {world_size} ranks "
                              f"{target} minibatches")
    return shares


@register_strategy("frame_shuffle")
class FrameShuffle(BatchingStrategy):
    per_frame = True
    splits_utterances = True  # into frames
    notes = {"max_frames": "the minibatch size (frames)",
             "randomizer_size": "frames per randomizer buffer, whose frames are shuffled"}

    def setup(self):
        sizes = [x for x in (self.limits.max_frames, self.limits.max_seqs) if x]
        if not sizes:
            raise ConfigError("--seq-ordering=frame_shuffle needs --max-frames (the "
                              "minibatch size in frames)")
        self.minibatch = min(sizes)
        self.buffer_frames = self.randomizer_size

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
        return deal_buffers_to_ranks(self.make_batches(items, rng), world_size)
