"""Batches for one epoch, loaded in background DataLoader worker processes.

``make_batch_iterator`` plans the epoch (a function of seed, epoch, rank and world size; see
``hybridasr.data.epoch``) and returns an iterable whose units (one batch, or one frame-shuffle
buffer giving several) are loaded by ``config.num_workers`` processes (0 = in this process),
at most ``config.prefetch`` units per worker ahead: memory stays bounded.
"""
from __future__ import annotations

from typing import Dict, Iterator, List

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from hybridasr.data.batch import Batch, collate
from hybridasr.data.batching import FrameBufferPlan
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats


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


def load_plan(dataset, plan, dim: int):
    """One plan unit loaded: a list with one Batch, or a ``LoadedFrameBuffer``."""
    if isinstance(plan, FrameBufferPlan):
        return LoadedFrameBuffer(plan, dim, [dataset.load(it.utt, it.start, it.end)
                                             for it in plan.items])
    rows = [None if it is None else dataset.load(it.utt, it.start, it.end) for it in plan.items]
    keys = ["" if it is None else it.utt for it in plan.items]
    spans = [(0, 0) if it is None else (it.start, it.end) for it in plan.items]
    return [collate(rows, keys, spans, dim, plan.reset, plan.carry_state)]


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
        units = _PlanUnits(self.dataset, self.plans, self.dim)
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
