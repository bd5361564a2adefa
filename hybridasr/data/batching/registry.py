"""The registered strategies, their declared options, and the choice of one for a config.

``STRATEGIES`` is the strategies' registry (``hybridasr.registry``, the mechanism of every
named part); ``register_strategy(name)`` is the only step that makes a strategy known: the
modules of this package are imported with it (so a new module needs no other edit), and a
strategy defined anywhere else (a plugin, a test) registers the same way. Everything else is
read from the strategies' declarations (``hybridasr.data.batching.base``): the option list and
help (``strategy_option_specs``), the ``--seq-ordering`` spellings, the chosen strategy's
options (``chosen_options``). ``make_strategy`` builds the strategy; ``DataConfig`` calls it,
once, and holds what it returns (``config.strategy``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hybridasr.data.batching.base import BatchingStrategy
from hybridasr.data.batching.plans import Limits
from hybridasr.options import OptionSpec
from hybridasr.registry import Registry

# every registered strategy, by name (--seq-ordering=NAME[:ARG]), in registration order
STRATEGIES = Registry("batching strategy", "--seq-ordering")
REGISTERED = STRATEGIES  # the name the package has exported


def register_strategy(name: str) -> Callable[[type], type]:
    """Class decorator: makes a ``BatchingStrategy`` subclass known under ``name``."""
    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, BatchingStrategy)):
            raise TypeError(f"register_strategy({name!r}): {cls!r} is not a BatchingStrategy")
        STRATEGIES.add(name, cls)
        cls.name = name
        return cls
    return deco


def unregister_strategy(name: str) -> None:
    """Forgets strategy ``name`` (a plugin or test strategy going away)."""
    STRATEGIES.remove(name)


def strategy_option_specs(with_help: bool = False) -> List[OptionSpec]:
    """The options of every registered strategy, each once. ``with_help``: each help starts
    with the strategies that use it (``bucketing/optimal_buckets: ...``)."""
    users = STRATEGIES.users()
    out = []
    for s in STRATEGIES.option_specs():
        if with_help:
            s = dataclasses.replace(s, help=f"{'/'.join(users[s.dest])}: {s.help}")
        out.append(s)
    return out


def seq_ordering_help() -> str:
    """The ``--seq-ordering`` spellings of the strategies, and which ones ``--chunking``
    modifies."""
    usage = " | ".join(cls.usage or cls.name for _, cls in STRATEGIES.items())
    whole = [name for name, cls in STRATEGIES.items() if not cls.splits_utterances]
    return f"{usage} (--chunking cuts the utterances of {', '.join(whole)} into chunks)"


def common_option_notes(dest: str) -> str:
    """What a common option (``max_frames``) means for the strategies that say so."""
    return "; ".join(f"{name}: {cls.notes[dest]}" for name, cls in STRATEGIES.items()
                     if dest in cls.notes)


def strategy_class(seq_ordering: str) -> Tuple[type, Optional[str]]:
    """The class ``--seq-ordering=NAME[:ARG]`` names, and ARG (None when absent)."""
    name, _, arg = seq_ordering.partition(":")
    return STRATEGIES.entry(name, note="; with :ARG where they take one").build, arg or None


def upgrade_saved(values: Dict[str, Any]) -> Dict[str, Any]:
    """A flat data config saved by an older version, as every strategy reads it now
    (``BatchingStrategy.upgrade_saved``)."""
    for _, cls in STRATEGIES.items():
        cls.upgrade_saved(values)
    return values


def chosen_options(seq_ordering: str, values: Mapping[str, Any]):
    """The ``Options`` of the strategy ``seq_ordering`` names, from flat values (command line,
    conf files, a saved dict); every registered strategy's values are checked on the way,
    chosen or not, and those of the others are not kept."""
    strategy_class(seq_ordering)  # a known name
    return STRATEGIES.options(seq_ordering.partition(":")[0], values, check_others=True)


def make_strategy(seq_ordering: str, options: Any, limits: Limits,
                  randomizer_size: int) -> BatchingStrategy:
    """The strategy ``--seq-ordering`` names (``laplace:8`` -> AlternatedSorting, bins 8),
    with its ``Options`` (None: the defaults)."""
    cls, arg = strategy_class(seq_ordering)
    return cls(arg, cls.Options() if options is None else options, limits, randomizer_size)
