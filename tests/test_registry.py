"""The one mechanism for named, configurable parts (``hybridasr.registry``): its merge-and-check,
and a structure check that every model, schedule, batching strategy, objective and feature
type the library defines is an entry of its registry, and that no objective is special-cased
outside its own module and the registry."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import hybridasr
from hybridasr.errors import ConfigError
from hybridasr.options import option, option_specs
from hybridasr.registry import Registry

LIB = Path(hybridasr.__file__).parent


@dataclass
class SmallOptions:
    width: int = option(4, "width", minimum=1)
    shared: float = option(0.5, "one option two parts read")


@dataclass
class LargeOptions:
    depth: int = option(2, "depth", minimum=0)
    shared: float = option(0.5, "one option two parts read")


class Small:
    Options = SmallOptions
    checked = []

    @classmethod
    def check_options(cls, opts):
        cls.checked.append(opts)
        if opts.width == 3:
            raise ConfigError("--width=3: odd")


class Large:
    Options = LargeOptions


def _parts() -> Registry:
    r = Registry("part", "--part")
    r.add("small", Small, summary="the small one")
    r.add("large", Large, summary="the large one")
    return r


def test_options_are_merged_once_and_must_agree():
    r = _parts()
    assert [s.dest for s in r.option_specs()] == ["width", "shared", "depth"]
    assert r.users()["shared"] == ["small", "large"]
    assert list(r) == ["small", "large"] and r["large"] is Large and "tiny" not in r

    @dataclass
    class Clash:
        shared: float = option(0.7, "another default")

    with pytest.raises(ValueError, match="--shared of part 'clash' .*declare it once"):
        r.add("clash", Large, options=Clash)
    assert list(r) == ["small", "large"]  # the registry is as it was
    with pytest.raises(ValueError, match="registered twice"):
        r.add("small", Large)


def test_the_merge_and_check():
    r = _parts()
    assert r.options("small", {"width": "7", "depth": 9}) == SmallOptions(7, 0.5)
    with pytest.raises(ConfigError, match="part options: unknown key.*colour"):
        r.options("small", {"colour": 1})
    with pytest.raises(ConfigError, match="--width=0: must be >= 1"):
        r.options("small", {"width": 0})
    with pytest.raises(ConfigError, match="unknown --part=tiny .*small, large"):
        r.options("tiny", {})
    Small.checked.clear()
    with pytest.raises(ConfigError, match="--width=3"):  # the builder's own check
        r.options("small", {"width": 3})
    # another entry's values: dropped, or (check_others) checked as well
    assert r.options("large", {"width": 3}) == LargeOptions()
    with pytest.raises(ConfigError, match="--width=3"):
        r.options("large", {"width": 3}, check_others=True)


def test_choice_help_shares_a_summary():
    r = _parts()
    r.add("medium", Large, summary="the large one")
    r.add("bare", Large)
    assert r.choice_help() == "small: the small one | large | medium: the large one | bare"
    assert r.choice_help("; ").startswith("small: the small one; large | medium")


def test_each_command_line_of_its_own():
    @dataclass
    class OtherSmall:
        shared: float = option(0.1, "the same name, another meaning")

    r = Registry("type", "the type", one_command_line=False)
    r.add("a", Small)
    r.add("b", Large, options=OtherSmall)  # allowed: never on one command line
    assert r.options("b", {"shared": 0.3}) == OtherSmall(0.3)
    with pytest.raises(ConfigError, match="unknown key.*width"):
        r.options("b", {"width": 3})


# --- structure: every named part is an entry of its registry ----------------------------
def _classes(package: str):
    """Every public class defined in the modules of ``package`` (not ``_Private`` bases)."""
    pkg = importlib.import_module(package)
    mods = [pkg] + [importlib.import_module(f"{package}.{m.name}")
                    for m in pkgutil.walk_packages(pkg.__path__)]
    return {c for m in mods for _, c in inspect.getmembers(m, inspect.isclass)
            if c.__module__ == m.__name__ and not c.__name__.startswith("_")}


def test_every_registry_is_the_one_mechanism():
    from hybridasr.data.batching import REGISTERED, STRATEGIES
    from hybridasr.features.types import FEATURE_TYPES
    from hybridasr.models.factory import MODELS, ModelChoice
    from hybridasr.train.lr_schedule import SCHEDULES, LrScheduleChoice
    from hybridasr.train.objectives import OBJECTIVES, ObjectiveChoice

    for reg in (MODELS, SCHEDULES, STRATEGIES, OBJECTIVES, FEATURE_TYPES):
        assert type(reg) is Registry and len(reg) >= 2
    assert REGISTERED is STRATEGIES
    for choice, reg in ((ModelChoice, MODELS), (LrScheduleChoice, SCHEDULES),
                        (ObjectiveChoice, OBJECTIVES)):
        (spec,) = option_specs(choice)
        assert spec.choices == tuple(reg) and spec.flag == reg.selector


def test_every_model_schedule_strategy_objective_and_feature_type_is_registered():
    import torch

    from hybridasr.data.batching import STRATEGIES, BatchingStrategy
    from hybridasr.features.options import FeatureOptions
    from hybridasr.features.types import FEATURE_TYPES, FeatureType
    from hybridasr.models.factory import MODELS
    from hybridasr.train.lr_schedule import SCHEDULES
    from hybridasr.train.objective import Objective
    from hybridasr.train.objectives import OBJECTIVES
    from hybridasr.train.schedules.base import LrSchedule

    def registered(reg):
        return {reg[n] for n in reg}

    models = {c for c in _classes("hybridasr.models")
              if issubclass(c, torch.nn.Module) and hasattr(c, "Options")}
    assert models and models <= registered(MODELS)
    schedules = {c for c in _classes("hybridasr.train.schedules")
                 if issubclass(c, LrSchedule) and c is not LrSchedule}
    assert schedules == registered(SCHEDULES)
    assert all(SCHEDULES[n].name == n for n in SCHEDULES)  # a schedule's name is its entry's
    strategies = {c for c in _classes("hybridasr.data.batching")
                  if issubclass(c, BatchingStrategy) and not inspect.isabstract(c)}
    assert strategies == registered(STRATEGIES)
    objectives = {c for c in _classes("hybridasr.train")
                  if issubclass(c, Objective) and not inspect.isabstract(c)}
    # a subclass that only varies its parent's loss (label smoothing) is built by the parent
    assert {c for c in objectives if not any(issubclass(c, r) and c is not r
                                              for r in registered(OBJECTIVES))} == \
        registered(OBJECTIVES)
    types = {c for c in _classes("hybridasr.features")
             if issubclass(c, FeatureType) and c is not FeatureType}
    assert types == registered(FEATURE_TYPES)
    for name in FEATURE_TYPES:  # the options say their type's name
        assert FEATURE_TYPES.options_class(name).kind == name
    kinds = {c.kind for c in _classes("hybridasr.features")
             if issubclass(c, FeatureOptions) and c.kind}
    assert kinds == set(FEATURE_TYPES)


def test_the_objective_options_are_the_registered_ones():
    from hybridasr.train.objectives import OBJECTIVES, ObjectiveChoice, ObjectiveOptions

    flat = {s.dest for s in option_specs(ObjectiveOptions)}
    assert flat == {s.dest for s in OBJECTIVES.option_specs(ObjectiveChoice)}
