"""The registered strategies, their declared options, and the choice of one for a config.

``register_strategy(name)`` is the only step that makes a strategy known: the modules of this
package are imported with it (so a new module needs no other edit), and a strategy defined
anywhere else (a plugin, a test) registers the same way. Everything else is read from the
strategies' declarations (``hybridasr.data.batching.base``): the option list and help
(``strategy_option_specs``), the ``--seq-ordering`` spellings, the choice (``make_strategy``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

from hybridasr.data.batching.base import BatchingStrategy
from hybridasr.data.batching.plans import Limits
from hybridasr.errors import ConfigError
from hybridasr.options import OptionSpec, option_specs

# every registered strategy, by name, in registration order
REGISTERED: Dict[str, type] = {}
# those chosen by --seq-ordering=NAME (the others are chosen by an option of their own)
STRATEGIES: Dict[str, type] = {}


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
        if cls.selected_by and cls.selected_by not in {s.dest for s in option_specs(cls.Options)}:
            raise ValueError(f"{cls.__qualname__}.selected_by={cls.selected_by!r} is not one of "
                             f"its options")
        cls.name = name
        REGISTERED[name] = cls
        try:
            _shared_specs()  # two declarations of one option must agree
        except ValueError:
            REGISTERED.pop(name) if old is None else REGISTERED.update({name: old})
            raise
        if not cls.selected_by:
            STRATEGIES[name] = cls
        return cls
    return deco


def unregister_strategy(name: str) -> None:
    """Forgets strategy ``name`` (a plugin or test strategy going away)."""
    REGISTERED.pop(name, None)
    STRATEGIES.pop(name, None)


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
    with the strategies that use it (``bucketing/optimal_buckets: ...``), except an option
    that chooses its strategy."""
    out = []
    for s, users in _shared_specs().values():
        chooses = any(REGISTERED[u].selected_by == s.dest for u in users)
        if with_help and not chooses:
            s = dataclasses.replace(s, help=f"{'/'.join(users)}: {s.help}")
        out.append(s)
    return out


def seq_ordering_help() -> str:
    """The ``--seq-ordering`` spellings of the strategies, and the options that choose the
    others instead."""
    usage = " | ".join(cls.usage or cls.name for cls in STRATEGIES.values())
    chosen = [f"{cls.flag(cls.selected_by)} chooses {cls.name} (with --seq-ordering="
              f"{'|'.join(cls.seq_orderings)})" for cls in REGISTERED.values() if cls.selected_by]
    return usage + "".join(f"; {c}" for c in chosen)


def common_option_notes(dest: str) -> str:
    """What a common option (``max_frames``) means for the strategies that say so."""
    return "; ".join(f"{name}: {cls.notes[dest]}" for name, cls in REGISTERED.items()
                     if dest in cls.notes)


def limits_of(config) -> Limits:
    return Limits(max_frames=config.max_frames, max_seqs=config.max_seqs)


def make_strategy(config) -> BatchingStrategy:
    """The strategy a ``DataConfig`` asks for (``laplace:8`` -> AlternatedSorting(8)); every
    registered strategy's options are checked on the way, chosen or not."""
    for cls in REGISTERED.values():
        cls.check_options(cls.options_of(config))
    name, _, arg = config.seq_ordering.partition(":")
    chosen = [cls for cls in REGISTERED.values() if cls.selecting_value(config)]
    if len(chosen) > 1:
        raise ConfigError(" and ".join(f"{c.flag(c.selected_by)}" for c in chosen) +
                          " exclude each other")
    if chosen:
        cls = chosen[0]
        if config.seq_ordering not in cls.seq_orderings:
            what = f"{cls.flag(cls.selected_by)}={cls.selecting_value(config)}"
            raise ConfigError(f"{what} orders the utterances itself "
                              f"(--seq-ordering={'|'.join(cls.seq_orderings)}); drop "
                              f"--seq-ordering={config.seq_ordering}")
        return cls(None, config, limits_of(config))
    if name not in STRATEGIES:
        raise ConfigError(f"unknown --seq-ordering={config.seq_ordering!r}; known: "
                          f"{', '.join(sorted(STRATEGIES))} (with :N where they take one)")
    return STRATEGIES[name](arg or None, config, limits_of(config))


def check_model_fits(config, model_class: type, model_name: str) -> None:
    """ConfigError when the strategy of ``config`` needs what ``model_class`` lacks (its
    ``carries_state``, ``recurrent``); a warning when it runs to no purpose."""
    make_strategy(config).check_model(model_class, model_name)
