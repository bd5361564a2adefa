"""The one way options are declared: dataclass fields made with ``option()``.

A library module that takes settings declares them as a dataclass whose fields are
``option(default, help, ...)``; the default is written there and nowhere else. The command
line (``hybridasr.cli.add_options``), the conf-file keys (the same names: a Kaldi conf file is
command-line options, one per line) and ``--help`` are generated from the declaration, and
``from_values`` turns parsed options (a namespace or a dict) back into the dataclass, checking
``choices`` and the range (``minimum``/``maximum`` inclusive, ``above``: strictly greater)
with an error that names the option. Library modules never import
``hybridasr.cli``; only ``pybin/`` scripts build parsers.

    @dataclass
    class ScheduleOptions:
        learning_rate: float = option(0.001, "initial learning rate")
        max_iters: int = option(20, "most epochs", minimum=1)
        halving_factor: float = option(0.5, "rate factor", above=0.0, maximum=1.0)
        optimizer: str = option("adam", "optimizer", choices=("adam", "sgd"))

An option's command-line name is its field name with ``-`` for ``_`` (``--learning-rate``),
or ``name=`` when it must differ. Named parts with options of their own (models, schedules,
batching strategies, objectives, feature types) are chosen through ``hybridasr.registry``.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from hybridasr.errors import ConfigError

_META = "hybridasr_option"


@dataclass(frozen=True)
class OptionSpec:
    """One declared option, as the command line and the conf files see it."""
    dest: str  # attribute name (``max_frames``)
    type: type  # int, float, str or bool
    default: Any
    help: str
    choices: Optional[tuple] = None
    minimum: Optional[float] = None  # value >= minimum
    name: str = ""  # command-line name without dashes (``max-frames``)
    maximum: Optional[float] = None  # value <= maximum
    above: Optional[float] = None  # value > above (a bound that is itself not allowed)

    @property
    def flag(self) -> str:
        return f"--{self.name or self.dest.replace('_', '-')}"

    def check(self, value: Any) -> Any:
        """``value`` converted to the option's type and checked; ConfigError names it."""
        try:
            if self.type is bool:
                value = to_bool(value)
            elif value is not None and not isinstance(value, self.type):
                value = self.type(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{self.flag}={value!r}: expected {self.type.__name__}") \
                from None
        if value is None:  # an Optional option left unset
            return value
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{self.flag}={value}: expected one of "
                              f"{', '.join(str(c) for c in self.choices)}")
        if self.minimum is not None and not value >= self.minimum:
            raise ConfigError(f"{self.flag}={value}: must be >= {self.minimum:g}")
        if self.above is not None and not value > self.above:
            raise ConfigError(f"{self.flag}={value}: must be > {self.above:g}")
        if self.maximum is not None and not value <= self.maximum:
            raise ConfigError(f"{self.flag}={value}: must be <= {self.maximum:g}")
        return value


def option(default: Any, help: str, *, choices: Optional[Iterable] = None,
           minimum: Optional[float] = None, maximum: Optional[float] = None,
           above: Optional[float] = None, name: str = ""):
    """A dataclass field that is a command-line / conf-file option; ``minimum`` and
    ``maximum`` bound its value inclusively, ``above`` strictly (``above=0``: > 0)."""
    meta = {_META: {"help": help, "choices": None if choices is None else tuple(choices),
                    "minimum": minimum, "maximum": maximum, "above": above, "name": name}}
    return field(default=default, metadata=meta)


_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


def to_bool(value: Any) -> bool:
    """Kaldi's booleans: ``true``/``false`` (also 1/0, yes/no)."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def option_specs(cls_or_obj) -> List[OptionSpec]:
    """The options a dataclass (or an instance) declares, in field order."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META)
        if meta is None:
            continue
        typ = hints[f.name]
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if len(args) == 1 and type(None) in typing.get_args(typ):  # Optional[T]: unset is None
            typ = args[0]
        typ = {"int": int, "float": float, "str": str, "bool": bool}.get(typ, typ)
        if typ not in (int, float, str, bool):
            raise TypeError(f"{cls.__name__}.{f.name}: options are int, float, str or bool")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out.append(OptionSpec(f.name, typ, default, meta["help"], meta["choices"],
                              meta["minimum"], meta["name"], meta.get("maximum"),
                              meta.get("above")))
    return out


def defaults(cls) -> Dict[str, Any]:
    return {s.dest: s.default for s in option_specs(cls)}


def from_values(cls, values: Any, **overrides):
    """An instance of ``cls`` from a namespace or mapping holding (some of) its options;
    missing ones take their defaults, every value is checked. Keys of a mapping that
    ``cls`` does not declare are an error; a namespace may hold other options."""
    specs = {s.dest: s for s in option_specs(cls)}
    if isinstance(values, Mapping):
        unknown = sorted(set(values) - set(specs))
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown option(s) "
                              f"{', '.join('--' + k.replace('_', '-') for k in unknown)}")
        given = dict(values)
    else:
        given = {k: getattr(values, k) for k in specs if hasattr(values, k)}
    given.update(overrides)
    kwargs = {k: specs[k].check(v) for k, v in given.items() if k in specs}
    other = {k: v for k, v in given.items() if k not in specs}
    return cls(**kwargs, **other)


def parse_int_pair(text: str, flag: str, form: str) -> Tuple[int, int]:
    """``A:B`` of an option such as ``--chunking=size:step``, both integers >= 1;
    ConfigError naming ``flag`` and ``form`` otherwise."""
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise ConfigError(f"{flag}={text!r}: expected {form} (two integers)") from None
    if a < 1 or b < 1:
        raise ConfigError(f"{flag}={text!r}: both numbers of {form} must be >= 1")
    return a, b


def check(obj) -> None:
    """Checks every declared option of ``obj`` (choices, range, type)."""
    for s in option_specs(obj):
        object.__setattr__(obj, s.dest, s.check(getattr(obj, s.dest)))
