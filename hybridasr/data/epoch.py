"""One epoch's plan: lengths -> items (length limit, chunking) -> strategy -> this rank's share.

Everything here is a function of the lengths, the config, the epoch and (rank, world size):
resuming at epoch k gives the same batches, and every rank derives the same global plan.
"""
from __future__ import annotations

import logging
import math
from typing import Dict, List, Mapping

import numpy as np

from hybridasr.data.batching import Item, make_strategy
from hybridasr.data.config import DataConfig
from hybridasr.errors import ConfigError

log = logging.getLogger(__name__)


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(epoch)])


def split_evenly(utt: str, start: int, end: int, max_len: int) -> List[Item]:
    """[start, end) cut into ceil(n / max_len) pieces of near-equal length."""
    n = end - start
    k = max(1, math.ceil(n / max_len))
    bounds = [start + (n * i) // k for i in range(k + 1)]
    return [Item(utt, a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def chunk(item: Item, size: int, step: int) -> List[Item]:
    """RETURNN chunking: windows of ``size`` every ``step`` frames until the end is covered
    (the last one may be shorter)."""
    out, s = [], item.start
    while True:
        out.append(Item(item.utt, s, min(s + size, item.end)))
        if s + size >= item.end:
            return out
        s += step


def make_items(lengths: Mapping[str, int], config: DataConfig) -> List[Item]:
    """Items in key order: long utterances filtered or split, then chunked if asked."""
    items: List[Item] = []
    dropped = 0
    for utt in sorted(lengths):
        n = int(lengths[utt])
        if n <= 0:
            dropped += 1
            continue
        if config.max_seq_length and n > config.max_seq_length:
            if config.max_seq_length_mode == "filter":
                dropped += 1
                continue
            items.extend(split_evenly(utt, 0, n, config.max_seq_length))
        else:
            items.append(Item(utt, 0, n))
    if dropped:
        log.info("dropped %d of %d utterances (empty or longer than --max-seq-length=%d)",
                 dropped, len(lengths), config.max_seq_length)
    cs = config.chunk_size_step()
    if cs:
        items = [c for it in items for c in chunk(it, *cs)]
    if config.max_frames and config.seq_ordering != "frame_shuffle" and not config.tbptt:
        too_long = [it for it in items if it.length > config.max_frames]
        if too_long:
            raise ConfigError(f"utterance {too_long[0].utt} has {too_long[0].length} frames, "
                              f"more than --max-frames={config.max_frames} "
                              f"({len(too_long)} such); set --max-seq-length (filter or split) "
                              f"or --chunking")
    return items


def plan_epoch(lengths: Mapping[str, int], config: DataConfig, epoch: int, rank: int = 0,
               world_size: int = 1) -> list:
    """This rank's plans (``BatchPlan`` or, for frame shuffling, ``FrameBufferPlan``)."""
    from hybridasr.data.sharding import _check_world

    _check_world(rank, world_size)
    items = make_items(lengths, config)
    if not items:
        raise ConfigError("no utterances left to batch")
    shares = make_strategy(config).plan(items, epoch_rng(config.seed, epoch), world_size)
    return shares[rank]


def plan_stats(plans: list) -> Dict[str, float]:
    """Per-epoch figures: padding ratio = padded frames / real frames, batch count, ..."""
    num_batches = sum(p.num_batches for p in plans)
    real = sum(p.num_real_frames for p in plans)
    padded = sum(p.num_padded_frames for p in plans)
    seqs = sum(p.num_frames if hasattr(p, "seed") else
               sum(1 for it in p.items if it is not None) for p in plans)
    return {
        "num_batches": num_batches,
        "num_sequences": seqs,
        "real_frames": real,
        "padded_frames": padded,
        "padding_ratio": padded / real if real else float("nan"),
        "mean_seqs_per_batch": seqs / num_batches if num_batches else 0.0,
    }
