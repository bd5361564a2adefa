"""``DataConfig``: every feature-transform and batching setting of the data pipeline.

The common options are declared here (``hybridasr.options.option`` fields; the feature
transform's defaults are ``FeatureTransform``'s); each batching strategy declares its own
(``hybridasr.data.batching``), and a ``DataConfig`` holds those of every registered strategy in
``strategy_options``, read as attributes too (``config.<option>``). ``to_dict()`` is flat,
so the resolved training config, the model's saved dict and the command line all hold the same
names. ``transform_dict()`` is the part the decoder needs again (``FeatureTransform.from_dict``);
the rest only shapes training batches.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

from hybridasr.data.batching import make_strategy, strategy_option_specs
from hybridasr.data.transform import FeatureTransform
from hybridasr.errors import ConfigError
from hybridasr.options import OptionSpec, check, option, option_specs, parse_int_pair

_T = {f.name: f.default for f in fields(FeatureTransform)}


@dataclass(init=False)
class DataConfig:
    # feature transform (rebuilt at decode time)
    norm_means: bool = option(_T["norm_means"], "per-speaker CMVN: subtract means (cmvn.scp)")
    norm_vars: bool = option(_T["norm_vars"], "per-speaker CMVN: also normalise variances")
    global_norm: bool = option(_T["global_norm"], "global mean/variance normalisation over "
                                                  "the training set (computed once)")
    global_norm_utts: int = option(
        10000, "with --global-norm: the statistics come from this many training utterances, "
               "a random subset drawn with --seed (Kaldi nnet1 uses 10k), so start-up does "
               "not read a large corpus whole; 0 = all", minimum=0)
    delta_order: int = option(_T["delta_order"], "add-deltas order", minimum=0)
    delta_window: int = option(_T["delta_window"], "add-deltas window", minimum=1)
    splice: int = option(_T["splice"], "frames of context either side (5 gives 11 frames, "
                                       "as nnet1)", minimum=0)
    stack_frames: int = option(_T["stack_frames"], "stack each frame with the next N-1",
                               minimum=1)
    subsample: int = option(_T["subsample"], "keep every N-th (stacked) frame; targets alike",
                            minimum=1)
    label_delay: int = option(_T["label_delay"], "output t is trained on the label of frame "
                                                 "t-N", minimum=0)
    # batching
    seq_ordering: str = option("random", "the batching strategy")
    chunking: str = option(
        "", "size:step: train on sub-utterances of size frames every step frames (each "
            "utterance is read once per epoch; see --randomizer-size)")
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
    # every registered strategy's own options, by name
    strategy_options: Dict[str, Any] = field(default_factory=dict)

    def __init__(self, strategy_options: Optional[Dict[str, Any]] = None, **values):
        """Common options and strategy options alike by name (``DataConfig(max_frames=500,
        <strategy option>=...)``); the others take their declared defaults."""
        own = {s.dest: s.default for s in strategy_specs()}
        own.update(strategy_options or {})
        for name, spec in _COMMON.items():
            object.__setattr__(self, name, values.pop(name, spec.default))
        unknown = sorted(set(values) - set(own))
        if unknown:
            raise TypeError(f"DataConfig: unknown option(s) {', '.join(unknown)}")
        own.update(values)
        object.__setattr__(self, "strategy_options", own)

    def __getattr__(self, name: str):  # a strategy's option as an attribute
        own = self.__dict__.get("strategy_options")
        if own is not None and name in own:
            return own[name]
        raise AttributeError(f"{type(self).__name__} has no option {name!r}")

    def __setattr__(self, name: str, value) -> None:
        own = self.__dict__.get("strategy_options")
        if own is not None and name in own and name not in _COMMON:
            own[name] = value
        else:
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in _COMMON}
        d.update(self.strategy_options)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DataConfig":
        """From a flat dict (``to_dict``, a saved model's ``data_config``), checked."""
        known = set(_COMMON) | {s.dest for s in strategy_specs()}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown data config keys: {', '.join(unknown)}")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def for_evaluation(self) -> "DataConfig":
        """Cross-validation batches: whole utterances of any length sorted by length (no
        chunks, no length limit: one longer than max_frames gets a batch of its own; every
        strategy option at its default), each utterance once (no repeated passes)."""
        values = {name: getattr(self, name) for name in _COMMON}
        values.update(seq_ordering="sorted", chunking="", chunking_loss="all",
                      min_batches_per_epoch=0, max_seq_length=0,
                      max_frames=max(self.max_frames, _COMMON["max_frames"].default)
                      if self.max_frames else 0)
        c = DataConfig(**values)
        c.validate()
        return c

    def transform_dict(self) -> dict:
        """The FeatureTransform settings (global statistics come from ``fit`` later)."""
        names = set(_T) & set(_COMMON)
        return {k: getattr(self, k) for k in sorted(names)}

    def chunk_size_step(self) -> Optional[Tuple[int, int]]:
        return parse_int_pair(self.chunking, "--chunking", "size:step") if self.chunking else None

    def validate(self) -> None:
        check(self)  # types, choices and minimums of the common options
        if self.norm_vars and not self.norm_means:
            raise ConfigError("--norm-vars=true needs --norm-means=true (as in Kaldi)")
        if self.chunking_loss != "all" and not self.chunking:
            raise ConfigError(f"--chunking-loss={self.chunking_loss} is about overlapping "
                              f"chunks: it needs --chunking=size:step")
        cs = self.chunk_size_step()
        if cs and cs[1] > cs[0]:
            raise ConfigError(f"--chunking={self.chunking}: step > size would skip frames")
        strategy = make_strategy(self)  # its options, every strategy's, unknown names
        if self.chunking and strategy.splits_utterances:
            raise ConfigError(f"{strategy.describe()} cuts the utterances itself; drop "
                              f"--chunking")


_COMMON = {s.dest: s for s in option_specs(DataConfig)}


def strategy_specs(with_help: bool = False) -> List[OptionSpec]:
    """Every registered strategy's options (``strategy_option_specs``); none may take a
    common option's name."""
    specs = strategy_option_specs(with_help)
    clash = sorted(s.flag for s in specs if s.dest in _COMMON)
    if clash:
        raise ValueError(f"batching strategies declare {', '.join(clash)}, which the data "
                         f"pipeline already has")
    return specs
