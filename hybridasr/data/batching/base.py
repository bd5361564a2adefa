"""The one interface every batching strategy implements, and the pieces they share.

A strategy is one module: a ``BatchingStrategy`` subclass registered under its name
(``@register_strategy("laplace")``, ``hybridasr.data.batching.registry``) that declares

- how it is chosen: ``--seq-ordering=NAME``, or ``NAME:ARG`` when ``takes_arg``
  (``laplace:8``, ``tbptt:64:20``; ``usage`` is its spelling in the help). ``--seq-ordering``
  is the one selector;
- its options: ``Options``, a dataclass of ``hybridasr.options.option`` fields (``--bucket-width``);
  the command line, conf-file keys, help and ``DataConfig`` take them from there.
  ``DataConfig.strategy_options`` holds the chosen strategy's ``Options`` instance, which the
  strategy reads as ``self.options``; ``check_options`` checks them whether it is chosen or
  not (a bad value in a conf file fails at once);
- its capabilities: ``needs_stateful_model`` (windows of an utterance come one batch after
  another and the model must carry its recurrent state, the models' ``carries_state``);
  ``splits_utterances`` (it cuts utterances itself; the others batch whole utterances, which
  ``--chunking`` may cut into chunks first); ``per_frame`` (every sequence is one frame: a
  recurrent model sees no context); ``notes`` (what common options such as ``--max-frames``
  mean for it, added to their help);
- what the loader should do: ``cached_utterances()``; plan types of its own load themselves
  (``hybridasr.data.batching.plans``).

It is built once per run, when the ``DataConfig`` is (``config.strategy``), from its argument,
its options, the batch limits and ``--randomizer-size``; ``setup()`` reads its argument and
options there. It gets the epoch's items and a random generator seeded from (seed, epoch)
only, and returns per-rank lists of plans (``plan``; by default its ``make_batches`` dealt to
the ranks). An item longer than ``--max-frames`` gets a batch of its own (``cut_consecutive``):
any utterance the data dir has can be trained on; only ``--max-seq-length`` leaves utterances
out.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.data.batching.groups import has_cut_utterances, plan_with_groups
from hybridasr.data.batching.plans import BatchPlan, Item, Limits, by_utterance
from hybridasr.data.batching.sharding import deal_to_ranks
from hybridasr.errors import ConfigError
from hybridasr.options import check
from hybridasr.registry import NoOptions

log = logging.getLogger(__name__)

__all__ = ["BatchingStrategy", "BatchPlan", "Item", "Limits", "NoOptions", "by_utterance",
           "cut_consecutive", "parse_int_arg", "parse_int_pair_arg", "shuffled",
           "shuffled_utterances", "sort_by_length"]


class BatchingStrategy(ABC):
    """Lengths in, batches out, as a function of (seed, epoch) only."""

    name: ClassVar[str] = ""  # set by register_strategy
    usage: ClassVar[str] = ""  # its --seq-ordering spelling(s) in the help; default: name
    takes_arg: ClassVar[bool] = False  # ``name:ARG`` (laplace:N, optimal_buckets:Q)
    Options: ClassVar[type] = NoOptions
    # capabilities
    needs_stateful_model: ClassVar[bool] = False
    splits_utterances: ClassVar[bool] = False
    per_frame: ClassVar[bool] = False
    notes: ClassVar[Dict[str, str]] = {}  # common option -> what it means for this strategy

    def __init__(self, arg: Optional[str], options: Any, limits: Limits,
                 randomizer_size: int):
        if arg and not self.takes_arg:
            raise ConfigError(f"--seq-ordering={self.name}:{arg}: {self.name} takes no argument")
        if not isinstance(options, self.Options):
            raise ConfigError(f"{self.describe_arg(arg)} takes {self.Options.__name__}, not "
                              f"{type(options).__name__}")
        check(options)  # type, choices, minimum of each
        self.check_options(options)
        self.arg, self.options, self.limits = arg, options, limits
        self.randomizer_size = randomizer_size
        self.setup()

    def setup(self) -> None:
        """Reads its argument and options (``self.arg``, ``self.options``, ``self.limits``);
        ConfigError when they do not fit."""

    # --- declarations ---------------------------------------------------------------
    @classmethod
    def check_options(cls, options) -> None:
        """ConfigError when its own options are malformed (checked whether it is chosen or
        not, so a bad value in a conf file fails at once: the registry's merge-and-check,
        ``hybridasr.registry.Registry.options``, calls it)."""

    @classmethod
    def upgrade_saved(cls, values: Dict[str, Any]) -> None:
        """Rewrites, in place, what an older version saved for it in a flat data config (a
        model's ``data_config``), so that it still loads; by default nothing."""

    @classmethod
    def describe_arg(cls, arg: Optional[str]) -> str:
        return f"--seq-ordering={cls.name}" + (f":{arg}" if arg else "")

    # --- what the trainer and the loader ask --------------------------------------------
    def describe(self) -> str:
        """How the user chose it, for messages (``--seq-ordering=laplace:8``)."""
        return self.describe_arg(self.arg)

    def label(self) -> str:
        """Its name in the per-epoch figures (``laplace:8``, ``tbptt:64:20``)."""
        return self.name + (f":{self.arg}" if self.arg else "")

    def cached_utterances(self) -> int:
        """Raw utterances the dataset should keep cached because their pieces come in later
        batches (0: none beyond what a plan unit holds)."""
        return 0

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
        if self.per_frame and getattr(model_class, "recurrent", False):
            log.warning("%s gives the model single frames: --model=%s, a recurrent model, "
                        "sees no context (use --model=mlp with --splice, or a sequence "
                        "--seq-ordering for a recurrent model)", what, model_name)

    # --- batching -----------------------------------------------------------------------
    @abstractmethod
    def make_batches(self, items: List[Item], rng: np.random.Generator) -> list:
        """The whole epoch's batches in training order (all ranks together)."""

    def plan(self, items: List[Item], rng: np.random.Generator,
             world_size: int = 1) -> List[list]:
        """Per-rank lists of plans: disjoint, all of the same length. Utterances cut into
        several items (chunks, split pieces) are batched in groups that read each once
        (``hybridasr.data.batching.groups``)."""
        if has_cut_utterances(items):
            return plan_with_groups(self, items, rng, world_size, self.randomizer_size)
        return deal_to_ranks(self.make_batches(items, rng), world_size)


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


def parse_int_pair_arg(name: str, arg: Optional[str], what: str) -> Tuple[int, int]:
    """``A:B`` of ``--seq-ordering=name:A:B``, both integers >= 1 (``what``: ``S:W``)."""
    try:
        a, b = (int(x) for x in (arg or "").split(":"))
    except ValueError:
        raise ConfigError(f"--seq-ordering={name}{':' + arg if arg else ''}: expected "
                          f"{name}:{what} (two integers)") from None
    if a < 1 or b < 1:
        raise ConfigError(f"--seq-ordering={name}:{arg}: both numbers of {name}:{what} must "
                          f"be >= 1")
    return a, b
