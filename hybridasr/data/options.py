"""The data pipeline's options as declared (the feature transform's ``TransformOptions``,
SpecAugment's ``SpecAugmentOptions``, ``DataConfig``'s, every registered batching strategy's), for a ``pybin/`` script to register with ``hybridasr.cli.add_options``::

    for title, declared in data_option_sets():
        add_options(p, declared, title)
    p.add_config_file_option(*BATCHING_CONFIG)

``BATCHING_CONFIG``: ``--batching-config=conf/batching/<strategy>.conf``, read after
``--config``, before the command line. ``data_config_from_args(args)`` turns the parsed
namespace into a ``DataConfig``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Tuple

from hybridasr.data.batching.registry import common_option_notes, seq_ordering_help
from hybridasr.data.config import DataConfig, strategy_specs
from hybridasr.data.spec_augment import SpecAugmentOptions
from hybridasr.features.cmvn import parse_cmvn_opts
from hybridasr.features.transform import TransformOptions
from hybridasr.options import OptionSpec, option, option_specs

BATCHING_CONFIG = ("--batching-config", "config file of batching options (e.g. "
                   "conf/batching/<strategy>.conf); read after --config, the command line "
                   "wins")


@dataclass
class CmvnOpts:
    cmvn_opts: str = option("", 'Kaldi cmvn_opts string, e.g. "--norm-vars=true"; overrides '
                                "--norm-means/--norm-vars when given")


def data_option_sets() -> List[Tuple[str, List[OptionSpec]]]:
    """(title, options) of the feature transform, of SpecAugment and of batching: the common
    options, with what the strategies say about them, and every registered strategy's own."""
    features = []
    for s in option_specs(TransformOptions):
        features.append(s)
        if s.dest == "norm_vars":
            features.extend(option_specs(CmvnOpts))
    batching = []
    for s in option_specs(DataConfig):
        if s.dest == "seq_ordering":
            s = dataclasses.replace(s, help=f"{s.help}: {seq_ordering_help()}")
        elif common_option_notes(s.dest):
            s = dataclasses.replace(s, help=f"{s.help}; {common_option_notes(s.dest)}")
        batching.append(s)
        if s.dest == "seq_ordering":
            batching.extend(strategy_specs(with_help=True))
    return [("features (rebuilt at decode time from the model)", features),
            ("SpecAugment masking (training batches only)", option_specs(SpecAugmentOptions)),
            ("batching", batching)]


def data_config_from_args(args) -> DataConfig:
    """The ``DataConfig`` of parsed options (``--cmvn-opts`` wins over ``--norm-means`` and
    ``--norm-vars``): its strategy is built here, once."""
    names = [s.dest for s in option_specs(TransformOptions)] + \
        [s.dest for s in option_specs(SpecAugmentOptions)] + \
        [s.dest for s in option_specs(DataConfig)] + [s.dest for s in strategy_specs()]
    d = {name: getattr(args, name) for name in names if hasattr(args, name)}
    cmvn_opts = getattr(args, "cmvn_opts", "") or ""
    if cmvn_opts.strip():
        d.update(parse_cmvn_opts(cmvn_opts, source="--cmvn-opts"))
    return DataConfig.from_dict(d)
