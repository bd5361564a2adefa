"""The one mechanism for named, configurable parts: models (``--model``), learning-rate
schedules (``--lr-schedule``), batching strategies (``--seq-ordering``), objectives
(``--objective``) and feature types (``compute_<type>_feats.py``).

A ``Registry`` maps a name to an entry: its builder (a class, or a function), its options
dataclass (``hybridasr.options.option`` fields; by default the builder's ``Options``) and a
one-line summary for the selector's help. Adding a part is its module and one line::

    MODELS = Registry("model", "--model")
    MODELS.add("blstm", Blstm, summary="bidirectional LSTM")

Everything else is read from the entries:

- ``option_specs(*leading)``: the options of the leading classes (the selector, options every
  entry shares), then every entry's, each once, for the command line, the conf files and
  ``--help``. An option two entries declare must be declared alike (``ValueError`` naming
  both; declare it once and use that declaration in both).
- ``options(name, values)``: the one merge-and-check, from flat values (a mapping: a conf
  dict, a saved config; or a parsed namespace) to the options instance of entry ``name``: a
  key no entry declares is a ``ConfigError``, the keys of other entries are dropped (with
  ``check_others`` their values are checked too), every value is checked (type, choices,
  range), then the builder's ``check_options(options)`` when it has one.
- ``choice_help()``: the names and summaries, for the selector's help.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from hybridasr.errors import ConfigError
from hybridasr.options import OptionSpec, from_values, option_specs


@dataclass
class NoOptions:
    """The options of an entry that has none of its own."""


@dataclass(frozen=True)
class Entry:
    name: str
    build: Any  # the class (or function) that makes the part
    options: type  # its options dataclass
    summary: str = ""  # what it is, for the selector's help


class Registry:
    """Named parts of one kind (``what``: "model") chosen by ``selector`` ("--model").
    ``one_command_line``: every entry's options are on one command line (``option_specs``),
    so an option two entries declare must be declared alike; false where each entry has a
    command line of its own (the feature types: fbank's ``--use-energy`` is not MFCC's)."""

    def __init__(self, what: str, selector: str, one_command_line: bool = True):
        self.what, self.selector = what, selector
        self.one_command_line = one_command_line
        self._entries: Dict[str, Entry] = {}

    # --- declaring --------------------------------------------------------------------
    def add(self, name: str, build: Any, options: Optional[type] = None,
            summary: str = "") -> Any:
        """Registers ``build`` under ``name`` (the registry line); returns ``build``. Its
        options: ``options``, else ``build.Options``, else none. A name taken by another
        builder, or an option declared unlike another entry's, is a ``ValueError``."""
        if options is None:
            options = getattr(build, "Options", None) or NoOptions
        old = self._entries.get(name)
        if old is not None and getattr(old.build, "__qualname__", old.build) != \
                getattr(build, "__qualname__", build):
            raise ValueError(f"{self.what} {name!r} is registered twice "
                             f"({_where(old.build)}, {_where(build)})")
        self._entries[name] = Entry(name, build, options, summary)
        try:
            if self.one_command_line:
                self.option_specs()  # two declarations of one option must agree
        except ValueError:
            if old is None:
                del self._entries[name]
            else:
                self._entries[name] = old
            raise
        return build

    def register(self, name: str, options: Optional[type] = None,
                 summary: str = "") -> Callable[[Any], Any]:
        """``add`` as a class decorator."""
        return lambda build: self.add(name, build, options, summary)

    def remove(self, name: str) -> None:
        """Forgets ``name`` (a plugin or a test's part going away)."""
        self._entries.pop(name, None)

    # --- reading ----------------------------------------------------------------------
    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> Any:
        """The builder of ``name`` (KeyError when unknown; ``entry`` says it to the user)."""
        return self._entries[name].build

    def names(self) -> List[str]:
        return list(self._entries)

    def items(self):
        return [(n, e.build) for n, e in self._entries.items()]

    def entries(self) -> List[Entry]:
        return list(self._entries.values())

    def entry(self, name: str, note: str = "") -> Entry:
        """The entry ``name``; a ``ConfigError`` naming the selector and the known names."""
        if name not in self._entries:
            raise ConfigError(f"unknown {self.selector}={name} (expected one of: "
                              f"{', '.join(self._entries)}{note})")
        return self._entries[name]

    def options_class(self, name: str) -> type:
        return self.entry(name).options

    def choice_help(self, sep: str = " | ") -> str:
        """``name: summary`` of each entry; consecutive entries with one summary share it
        (``smbr | mmi: ...``); an entry without one is its name."""
        parts: List[List[Any]] = []
        for e in self._entries.values():
            if parts and e.summary and parts[-1][1] == e.summary:
                parts[-1][0].append(e.name)
            else:
                parts.append([[e.name], e.summary])
        return sep.join(" | ".join(names) + (f": {summary}" if summary else "")
                        for names, summary in parts)

    # --- options ----------------------------------------------------------------------
    def users(self) -> Dict[str, List[str]]:
        """Each entry option's name -> the entries that declare it (registration order)."""
        out: Dict[str, List[str]] = {}
        for e in self._entries.values():
            for s in option_specs(e.options):
                out.setdefault(s.dest, []).append(e.name)
        return out

    def option_specs(self, *leading: type) -> List[OptionSpec]:
        """The options of ``leading`` (the selector's class, shared options), then those of
        every entry, each once; a second declaration of one option must be the same."""
        if not self.one_command_line:
            raise TypeError(f"the {self.what}s have a command line each: no option list of "
                            f"them all")
        specs: Dict[str, OptionSpec] = {}
        owner: Dict[str, List[str]] = {}
        sources = [(cls.__name__, cls) for cls in leading] + \
            [(repr(e.name), e.options) for e in self._entries.values()]
        for who, cls in sources:
            for s in option_specs(cls):
                if s.dest in specs and specs[s.dest] != s:
                    raise ValueError(f"option {s.flag} of {self.what} {who} differs from the "
                                     f"one {', '.join(owner[s.dest])} declare: declare it once "
                                     f"and use that declaration in both")
                specs.setdefault(s.dest, s)
                owner.setdefault(s.dest, []).append(who)
        return list(specs.values())

    def options(self, name: str, values: Any, *, check_others: bool = False,
                known: tuple = ()) -> Any:
        """The options instance of entry ``name`` from flat ``values`` (see the module's
        docstring); ``known``: other option names a mapping may hold (the selector's)."""
        entry = self.entry(name)
        if isinstance(values, Mapping):
            every = set(known) | {s.dest for e in ([entry] if not self.one_command_line
                                                  else self._entries.values())
                                  for s in option_specs(e.options)}
            unknown = sorted(set(values) - every)
            if unknown:
                raise ConfigError(f"{self.what} options: unknown key(s) "
                                  f"{', '.join(unknown)}")
            get = values.get
            has = values.__contains__
        else:
            get = lambda k: getattr(values, k)  # noqa: E731
            has = lambda k: hasattr(values, k)  # noqa: E731
        others = [e for e in self._entries.values() if e is not entry] if check_others else []
        chosen = None
        for e in [entry] + others:
            opts = from_values(e.options, {s.dest: get(s.dest) for s in option_specs(e.options)
                                           if has(s.dest)})
            check = getattr(e.build, "check_options", None)
            if check is not None:
                check(opts)
            chosen = opts if e is entry else chosen
        return chosen


def _where(build: Any) -> str:
    return f"{getattr(build, '__module__', '?')}.{getattr(build, '__qualname__', build)}"
