"""The registered strategies, their declared options, and the choice of one for a config.

``register_strategy(name)`` is the only step that makes a strategy known: the modules of this
package are imported with it (so a new module needs no other edit), and a strategy defined
anywhere else (a plugin, a test) registers the same way. Everything else is read from the
strategies' declarations (``hybridasr.data.batching.base``): the option list and help
(``strategy_option_specs``), the ``--seq-ordering`` spellings, the chosen strategy's options
(``chosen_options``). ``make_strategy`` builds the strategy; ``DataConfig`` calls it, once, and
holds what it returns (``config.strategy``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hybridasr.data.batching.base import BatchingStrategy
from hybridasr.data.batching.plans import Limits
from hybridasr.errors import ConfigError
from hybridasr.options import OptionSpec, option_specs

# every registered strategy, by name (--seq-ordering=NAME[:ARG]), in registration order
REGISTERED: Dict[str, type] = {}


def register_strategy(name: str) -> Callable[[type], type]:
    """Class decorator: makes a ``BatchingStrategy`` subclass known under ``name``."""
    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, BatchingStrategy)):
            raise TypeError(f"register_strategy({name!r}): {cls!r} is not a BatchingStrategy")
        old = REGISTERED.get(name)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise ValueError(f"batching strategy {name!r} is registered twice "
                             f"({old.__module__}.{old.__qualname__}, "
                             f"{cls.__module__}.{cls.__qualname__})")
        cls.name = name
        REGISTERED[name] = cls
        try:
            _shared_specs()  # two declarations of one option must agree
        except ValueError:
            REGISTERED.pop(name) if old is None else REGISTERED.update({name: old})
            raise
        return cls
    return deco


def unregister_strategy(name: str) -> None:
    """Forgets strategy ``name`` (a plugin or test strategy going away)."""
    REGISTERED.pop(name, None)


def _shared_specs() -> Dict[str, Tuple[OptionSpec, List[str]]]:
    """Every strategy option once, with the names of the strategies that declare it."""
    out: Dict[str, Tuple[OptionSpec, List[str]]] = {}
    for name, cls in REGISTERED.items():
        for s in option_specs(cls.Options):
            if s.dest in out and out[s.dest][0] != s:
                raise ValueError(f"option {s.flag} of batching strategy {name!r} differs from "
                                 f"the one {', '.join(out[s.dest][1])} declare: declare it once "
                                 f"and use that declaration in both")
            out.setdefault(s.dest, (s, []))[1].append(name)
    return out


def strategy_option_specs(with_help: bool = False) -> List[OptionSpec]:
    """The options of every registered strategy, each once. ``with_help``: each help starts
    with the strategies that use it (``bucketing/optimal_buckets: ...``)."""
    out = []
    for s, users in _shared_specs().values():
        if with_help:
            s = dataclasses.replace(s, help=f"{'/'.join(users)}: {s.help}")
        out.append(s)
    return out


def seq_ordering_help() -> str:
    """The ``--seq-ordering`` spellings of the strategies, and which ones ``--chunking``
    modifies."""
    usage = " | ".join(cls.usage or cls.name for cls in REGISTERED.values())
    whole = [name for name, cls in REGISTERED.items() if not cls.splits_utterances]
    return f"{usage} (--chunking cuts the utterances of {', '.join(whole)} into chunks)"


def common_option_notes(dest: str) -> str:
    """What a common option (``max_frames``) means for the strategies that say so."""
    return "; ".join(f"{name}: {cls.notes[dest]}" for name, cls in REGISTERED.items()
                     if dest in cls.notes)


def strategy_class(seq_ordering: str) -> Tuple[type, Optional[str]]:
    """The class ``--seq-ordering=NAME[:ARG]`` names, and ARG (None when absent)."""
    name, _, arg = seq_ordering.partition(":")
    if name not in REGISTERED:
        raise ConfigError(f"unknown --seq-ordering={seq_ordering!r}; known: "
                          f"{', '.join(sorted(REGISTERED))} (with :ARG where they take one)")
    return REGISTERED[name], arg or None


def upgrade_saved(values: Dict[str, Any]) -> Dict[str, Any]:
    """A flat data config saved by an older version, as every strategy reads it now
    (``BatchingStrategy.upgrade_saved``)."""
    for cls in REGISTERED.values():
        cls.upgrade_saved(values)
    return values


def chosen_options(seq_ordering: str, values: Mapping[str, Any]):
    """The ``Options`` of the strategy ``seq_ordering`` names, from flat values (command line,
    conf files, a saved dict); every registered strategy's values are checked on the way,
    chosen or not, and those of the others are not kept."""
    for cls in REGISTERED.values():
        cls.options_from(values)
    return strategy_class(seq_ordering)[0].options_from(values)


def make_strategy(seq_ordering: str, options: Any, limits: Limits,
                  randomizer_size: int) -> BatchingStrategy:
    """The strategy ``--seq-ordering`` names (``laplace:8`` -> AlternatedSorting, bins 8),
    with its ``Options`` (None: the defaults)."""
    cls, arg = strategy_class(seq_ordering)
    return cls(arg, cls.Options() if options is None else options, limits, randomizer_size)
