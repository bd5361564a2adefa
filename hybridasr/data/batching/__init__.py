"""Batching strategies behind one interface (``BatchingStrategy``), chosen by name.

``--seq-ordering`` names (RETURNN's where one exists): ``random``, ``sorted``,
``sorted_reverse``, ``bucketing``, ``laplace:N``, ``optimal_buckets:Q``, ``frame_shuffle``;
``--tbptt=S:W`` selects truncated BPTT instead. ``--chunking=size:step`` cuts items before
any sequence strategy (see ``hybridasr.data.epoch``); utterances cut into several items are
batched in groups that read each once (``groups``). ``check_model_fits`` says at start when
the model cannot be trained with the strategy (TBPTT needs ``--model=lstm``).
"""
from __future__ import annotations

from hybridasr.data.batching.base import (STRATEGIES, BatchingStrategy, BatchPlan,
                                          FrameBufferPlan, Item, Limits, register_strategy)
from hybridasr.data.batching import (bucketing, frame_shuffle, laplace,  # noqa: F401 (register)
                                     optimal_buckets, simple_orders)
from hybridasr.data.batching.tbptt import TruncatedBptt
from hybridasr.errors import ConfigError


def limits_of(config) -> Limits:
    return Limits(max_frames=config.max_frames, max_seqs=config.max_seqs)


def make_strategy(config) -> BatchingStrategy:
    """The strategy a ``DataConfig`` asks for (``laplace:8`` -> AlternatedSorting(8))."""
    name, _, arg = config.seq_ordering.partition(":")
    if config.tbptt:
        if name != "random":
            raise ConfigError(f"--tbptt fills streams in random order; drop "
                              f"--seq-ordering={config.seq_ordering}")
        return TruncatedBptt(None, config, limits_of(config))
    if name not in STRATEGIES:
        raise ConfigError(f"unknown --seq-ordering={config.seq_ordering!r}; known: "
                          f"{', '.join(sorted(STRATEGIES))} (with :N where they take one)")
    return STRATEGIES[name](arg or None, config, limits_of(config))


def check_model_fits(config, model_class: type, model_name: str) -> None:
    """ConfigError when the strategy of ``config`` needs what ``model_class`` lacks (its
    ``carries_state``, ``recurrent``); a warning when it runs to no purpose."""
    make_strategy(config).check_model(model_class, model_name)


__all__ = ["STRATEGIES", "BatchingStrategy", "BatchPlan", "FrameBufferPlan", "Item", "Limits",
           "check_model_fits", "make_strategy", "register_strategy", "limits_of"]
