"""One epoch's plan: lengths -> items (length limit, chunking) -> strategy -> this rank's share.

The strategy is the config's (``DataConfig.strategy``, built once with it), and so is the
chunking (``DataConfig.chunks``). Everything here is a function of the lengths, the config,
the epoch and (rank, world size):
resuming at epoch k gives the same batches, and every rank derives the same global plan.
No utterance is refused for its length unless ``--max-seq-length`` says so (filter: left out
and counted in the log; split: pieces); one longer than ``--max-frames`` gets a batch of its
own. Utterances cut into several items (chunks, pieces) are batched in groups that read each
of them once (``hybridasr.data.batching.groups``).
"""
from __future__ import annotations

import logging
import math
from typing import Dict, List, Mapping

import numpy as np

from hybridasr.data.batching import Item
from hybridasr.data.batching.sharding import check_world
from hybridasr.data.config import DataConfig
from hybridasr.errors import ConfigError
from hybridasr.utils.gc_pause import gc_paused

log = logging.getLogger(__name__)


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(epoch)])


def split_evenly(utt: str, start: int, end: int, max_len: int) -> List[Item]:
    """[start, end) cut into ceil(n / max_len) pieces of near-equal length."""
    n = end - start
    k = max(1, math.ceil(n / max_len))
    bounds = [start + (n * i) // k for i in range(k + 1)]
    return [Item(utt, a, b) for a, b in zip(bounds[:-1], bounds[1:])]


_logged: set = set()


def _log_once(level: int, msg: str, *args) -> None:
    """Logged once per process (plans are made every epoch, for every rank)."""
    text = msg % args
    if text not in _logged:
        _logged.add(text)
        log.log(level, "%s", text)


def make_items(lengths: Mapping[str, int], config: DataConfig) -> List[Item]:
    """Items in key order (the items of an utterance together, in order): utterances longer
    than an explicit ``--max-seq-length`` filtered out (counted in the log) or split, then
    chunked if asked. Nothing is refused for its length otherwise: an item longer than
    ``--max-frames`` gets a batch of its own."""
    items: List[Item] = []
    empty, filtered, split, longest = 0, 0, 0, 0
    limit = config.max_seq_length
    for utt in sorted(lengths):
        n = int(lengths[utt])
        if n <= 0:
            empty += 1
            continue
        if limit and n > limit:
            longest = max(longest, n)
            if config.max_seq_length_mode == "filter":
                filtered += 1
                continue
            split += 1
            items.extend(split_evenly(utt, 0, n, limit))
        else:
            items.append(Item(utt, 0, n))
    if empty:
        _log_once(logging.WARNING, "%d of %d utterances have no frames: left out", empty,
                  len(lengths))
    if filtered:
        _log_once(logging.WARNING, "%d of %d utterances are longer than --max-seq-length=%d "
                  "frames (the longest %d) and are left out (--max-seq-length-mode=filter); "
                  "--max-seq-length-mode=split trains on them in pieces, --max-seq-length=0 "
                  "whole", filtered, len(lengths), limit, longest)
    if split:
        _log_once(logging.INFO, "%d of %d utterances are longer than --max-seq-length=%d "
                  "frames (the longest %d): each is split into pieces of at most that length "
                  "(--max-seq-length-mode=split)", split, len(lengths), limit, longest)
    if not items:
        raise ConfigError(f"no utterances left to batch: of {len(lengths)}, {empty} have no "
                          f"frames and {filtered} are longer than --max-seq-length={limit} "
                          f"(--max-seq-length-mode=filter; raise the limit, set it to 0, or "
                          f"use --max-seq-length-mode=split)")
    if config.chunks:
        items = config.chunks.apply(items)
    if config.max_frames and not config.strategy.splits_utterances:
        too_long = [it.length for it in items if it.length > config.max_frames]
        if too_long:
            _log_once(logging.INFO, "%d %s longer than --max-frames=%d (the longest %d) get a "
                      "batch of their own", len(too_long), "chunks are" if config.chunks else
                      "utterances are", config.max_frames, max(too_long))
    return items


def plan_epoch(lengths: Mapping[str, int], config: DataConfig, epoch: int, rank: int = 0,
               world_size: int = 1) -> list:
    """This rank's plans (``BatchPlan``s, or a strategy's own plan type, see
    ``hybridasr.data.batching.plans``); planned with the cyclic garbage collector paused
    (``hybridasr.utils.gc_pause``: linear in the number of utterances)."""
    with gc_paused():
        return _plan_epoch(lengths, config, epoch, rank, world_size)


def _plan_epoch(lengths: Mapping[str, int], config: DataConfig, epoch: int, rank: int,
                world_size: int) -> list:
    check_world(rank, world_size)
    items = make_items(lengths, config)
    if not items:
        raise ConfigError("no utterances left to batch")
    strategy = config.strategy
    mine = list(strategy.plan(items, epoch_rng(config.seed, epoch), world_size)[rank])
    passes = 1
    want = config.min_batches_per_epoch
    while want and 0 < sum(p.num_batches for p in mine) < want:
        # a tiny training set: more passes over it, each in its own seeded order, until the
        # epoch has enough updates (every rank gets as many batches per pass, so all stop
        # after the same pass)
        passes += 1
        rng = np.random.default_rng([int(config.seed) & 0xFFFFFFFF, int(epoch), passes])
        mine.extend(strategy.plan(items, rng, world_size)[rank])
    if passes > 1 and rank == 0:
        log.info("epoch %d: %d passes over the %d training sequences to reach "
                 "--min-batches-per-epoch=%d", epoch, passes, len(items), want)
    return mine


def plan_stats(plans: list) -> Dict[str, float]:
    """Per-epoch figures: padding ratio = padded frames / real frames, batch count, ..."""
    num_batches = sum(p.num_batches for p in plans)
    real = sum(p.num_real_frames for p in plans)
    padded = sum(p.num_padded_frames for p in plans)
    seqs = sum(p.num_sequences for p in plans)
    return {
        "num_batches": num_batches,
        "num_sequences": seqs,
        "real_frames": real,
        "padded_frames": padded,
        "padding_ratio": padded / real if real else float("nan"),
        "mean_seqs_per_batch": seqs / num_batches if num_batches else 0.0,
    }
