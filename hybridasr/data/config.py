"""``DataConfig``: every feature-transform and batching setting of the data pipeline, resolved.

Four typed parts: ``transform`` (``hybridasr.features.transform.TransformOptions``, rebuilt at
decode time from the model), ``augment`` (``hybridasr.data.spec_augment.SpecAugmentOptions``,
training batches only), the common batching and loading options declared here, and
``strategy_options``, the ``Options`` of the strategy ``--seq-ordering`` chooses
(``hybridasr.data.batching``). A ``DataConfig`` is checked when it is made and does not change
afterwards: it builds its batching strategy once (``config.strategy``, which the epoch plans
and the loader use) and parses ``--chunking`` once (``config.chunks``).

``from_dict`` / ``to_dict`` are flat, so the resolved training config, the model's saved dict
and the command line all hold the same names.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, List, Optional

from hybridasr.data.batching import (BatchingStrategy, Limits, chosen_options, make_strategy,
                                     strategy_option_specs, upgrade_saved)
from hybridasr.data.chunking import Chunking
from hybridasr.data.spec_augment import SpecAugmentOptions
from hybridasr.errors import ConfigError
from hybridasr.features.transform import TransformOptions
from hybridasr.options import OptionSpec, check, from_values, option, option_specs


@dataclass(frozen=True)
class DataConfig:
    # feature transform (rebuilt at decode time)
    transform: TransformOptions = field(default_factory=TransformOptions)
    # SpecAugment masking of training batches (off for cross-validation: for_evaluation)
    augment: SpecAugmentOptions = field(default_factory=SpecAugmentOptions)
    global_norm_utts: int = option(
        10000, "with --global-norm: the statistics come from this many training utterances, "
               "a random subset drawn with --seed (Kaldi nnet1 uses 10k), so start-up does "
               "not read a large corpus whole; 0 = all", minimum=0)
    # batching
    seq_ordering: str = option("random", "the batching strategy, NAME[:ARG]")
    # the chosen strategy's own options (its Options dataclass; None: the defaults)
    strategy_options: Any = None
    chunking: str = option(
        "", "size:step: train on sub-utterances of size frames every step frames, a modifier "
            "of the strategies that batch whole utterances (each utterance is read once per "
            "epoch; see --randomizer-size)")
    chunking_loss: str = option(
        "all", "what the loss counts where chunks overlap: all: every chunk's every frame "
               "(RETURNN), so overlapped frames count twice; once: each frame once, in the "
               "chunk where it is nearer the middle", choices=("all", "once"))
    max_frames: int = option(
        10000, "padded frames per batch (sequences x longest); an utterance (or chunk) longer "
               "than this gets a batch of its own, nothing is refused for its length; "
               "0 = no limit", minimum=0)
    max_seqs: int = option(0, "sequences per batch; 0 = no limit", minimum=0)
    max_seq_length: int = option(
        0, "utterances longer than this (frames) are left out or split, see "
           "--max-seq-length-mode; 0 = no limit (the default: every utterance is trained on)",
        minimum=0)
    max_seq_length_mode: str = option(
        "filter", "what happens to utterances over --max-seq-length: filter: left out (the "
                  "log counts them); split: cut into pieces of near-equal length, each "
                  "utterance read once", choices=("filter", "split"))
    randomizer_size: int = option(
        32768, "--chunking (and split utterances): chunk frames per group of utterances that "
               "one loader worker reads once each and whose chunks are batched together",
        minimum=1)
    min_batches_per_epoch: int = option(
        0, "a training set too small for this many batches (updates) is gone through several "
           "times per epoch, each pass in its own order (0: one pass)", minimum=0)
    seed: int = option(777, "random seed of training: the model initialisation, and each "
                            "epoch's batch order and dropout, which depend on (seed, epoch) "
                            "only")
    # loading
    num_workers: int = option(2, "loader worker processes (0 = load in the training process)",
                              minimum=0)
    prefetch: int = option(2, "batches each worker prepares ahead", minimum=1)
    # made from the above when the config is: the strategy (built once) and the chunking
    strategy: BatchingStrategy = field(init=False, repr=False, compare=False)
    chunks: Optional[Chunking] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        check(self)  # types, choices and minimums of the common options
        self.transform.validate()
        self.augment.validate()
        chunks = Chunking.parse(self.chunking, self.chunking_loss)
        strategy = make_strategy(self.seq_ordering, self.strategy_options,
                                 Limits(self.max_frames, self.max_seqs), self.randomizer_size)
        if chunks and strategy.splits_utterances:
            raise ConfigError(f"{strategy.describe()} cuts the utterances itself; drop "
                              f"--chunking")
        object.__setattr__(self, "strategy_options", strategy.options)
        object.__setattr__(self, "strategy", strategy)
        object.__setattr__(self, "chunks", chunks)

    def to_dict(self) -> dict:
        """Flat: the transform's settings, the masking, the common options, the strategy's
        options."""
        d = {s.dest: getattr(self.transform, s.dest) for s in option_specs(TransformOptions)}
        d.update((name, getattr(self.augment, name)) for name in _AUGMENT)
        d.update((name, getattr(self, name)) for name in _COMMON)
        d.update(dataclasses.asdict(self.strategy_options))
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DataConfig":
        """From flat names (``to_dict``, a saved model's ``data_config``, the command line):
        those of every registered strategy are checked, the chosen one's kept."""
        d = upgrade_saved(dict(d))  # a strategy reads what an older version saved
        own = {s.dest for s in strategy_specs()}
        unknown = sorted(set(d) - set(_COMMON) - set(_TRANSFORM) - set(_AUGMENT) - own)
        if unknown:
            raise ConfigError(f"unknown data config keys: {', '.join(unknown)}")
        common = {k: v for k, v in d.items() if k in _COMMON}
        ordering = common.get("seq_ordering", _COMMON["seq_ordering"].default)
        return cls(transform=from_values(TransformOptions,
                                         {k: v for k, v in d.items() if k in _TRANSFORM}),
                   augment=from_values(SpecAugmentOptions,
                                       {k: v for k, v in d.items() if k in _AUGMENT}),
                   strategy_options=chosen_options(ordering, {k: d[k] for k in own if k in d}),
                   **common)

    def for_evaluation(self) -> "DataConfig":
        """Cross-validation batches: whole utterances of any length sorted by length (no
        chunks, no length limit: one longer than max_frames gets a batch of its own; no
        strategy options), each utterance once (no repeated passes), nothing masked."""
        return dataclasses.replace(
            self, augment=SpecAugmentOptions(), seq_ordering="sorted", strategy_options=None,
            chunking="", chunking_loss="all", min_batches_per_epoch=0, max_seq_length=0,
            max_frames=max(self.max_frames, _COMMON["max_frames"].default)
            if self.max_frames else 0)


_COMMON = {s.dest: s for s in option_specs(DataConfig)}
_TRANSFORM = {s.dest: s for s in option_specs(TransformOptions)}
_AUGMENT = {s.dest: s for s in option_specs(SpecAugmentOptions)}


def strategy_specs(with_help: bool = False) -> List[OptionSpec]:
    """Every registered strategy's options (``strategy_option_specs``); none may take a
    common, transform or masking option's name."""
    specs = strategy_option_specs(with_help)
    clash = sorted(s.flag for s in specs
                   if s.dest in _COMMON or s.dest in _TRANSFORM or s.dest in _AUGMENT)
    if clash:
        raise ValueError(f"batching strategies declare {', '.join(clash)}, which the data "
                         f"pipeline already has")
    return specs
