"""Batching strategies behind one interface (``BatchingStrategy``), chosen by name
(``--seq-ordering=NAME[:ARG]``).

Each strategy is one module of this package that declares its options, its argument and its
capabilities, and registers itself (``register_strategy``); the package imports all its
modules, so adding a strategy is adding its module (and a conf file and a test). Utterances cut
into several items (``--chunking``, split long ones) are batched in groups that read each once
(``groups``); ``sharding`` deals the batches to the ranks. A strategy's ``check_model`` says at
start when the model cannot be trained with it.
"""
from __future__ import annotations

import importlib
import pkgutil

from hybridasr.data.batching.base import BatchingStrategy, NoOptions
from hybridasr.data.batching.plans import BatchPlan, Item, Limits
from hybridasr.data.batching.registry import (REGISTERED, STRATEGIES, chosen_options,
                                              make_strategy, register_strategy,
                                              strategy_class, strategy_option_specs,
                                              unregister_strategy, upgrade_saved)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")  # the strategies register themselves

__all__ = ["REGISTERED", "STRATEGIES", "BatchingStrategy", "BatchPlan", "Item", "Limits", "NoOptions",
           "chosen_options", "make_strategy", "register_strategy", "strategy_class",
           "strategy_option_specs", "unregister_strategy", "upgrade_saved"]
