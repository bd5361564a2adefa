"""The one interface every batching strategy implements, and the pieces they share.

A strategy gets the epoch's *items* — ``Item(utt, start, end)`` spans in output frames (whole
utterances, chunks, or pieces of split long utterances) — and a random generator seeded from
(seed, epoch) only, and returns per-rank lists of ``BatchPlan``. Plans hold no features: the
loader turns them into tensors in worker processes.

An item longer than ``--max-frames`` gets a batch of its own (``cut_consecutive``): any
utterance the data dir has can be trained on; only ``--max-seq-length`` leaves utterances out.

A strategy declares what it needs of the model (``needs_stateful_model``: windows of an
utterance come one batch after another and the model must carry its recurrent state, the
models' ``carries_state``) and whether its sequences give a recurrent model any context
(``sequence_context``); ``check_model`` says at start what cannot work.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from hybridasr.errors import ConfigError

log = logging.getLogger(__name__)


class Item(NamedTuple):
    """Frames [start, end) of utterance ``utt`` (in the transform's output frames);
    ``counted``: the frames [a, b) the loss counts (None: all), for overlapping chunks
    counted once (``--chunking-loss=once``)."""
    utt: str
    start: int
    end: int
    counted: Optional[Tuple[int, int]] = None

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass
class BatchPlan:
    """One batch: its items (``None`` = an idle TBPTT stream, length 0).

    ``joins_previous``: loaded together with the batch before it, by one loader worker (a
    plan unit): the batches of the chunks (or split pieces) of the same utterances, which the
    unit reads once and cuts (see ``hybridasr.data.batching.groups``)."""
    items: List[Optional[Item]]
    reset: Optional[List[bool]] = None  # TBPTT: stream starts a new utterance
    carry_state: bool = False
    joins_previous: bool = False

    @property
    def lengths(self) -> List[int]:
        return [it.length if it is not None else 0 for it in self.items]

    @property
    def num_real_frames(self) -> int:
        return sum(self.lengths)

    @property
    def num_padded_frames(self) -> int:
        lens = self.lengths
        return len(lens) * max(lens, default=0)

    @property
    def num_batches(self) -> int:
        return 1


@dataclass
class FrameBufferPlan:
    """Frame shuffling: the utterances of one randomizer buffer; the loader reads them all,
    permutes their frames with ``seed`` and cuts ``num_batches`` minibatches."""
    items: List[Item]
    seed: int
    num_batches: int

    @property
    def num_frames(self) -> int:
        return sum(it.length for it in self.items)

    @property
    def num_real_frames(self) -> int:
        return self.num_frames

    @property
    def num_padded_frames(self) -> int:
        return self.num_frames

    def frame_batches(self) -> List[np.ndarray]:
        """Per minibatch, indices into the concatenation of the items' frames."""
        perm = np.random.default_rng(self.seed).permutation(self.num_frames)
        return np.array_split(perm, self.num_batches)

    def locate(self, index: np.ndarray):
        """(item indices, frame offsets inside the items) of concatenation indices."""
        ends = np.cumsum([it.length for it in self.items])
        which = np.searchsorted(ends, index, side="right")
        return which, index - (ends[which] - np.array([it.length for it in self.items])[which])


@dataclass
class Limits:
    max_frames: int = 0  # padded frames per batch (B x longest); 0 = no limit
    max_seqs: int = 0  # sequences per batch; 0 = no limit

    def fits(self, num_seqs: int, longest: int) -> bool:
        if self.max_seqs and num_seqs > self.max_seqs:
            return False
        return not self.max_frames or num_seqs * longest <= self.max_frames


def cut_consecutive(items: Sequence[Item], limits: Limits) -> List[BatchPlan]:
    """Batches of consecutive items, each as large as the limits allow; an item longer than
    ``limits.max_frames`` gets a batch of its own."""
    out, cur, longest = [], [], 0
    for it in items:
        new_longest = max(longest, it.length)
        if cur and not limits.fits(len(cur) + 1, new_longest):
            out.append(BatchPlan(cur))
            cur, new_longest = [], it.length
        cur.append(it)
        longest = new_longest
    if cur:
        out.append(BatchPlan(cur))
    return out


def shuffled(items: Sequence[Item], rng: np.random.Generator) -> List[Item]:
    return [items[i] for i in rng.permutation(len(items))]


def by_utterance(items: Sequence[Item]) -> List[List[Item]]:
    """Runs of consecutive items of the same utterance (``make_items`` keeps the chunks or
    pieces of an utterance together and in order)."""
    out: List[List[Item]] = []
    for it in items:
        if out and out[-1][0].utt == it.utt:
            out[-1].append(it)
        else:
            out.append([it])
    return out


def shuffled_utterances(items: Sequence[Item], rng: np.random.Generator) -> List[Item]:
    """Utterances in random order, the pieces of each kept together and in order (the same
    order as ``shuffled`` when every utterance is one item)."""
    groups = by_utterance(items)
    return [it for i in rng.permutation(len(groups)) for it in groups[i]]


def sort_by_length(items: Sequence[Item], rng: np.random.Generator,
                   reverse: bool = False) -> List[Item]:
    """Sorted by length; ties in random order (so equal lengths still mix across epochs)."""
    tie = rng.random(len(items))
    lens = np.array([it.length for it in items])
    order = np.lexsort((tie, -lens if reverse else lens))
    return [items[i] for i in order]


class BatchingStrategy(ABC):
    """Lengths in, batches out, as a function of (seed, epoch) only."""

    name: str = ""
    takes_arg = False  # ``name:ARG`` (laplace:N, optimal_buckets:Q)
    # capabilities: the model must carry recurrent state from batch to batch (TBPTT)
    needs_stateful_model = False
    # False: every sequence is one frame, so a recurrent model sees no context (it runs,
    # but only an MLP on spliced frames makes sense)
    sequence_context = True

    def __init__(self, arg: Optional[str], config, limits: Limits):
        if arg and not self.takes_arg:
            raise ConfigError(f"--seq-ordering={self.name}:{arg}: {self.name} takes no argument")
        self.arg, self.config, self.limits = arg, config, limits

    def check_model(self, model_class: type, model_name: str) -> None:
        """ConfigError at start when the model cannot be trained this way; a warning when it
        can but to no purpose. ``model_class`` declares ``carries_state`` and ``recurrent``."""
        what = self.describe()
        if self.needs_stateful_model and not getattr(model_class, "carries_state", False):
            raise ConfigError(
                f"{what} carries each utterance's recurrent state from window to window and "
                f"needs a model that carries state: --model=lstm (got --model={model_name}, "
                f"which keeps no state between batches, so it would train on windows without "
                f"their context); or train --model={model_name} on whole utterances or "
                f"--chunking")
        if not self.sequence_context and getattr(model_class, "recurrent", False):
            log.warning("%s gives the model single frames: --model=%s, a recurrent model, "
                        "sees no context (use --model=mlp with --splice, or a sequence "
                        "--seq-ordering for a recurrent model)", what, model_name)

    def describe(self) -> str:
        return f"--seq-ordering={self.name}" + (f":{self.arg}" if self.arg else "")

    @abstractmethod
    def make_batches(self, items: List[Item], rng: np.random.Generator) -> List[BatchPlan]:
        """The whole epoch's batches in training order (all ranks together)."""

    def plan(self, items: List[Item], rng: np.random.Generator,
             world_size: int = 1) -> List[list]:
        """Per-rank lists of plans: disjoint, all of the same length. Utterances cut into
        several items (chunks, split pieces) are batched in groups that read each once
        (``hybridasr.data.batching.groups``)."""
        from hybridasr.data.batching.groups import has_cut_utterances, plan_with_groups
        from hybridasr.data.sharding import deal_to_ranks

        if has_cut_utterances(items):
            return plan_with_groups(self, items, rng, world_size, self.config.randomizer_size)
        return deal_to_ranks(self.make_batches(items, rng), world_size)


STRATEGIES: Dict[str, type] = {}


def register_strategy(name: str) -> Callable[[type], type]:
    def deco(cls):
        cls.name = name
        STRATEGIES[name] = cls
        return cls
    return deco


def parse_int_arg(name: str, arg: Optional[str], default: Optional[int] = None,
                  what: str = "N") -> int:
    if arg is None or arg == "":
        if default is None:
            raise ConfigError(f"--seq-ordering={name} needs a number: {name}:{what}")
        return default
    try:
        v = int(arg)
    except ValueError:
        raise ConfigError(f"--seq-ordering={name}:{arg}: {what} must be an integer") from None
    if v < 1:
        raise ConfigError(f"--seq-ordering={name}:{arg}: {what} must be >= 1")
    return v
