"""Batches for one epoch, loaded in background DataLoader worker processes.

``make_batch_iterator`` plans the epoch (a function of seed, epoch, rank and world size; see
``hybridasr.data.epoch``) and returns an iterable whose units (one batch; a group of batches
cut from the same utterances, ``BatchPlan.joins_previous``; or one frame-shuffle buffer
giving several) are loaded by ``config.num_workers`` processes (0 = in this process), at most
``config.prefetch`` units per worker ahead: memory stays bounded. A unit reads each of its
utterances once (the dataset keeps them while their chunks or pieces are cut), and the
batches are the same whatever the number of workers.
"""
from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from hybridasr.data.batch import Batch, collate
from hybridasr.data.batching import BatchPlan, FrameBufferPlan
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats
from hybridasr.data.transform import IGNORE_INDEX


class LoadedFrameBuffer:
    """A frame-shuffle buffer as loaded by a worker: its frames in two tensors (one transfer
    between processes) and the minibatch indices; ``batches()`` cuts the minibatches."""

    def __init__(self, plan: FrameBufferPlan, dim: int, loaded):
        self.feats = torch.from_numpy(np.concatenate([x for x, _ in loaded]) if loaded
                                      else np.zeros((0, dim), np.float32))
        self.targets = torch.from_numpy(np.concatenate([y for _, y in loaded])) \
            if loaded and loaded[0][1] is not None else None
        self.plan = plan

    def batches(self) -> List[Batch]:
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


def plan_units(plans: list) -> list:
    """What one worker loads at a time: a ``FrameBufferPlan``, or a list of ``BatchPlan``
    (one, or a group whose later batches have ``joins_previous``)."""
    units: list = []
    for p in plans:
        if isinstance(p, BatchPlan) and p.joins_previous and units and \
                isinstance(units[-1], list):
            units[-1].append(p)
        else:
            units.append([p] if isinstance(p, BatchPlan) else p)
    return units


def _holding(dataset, items):
    """Keeps the raw utterances of ``items`` while they are cut when one gives several."""
    utts = {it.utt for it in items if it is not None}
    if len(utts) < sum(1 for it in items if it is not None) and hasattr(dataset, "holding"):
        return dataset.holding(len(utts))
    return contextlib.nullcontext()


def load_item(dataset, it):
    """(feats, targets) of one item; targets outside its ``counted`` frames are ignored."""
    x, y = dataset.load(it.utt, it.start, it.end)
    if it.counted is not None and y is not None:
        lo, hi = it.counted
        y = y.copy()  # may be a view of the dataset's cached targets
        y[:max(0, lo - it.start)] = IGNORE_INDEX
        y[max(0, hi - it.start):] = IGNORE_INDEX
    return x, y


def load_batch(dataset, plan: BatchPlan, dim: int) -> Batch:
    rows = [None if it is None else load_item(dataset, it) for it in plan.items]
    keys = ["" if it is None else it.utt for it in plan.items]
    spans = [(0, 0) if it is None else (it.start, it.end) for it in plan.items]
    return collate(rows, keys, spans, dim, plan.reset, plan.carry_state)


def load_plan(dataset, plan, dim: int):
    """One plan unit loaded: a list of Batches, or a ``LoadedFrameBuffer``."""
    if isinstance(plan, FrameBufferPlan):
        with _holding(dataset, plan.items):
            return LoadedFrameBuffer(plan, dim, [dataset.load(it.utt, it.start, it.end)
                                                 for it in plan.items])
    if isinstance(plan, BatchPlan):
        plan = [plan]
    with _holding(dataset, [it for b in plan for it in b.items]):
        return [load_batch(dataset, b, dim) for b in plan]


class _PlanUnits(Dataset):
    def __init__(self, dataset, plans, dim: int):
        self.dataset, self.plans, self.dim = dataset, plans, dim

    def __len__(self):
        return len(self.plans)

    def __getitem__(self, i):
        return load_plan(self.dataset, self.plans[i], self.dim)


def _identity(x):
    return x


def _seed_worker(worker_id: int) -> None:  # nothing random happens in workers; keep BLAS lean
    torch.set_num_threads(1)


class BatchIterator:
    """One rank's batches of one epoch; ``len()`` and ``stats()`` are known before loading."""

    def __init__(self, dataset, config: DataConfig, epoch: int, rank: int = 0,
                 world_size: int = 1, pin_memory: bool = False):
        self.dataset, self.config, self.epoch = dataset, config, epoch
        self.rank, self.world_size, self.pin_memory = rank, world_size, pin_memory
        self.plans = plan_epoch(dataset.output_lengths, config, epoch, rank, world_size)
        self.dim = dataset.transform.output_dim(dataset.feature_dim())
        sw = config.tbptt_streams_window()
        if sw and hasattr(dataset, "cache_utts"):  # windows of an utterance come in a row
            dataset.cache_utts = max(dataset.cache_utts, 2 * sw[0])

    def __len__(self) -> int:
        return sum(p.num_batches for p in self.plans)

    def stats(self) -> Dict[str, float]:
        """Per-epoch figures for the trainer's JSON report."""
        s = {"epoch": self.epoch, "rank": self.rank, "world_size": self.world_size,
             "strategy": self.config.tbptt and f"tbptt:{self.config.tbptt}" or
             self.config.seq_ordering, "chunking": self.config.chunking or None}
        s.update(plan_stats(self.plans))
        return s

    def __iter__(self) -> Iterator[Batch]:
        units = _PlanUnits(self.dataset, plan_units(self.plans), self.dim)
        workers = self.config.num_workers
        kwargs = dict(batch_size=None, shuffle=False, collate_fn=_identity,
                      num_workers=workers, pin_memory=self.pin_memory)
        if workers > 0:
            kwargs.update(prefetch_factor=self.config.prefetch, worker_init_fn=_seed_worker)
        for unit in DataLoader(units, **kwargs):
            if isinstance(unit, LoadedFrameBuffer):
                for b in unit.batches():
                    yield b.pin_memory() if self.pin_memory else b
            else:
                yield from unit


def make_batch_iterator(dataset, config: DataConfig, epoch: int, rank: int = 0,
                        world_size: int = 1, pin_memory: bool = False) -> BatchIterator:
    return BatchIterator(dataset, config, epoch, rank, world_size, pin_memory)


def num_batches(dataset, config: DataConfig, epoch: int = 0, rank: int = 0,
                world_size: int = 1) -> int:
    """Batches this rank gets in ``epoch`` (the same on every rank)."""
    return sum(p.num_batches for p in
               plan_epoch(dataset.output_lengths, config, epoch, rank, world_size))
