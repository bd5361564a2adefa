"""Batches for one epoch, loaded in background DataLoader worker processes.

``make_batch_iterator`` plans the epoch (a function of seed, epoch, rank and world size; see
``hybridasr.data.epoch``) and returns an iterable whose units (one batch; a group of batches
cut from the same utterances, ``BatchPlan.joins_previous``; or a strategy's own plan type,
which loads itself, see ``hybridasr.data.batching.plans``) are loaded by
``config.num_workers`` processes (0 = in this process), at most ``config.prefetch`` units per
worker ahead: memory stays bounded. A unit reads each of its
utterances once (the dataset keeps them while their chunks or pieces are cut), and the
batches are the same whatever the number of workers.

With ``config.augment`` (``hybridasr.data.spec_augment``), each loaded sequence is masked,
with draws seeded by (seed, epoch, the unit's place in the epoch, utterance, first frame):
the same batches whatever the workers and wherever the epoch was resumed. Evaluation configs
(``DataConfig.for_evaluation``) mask nothing.

``skip_batches``: an epoch resumed at a batch (``hybridasr.train.partial``) leaves out the
units before it unread; only a unit that the resume point cuts through is loaded, and its
first batches dropped.
"""
from __future__ import annotations

import contextlib
from functools import partial
from typing import Dict, Iterator, Optional

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from hybridasr.data.batch import Batch, collate
from hybridasr.data.batching import BatchPlan
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats
from hybridasr.data.spec_augment import SpecAugment, make_spec_augment
from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.features.transform import IGNORE_INDEX


def plan_units(plans: list) -> list:
    """What one worker loads at a time: a list of ``BatchPlan`` (one, or a group whose later
    batches have ``joins_previous``), or a plan of a strategy's own type."""
    units: list = []
    for p in plans:
        if not isinstance(p, BatchPlan):
            units.append(p)
        elif p.joins_previous and units and isinstance(units[-1], list):
            units[-1].append(p)
        else:
            units.append([p])
    return units


def _holding(dataset, items):
    """Keeps the raw utterances of ``items`` while they are cut when one gives several."""
    utts = {it.utt for it in items if it is not None}
    if len(utts) < sum(1 for it in items if it is not None) and hasattr(dataset, "holding"):
        return dataset.holding(len(utts))
    return contextlib.nullcontext()


class _Masking:
    """SpecAugment of one plan unit (``unit``: its index in the epoch's plan)."""

    def __init__(self, augment: SpecAugment, unit: int):
        self.augment, self.unit = augment, unit

    def __call__(self, x, it):
        return self.augment.apply(x, self.unit, it.utt, it.start)


def load_item(dataset, it, mask=None):
    """(feats, targets) of one item; targets outside its ``counted`` frames are ignored;
    ``mask``: a ``_Masking`` (training) or None."""
    x, y = dataset.load(it.utt, it.start, it.end)
    if mask is not None and len(x):
        x = mask(x, it)
    if it.counted is not None and y is not None:
        lo, hi = it.counted
        y = y.copy()  # may be a view of the dataset's cached targets
        y[:max(0, lo - it.start)] = IGNORE_INDEX
        y[max(0, hi - it.start):] = IGNORE_INDEX
    return x, y


def read_items(dataset, items, mask=None) -> list:
    """(feats, targets) of each item; an utterance giving several is read once."""
    with _holding(dataset, items):
        return [load_item(dataset, it, mask) for it in items]


def load_batch(dataset, plan: BatchPlan, dim: int, mask=None) -> Batch:
    rows = [None if it is None else load_item(dataset, it, mask) for it in plan.items]
    keys = ["" if it is None else it.utt for it in plan.items]
    spans = [(0, 0) if it is None else (it.start, it.end) for it in plan.items]
    return collate(rows, keys, spans, dim, plan.reset, plan.carry_state)


def load_plan(dataset, plan, dim: int, mask=None):
    """One plan unit loaded (in a worker): a list of Batches, or what a strategy's own plan
    type loads (whose ``batches()`` the training process calls); ``mask``: its
    ``_Masking`` or None."""
    if not isinstance(plan, (BatchPlan, list)):
        return plan.load(partial(read_items, dataset, mask=mask), dim)
    if isinstance(plan, BatchPlan):
        plan = [plan]
    with _holding(dataset, [it for b in plan for it in b.items]):
        return [load_batch(dataset, b, dim, mask) for b in plan]


