"""Every option set the library declares (``hybridasr.options``): it registers on a parser
(and the pybin scripts register it), its help shows the declared default, a conf file sets
it, a bad value is a ConfigError naming the option; and no library module but
``hybridasr/cli.py`` imports ``hybridasr.cli``."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from hybridasr.align.ali_tools import CtmOptions
from hybridasr.align.equal_align import EqualAlignOptions
from hybridasr.align.importer import ImportOptions
from hybridasr.cli import add_options, make_parser
from hybridasr.ctc.units import UnitOptions
from hybridasr.data.spec_augment import SpecAugmentOptions
from hybridasr.decode.decoder import DecodeOptions
from hybridasr.decode.forward import ForwardOptions
from hybridasr.decode.loglikes import PriorOptions
from hybridasr.errors import ConfigError
from hybridasr.features.make_feats import FeatureTableOptions, FeatureWriteOptions
from hybridasr.features.options import FbankOptions, FeatureOptions, MfccOptions
from hybridasr.features.utt2dur import Utt2durOptions
from hybridasr.graph.mkgraph import GraphBuildOptions
from hybridasr.datadir.tr_cv import TrCvOptions
from hybridasr.lang.ngram import NgramOptions
from hybridasr.lang.prepare_lang import LangOptions
from hybridasr.models import model_config_from_args, model_options
from hybridasr.options import from_values, option_specs
from hybridasr.tree.build import BuildTreeOptions
from hybridasr.tree.stats import ContextOptions, TreeFeatureOptions, TreeStatsOptions
from hybridasr.train.lr_schedule import lr_schedule_from_args, schedule_options
from hybridasr.train.options import TrainConfig, train_config_from_args
from train_helpers import load_pybin

REPO = Path(__file__).resolve().parents[1]

DECLARED = {  # name: (declared class or spec list, the pybin scripts that register it)
    "mfcc": (MfccOptions, ["compute_mfcc_feats"]),
    "fbank": (FbankOptions, ["compute_fbank_feats"]),
    "feature-table": (FeatureTableOptions, ["compute_mfcc_feats", "compute_fbank_feats"]),
    "feature-write": (FeatureWriteOptions, ["copy_feats"]),
    "model": (model_options(), ["train"]),
    "schedule": (schedule_options(), ["train"]),
    "train": (TrainConfig, ["train"]),
    "spec-augment": (SpecAugmentOptions, ["train"]),
    "forward": (ForwardOptions, ["forward", "frame_error_rate"]),
    "decode": (DecodeOptions, ["decode_faster_mapped"]),
    "priors": (PriorOptions, ["forward"]),
    "import": (ImportOptions, ["import_alignments"]),
    "ctm": (CtmOptions, ["ali_to_phones"]),
    "utt2dur": (Utt2durOptions, ["data_dir_utt2dur"]),
    "tr-cv": (TrCvOptions, ["data_dir_tr_cv"]),
    "lang": (LangOptions, ["prepare_lang"]),
    "ngram": (NgramOptions, ["make_ngram_lm"]),
    "graph": (GraphBuildOptions, ["mkgraph"]),
    "equal-align": (EqualAlignOptions, ["align_equal"]),
    "tree-stats": (TreeStatsOptions, ["acc_tree_stats"]),
    "tree-features": (TreeFeatureOptions, ["acc_tree_stats"]),
    "tree-context": (ContextOptions, ["acc_tree_stats", "build_tree"]),
    "build-tree": (BuildTreeOptions, ["build_tree"]),
    "ctc-units": (UnitOptions, ["train_units"]),
}


def _specs(declared):
    return declared if isinstance(declared, list) else option_specs(declared)


def _parser(declared):
    p = make_parser("t.py", "test")
    add_options(p, declared)
    return p


def _shown(spec) -> str:
    if spec.default is None:  # an Optional option left unset
        return "unset"
    if spec.type is bool:
        return str(spec.default).lower()
    return f'"{spec.default}"' if spec.type is str else str(spec.default)


def _other(spec):
    """A value unlike the default that the option accepts."""
    if spec.choices:
        return next(c for c in spec.choices if c != spec.default)
    if spec.type is bool:
        return not spec.default
    if spec.type is str:
        return "other" if spec.default != "other" else "x"
    if spec.default is None:
        return spec.type(7)
    return spec.default + spec.type(3)


def _conf_value(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("name", DECLARED)
def test_registers_with_declared_defaults_help_and_conf_keys(name, tmp_path):
    declared, scripts = DECLARED[name]
    specs = _specs(declared)
    assert specs
    p = _parser(declared)
    args = p.parse_args([])
    for s in specs:
        assert getattr(args, s.dest) == s.default, s.flag
        assert p._option_string_actions[s.flag].help.endswith(f"(default: {_shown(s)})"), s.flag
        assert s.flag in p.format_help()
    # a conf file sets every option (with - or _ in its name, as Kaldi reads them)
    values = {s.dest: _other(s) for s in specs}
    conf = tmp_path / f"{name}.conf"
    conf.write_text("".join(f"--{s.dest if i % 2 else s.flag[2:]}={_conf_value(values[s.dest])}"
                            f"\n" for i, s in enumerate(specs)))
    args = p.parse_args([f"--config={conf}"])
    for s in specs:
        assert getattr(args, s.dest) == values[s.dest], s.flag
    # and every script that takes these options registers all of them, defaults included
    for script in scripts:
        sp = load_pybin(script).get_parser()
        for s in specs:
            assert s.flag in sp._option_string_actions, (script, s.flag)
            assert sp._option_string_actions[s.flag].default == s.default, (script, s.flag)


@pytest.mark.parametrize("name", DECLARED)
def test_a_bad_value_is_a_config_error_naming_the_option(name):
    declared, _ = DECLARED[name]
    checked = 0
    for s in _specs(declared):
        bad = ("maybe" if s.type is bool else "not-a-number" if s.type in (int, float) else
               "no-such-choice" if s.choices else None)
        if bad is None:
            continue
        with pytest.raises(ConfigError, match=re.escape(s.flag)):
            s.check(bad)
        if not isinstance(declared, list):
            with pytest.raises(ConfigError, match=re.escape(s.flag)):
                from_values(declared, {s.dest: bad})
        checked += 1
    assert checked
    if not isinstance(declared, list):
        with pytest.raises(ConfigError, match="--no-such-option"):
            from_values(declared, {"no_such_option": 1})


@pytest.mark.parametrize("cls,argv,msg", [
    (MfccOptions, ["--num-ceps=40"], "--num-ceps=40"),
    (FbankOptions, ["--window-type=kaiser"], "--window-type=kaiser"),
    (FeatureTableOptions, ["--output-format=htk"], "--output-format=htk"),
    (FeatureTableOptions, ["--channel=-2"], "--channel=-2"),
    (TrainConfig, ["--sync-every=-1"], "--sync-every=-1"),
])
def test_checks_beyond_the_type_name_the_option(cls, argv, msg):
    with pytest.raises(ConfigError, match=re.escape(msg)):
        from_values(cls, _parser(cls).parse_args(argv))


def test_mfcc_and_fbank_differ_where_kaldi_does(kaldi_digits):
    """--use-energy: on for MFCC, off for fbank (Kaldi's defaults); the options one kind
    declares are unknown to the other; Kaldi's own conf/mfcc.conf reads."""
    assert MfccOptions().use_energy is True and FbankOptions().use_energy is False
    assert FeatureOptions.kaldi_defaults("fbank") == FbankOptions()
    assert {s.flag for s in option_specs(MfccOptions)} ^ {s.flag for s in option_specs(
        FbankOptions)} == {"--num-ceps", "--cepstral-lifter", "--use-log-fbank", "--use-power"}
    with pytest.raises(ConfigError, match="--use-power"):
        FeatureOptions.kaldi_defaults("mfcc", use_power=False)
    p = _parser(MfccOptions)
    opts = from_values(MfccOptions, p.parse_args(
        [f"--config={kaldi_digits / 'conf' / 'mfcc.conf'}"]))
    assert opts.sample_frequency == 8000.0 and opts.use_energy is False and opts.dither == 1.0


def test_train_py_resolved_config_holds_the_declared_options(tmp_path):
    """train.py's options as one resolved conf file (what train.conf is) read back into the
    same model, schedule and training settings."""
    from hybridasr.cli import options_dict, save_resolved_config

    train = load_pybin("train")
    pos = ["tr", "cv", "ali", "ali", "exp"]
    p = train.get_parser()
    a = p.parse_args(["--model=lstm", "--proj-size=64", "--lr-schedule=newbob_multi_epoch",
                      "--newbob-multi-num-epochs=3", "--optimizer=sgd", "--seed=4", *pos])
    assert a.seed == 4
    save_resolved_config(p, a, str(tmp_path / "train.conf"))
    text = (tmp_path / "train.conf").read_text()
    assert "--seed=4\n" in text
    b = train.get_parser().parse_args([f"--config={tmp_path / 'train.conf'}", *pos])
    assert options_dict(p, b) == options_dict(p, a)
    assert model_config_from_args(b) == model_config_from_args(a) == {
        "model": "lstm", "num_layers": 3, "hidden_size": 512, "dropout": 0.1, "proj_size": 64}
    assert train_config_from_args(b) == train_config_from_args(a)
    assert lr_schedule_from_args(b).state_dict() == lr_schedule_from_args(a).state_dict()
    assert lr_schedule_from_args(b).update_interval == 3  # unset: the number of epochs


def _imports_cli(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        if any(n == "hybridasr.cli" or n.startswith("hybridasr.cli.") for n in names):
            yield node.lineno


def test_no_library_module_but_cli_imports_the_cli(tmp_path):
    lib = REPO / "hybridasr"
    bad = [f"{p.relative_to(REPO)}:{n}" for p in sorted(lib.rglob("*.py"))
           if p != lib / "cli.py" for n in _imports_cli(p)]
    assert not bad, "library modules importing hybridasr.cli: " + ", ".join(bad)
    probe = tmp_path / "m.py"  # the scan sees every spelling, also inside functions
    probe.write_text("import hybridasr.cli\nfrom hybridasr import cli\n"
                     "def f():\n    from hybridasr.cli import add_options\n")
    assert list(_imports_cli(probe)) == [1, 2, 4]
