"""Splitting an epoch's batches between ranks: disjoint shares, equal batch counts.

Every rank computes the same global plan (a function of seed and epoch) and keeps its share.
Unequal counts would hang the all-reduce, so when the count does not divide by the number of
ranks, the batches with the most sequences are halved (halves stay in place, and halving only
makes batches smaller, so limits still hold) until it does; rank r then takes batches r, r+R, ...
Plan units of several batches (``hybridasr.data.batching.groups``) are halved inside the unit.
A strategy with a plan type of its own deals it itself (``frame_shuffle``).
"""
from __future__ import annotations

import heapq
from dataclasses import replace
from typing import List

from hybridasr.data.batching.plans import BatchPlan
from hybridasr.errors import ConfigError


def check_world(rank: int, world_size: int) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise ConfigError(f"bad rank {rank} of world size {world_size}")


def _halve_largest(batches: List[BatchPlan], need: int, world_size: int) -> List[List[BatchPlan]]:
    """Per batch, the batches it became after ``need`` halvings of the batch with the most
    sequences (again and again; halves stay in place, in the order of their items)."""
    if sum(len(b.items) for b in batches) < len(batches) + need:
        raise ConfigError(f"{sum(len(b.items) for b in batches)} sequences cannot fill "
                          f"{len(batches) + need} batches for {world_size} ranks")
    parts: List[List[BatchPlan]] = [[b] for b in batches]
    heap = [(-len(b.items), i, 0) for i, b in enumerate(batches) if len(b.items) > 1]
    heapq.heapify(heap)
    while need:
        _, i, k = heapq.heappop(heap)
        b = parts[i][k]
        h = len(b.items) // 2
        first, second = replace(b, items=b.items[:h]), replace(b, items=b.items[h:])
        parts[i][k:k + 1] = [first, second]
        # indices after k shift by one: rebuild this batch's heap entries
        heap = [e for e in heap if e[1] != i]
        heap.extend((-len(p.items), i, j) for j, p in enumerate(parts[i]) if len(p.items) > 1)
        heapq.heapify(heap)
        need -= 1
    return parts


def split_to_multiple(batches: List[BatchPlan], multiple: int) -> List[BatchPlan]:
    """Halves the largest batches until the count is a multiple of ``multiple``."""
    need = (-len(batches)) % multiple
    if not need:
        return list(batches)
    return [p for ps in _halve_largest(batches, need, multiple) for p in ps]


def halve_units(units: List[List[BatchPlan]], need: int,
                world_size: int) -> List[List[BatchPlan]]:
    """``need`` more batches by halving the largest ones; halves stay in their unit."""
    if not need:
        return units
    parts = iter(_halve_largest([b for u in units for b in u], need, world_size))
    return [[p for _ in u for p in next(parts)] for u in units]


def deal_to_ranks(batches: List[BatchPlan], world_size: int) -> List[List[BatchPlan]]:
    if world_size == 1:
        return [list(batches)]
    batches = split_to_multiple(batches, world_size)
    return [batches[r::world_size] for r in range(world_size)]