class _PlanUnits(Dataset):
    """The units still to load; ``first``: the index of the first in the epoch's plan,
    ``augment``: the epoch's masking or None."""

    def __init__(self, dataset, plans, dim: int, first: int = 0,
                 augment: Optional[SpecAugment] = None):
        self.dataset, self.plans, self.dim = dataset, plans, dim
        self.first, self.augment = first, augment

    def __len__(self):
        return len(self.plans)

    def __getitem__(self, i):
        mask = None if self.augment is None else _Masking(self.augment, self.first + i)
        try:
            return load_plan(self.dataset, self.plans[i], self.dim, mask)
        except HybridAsrError as e:
            if get_worker_info() is None:
                raise
            return _LoadError(e)


class _LoadError:
    """Bad input met in a loader worker (a NaN in an utterance's features), carried to the
    training process and raised there as it was: the DataLoader would raise it with the
    worker's traceback in its message."""

    def __init__(self, error: HybridAsrError):
        self.cls, self.message = type(error), str(error)

    def error(self) -> HybridAsrError:
        try:
            return self.cls(self.message)
        except TypeError:  # a class whose constructor takes more
            return HybridAsrError(self.message)


def _identity(x):
    return x


def _seed_worker(worker_id: int) -> None:  # nothing random happens in workers; keep BLAS lean
    torch.set_num_threads(1)


class BatchIterator:
    """One rank's batches of one epoch; ``len()`` and ``stats()`` are known before loading."""

    def __init__(self, dataset, config: DataConfig, epoch: int, rank: int = 0,
                 world_size: int = 1, pin_memory: bool = False, skip_batches: int = 0):
        self.dataset, self.config, self.epoch = dataset, config, epoch
        self.skip_batches = skip_batches
        self.rank, self.world_size, self.pin_memory = rank, world_size, pin_memory
        self.plans = plan_epoch(dataset.output_lengths, config, epoch, rank, world_size)
        channels = dataset.feature_dim()
        self.dim = dataset.transform.output_dim(channels)
        self.augment = make_spec_augment(config.augment, config.seed, epoch, channels)
        self.strategy = config.strategy
        cached = self.strategy.cached_utterances()
        if cached and hasattr(dataset, "cache_utts"):  # e.g. windows of utterances in a row
            dataset.cache_utts = max(dataset.cache_utts, cached)

    def __len__(self) -> int:
        return sum(p.num_batches for p in self.plans)

    def stats(self) -> Dict[str, float]:
        """Per-epoch figures for the trainer's JSON report."""
        s = {"epoch": self.epoch, "rank": self.rank, "world_size": self.world_size,
             "strategy": self.strategy.label(), "chunking": self.config.chunking or None}
        s.update(plan_stats(self.plans))
        return s

    def _units_after_skip(self):
        """The plan units still to load, the index of the first, and how many batches of it
        to drop."""
        units, skip = plan_units(self.plans), self.skip_batches
        if not 0 <= skip <= len(self):
            raise ConfigError(f"epoch {self.epoch}: cannot resume after batch {skip}: the "
                              f"epoch has {len(self)} batches")
        first = 0
        while first < len(units):
            n = len(units[first]) if isinstance(units[first], list) else units[first].num_batches
            if skip < n:
                break
            skip -= n
            first += 1
        return units[first:], first, skip

    def __iter__(self) -> Iterator[Batch]:
        todo, first, drop = self._units_after_skip()
        units = _PlanUnits(self.dataset, todo, self.dim, first, self.augment)
        workers = self.config.num_workers
        kwargs = dict(batch_size=None, shuffle=False, collate_fn=_identity,
                      num_workers=workers, pin_memory=self.pin_memory)
        if workers > 0:
            kwargs.update(prefetch_factor=self.config.prefetch, worker_init_fn=_seed_worker)
        for unit in DataLoader(units, **kwargs):
            if isinstance(unit, _LoadError):
                raise unit.error()
            if isinstance(unit, list):
                yield from unit[drop:]
            else:  # a strategy's own unit, cut into batches here (pinned, as the loader's)
                for b in unit.batches()[drop:]:
                    yield b.pin_memory() if self.pin_memory else b
            drop = 0


def make_batch_iterator(dataset, config: DataConfig, epoch: int, rank: int = 0,
                        world_size: int = 1, pin_memory: bool = False,
                        skip_batches: int = 0) -> BatchIterator:
    return BatchIterator(dataset, config, epoch, rank, world_size, pin_memory, skip_batches)


def num_batches(dataset, config: DataConfig, epoch: int = 0, rank: int = 0,
                world_size: int = 1) -> int:
    """Batches this rank gets in ``epoch`` (the same on every rank)."""
    return sum(p.num_batches for p in
               plan_epoch(dataset.output_lengths, config, epoch, rank, world_size))
