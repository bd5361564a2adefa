"""Utterances cut into several items (``--chunking``, ``--max-seq-length-mode=split``) are read
once per epoch.

Batching the chunks of an utterance across the whole epoch would read (and decompress) the
whole utterance once per chunk. Instead the utterances that give several items are shuffled,
dealt to the ranks (balancing their frames) and filled into buffers of ``--randomizer-size``
item frames. The strategy batches each buffer's items, so the chunks of different utterances
still mix inside a batch; a buffer's batches form one *plan unit* (``BatchPlan.joins_previous``)
that one loader worker loads together, reading each of its utterances once and cutting every
item from it. Memory stays bounded by the buffer (and ``--prefetch``).

Utterances that stay whole are batched by the strategy over the whole epoch as usual; each
rank's buffer units are spread among its batches at random places. Ranks short of batches
halve their largest ones (inside their units), so every rank gets as many. Everything is a
function of the random generator (seed, epoch), not of the number of loader workers.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Sequence

import numpy as np

from hybridasr.data.batching.plans import BatchPlan, Item, by_utterance
from hybridasr.data.batching.sharding import halve_units

Unit = List[BatchPlan]


def has_cut_utterances(items: Sequence[Item]) -> bool:
    """Whether some utterance gives more than one item (its items are consecutive)."""
    return any(a.utt == b.utt for a, b in zip(items, items[1:]))


def interleave(units: List[Unit], groups: List[Unit], rng: np.random.Generator) -> List[Unit]:
    """``groups`` placed at random positions among ``units``; both keep their order."""
    if not groups or not units:
        return list(units) + list(groups)
    n = len(units) + len(groups)
    slots = set(rng.choice(n, size=len(groups), replace=False).tolist())
    a, b = iter(units), iter(groups)
    return [next(b) if k in slots else next(a) for k in range(n)]


def fill_buffers(utts: List[List[Item]], buffer_frames: int) -> List[List[Item]]:
    """Consecutive utterances' items, a new buffer once one holds ``buffer_frames`` frames."""
    out: List[List[Item]] = []
    cur: List[Item] = []
    frames = 0
    for group in utts:
        cur.extend(group)
        frames += sum(it.length for it in group)
        if frames >= buffer_frames:
            out.append(cur)
            cur, frames = [], 0
    if cur:
        out.append(cur)
    return out


def plan_with_groups(strategy, items: List[Item], rng: np.random.Generator, world_size: int,
                     buffer_frames: int) -> List[List[BatchPlan]]:
    """Per-rank plans, as ``BatchingStrategy.plan``, with cut utterances grouped."""
    whole, cut = [], []
    for group in by_utterance(items):
        (cut if len(group) > 1 else whole).append(group)
    singles = [[b] for b in strategy.make_batches([g[0] for g in whole], rng)] if whole else []
    # cut utterances, shuffled, each to the rank with the fewest frames so far
    per_rank: List[List[List[Item]]] = [[] for _ in range(world_size)]
    load = [0] * world_size
    for i in rng.permutation(len(cut)).tolist():
        r = min(range(world_size), key=lambda k: (load[k], k))
        per_rank[r].append(cut[i])
        load[r] += sum(it.length for it in cut[i])
    shares = []
    for r in range(world_size):
        groups = [strategy.make_batches(buf, rng)
                  for buf in fill_buffers(per_rank[r], buffer_frames)]
        shares.append(interleave(singles[r::world_size], groups, rng))
    counts = [sum(len(u) for u in s) for s in shares]
    target = max(counts)
    shares = [halve_units(s, target - c, world_size) for s, c in zip(shares, counts)]
    return [[replace(b, joins_previous=j > 0) for unit in s for j, b in enumerate(unit)]
            for s in shares]
