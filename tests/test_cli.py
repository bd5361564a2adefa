"""hybridasr.cli: Kaldi-style options for every pybin entry point."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hybridasr.cli import add_bool, make_parser, options_dict, run_main, save_resolved_config
from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.conf import read_config_file

REPO = Path(__file__).resolve().parents[1]


def parser():
    p = make_parser("tool.py", "A test tool.", usage="tool.py [options] <in> <out>",
                    example="tool.py --num-ceps=13 a b")
    p.add_argument("--sample-frequency", type=float, default=16000.0)
    p.add_argument("--num-ceps", type=int, default=13)
    add_bool(p, "--use-energy", True, "use energy")
    p.add_config_file_option("--batching-config", "batching options")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("inp")
    p.add_argument("out")
    return p


def test_underscore_and_dash_spellings(tmp_path):
    a = parser().parse_args(["--sample_frequency=8000", "--num-ceps", "20", "x", "y"])
    assert a.sample_frequency == 8000.0 and a.num_ceps == 20 and (a.inp, a.out) == ("x", "y")


def test_config_first_command_line_wins(tmp_path):
    conf = tmp_path / "a.conf"
    conf.write_text("# comment\n--sample_frequency=8000 # 8k\n\n--num-ceps=20\n"
                    "--use-energy=false")  # no final newline
    a = parser().parse_args([f"--config={conf}", "--num_ceps=5", "x", "y"])
    assert (a.sample_frequency, a.num_ceps, a.use_energy) == (8000.0, 5, False)
    assert a.config == [str(conf)]
    a = parser().parse_args(["--num-ceps=5", "--config", str(conf), "x", "y"])
    assert a.num_ceps == 5  # the command line wins wherever --config stands


def test_kaldi_digits_mfcc_conf_reads(kaldi_digits):
    p = make_parser("m.py", "mfcc")
    for e in read_config_file(str(kaldi_digits / "conf" / "mfcc.conf")):
        p.add_argument(f"--{e.name}")
    a = p.parse_args([f"--config={kaldi_digits / 'conf' / 'mfcc.conf'}"])
    assert a.sample_frequency == "8000"


def test_unknown_option_in_config_names_file_and_line(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("--num-ceps=20\n\n--no-such-option=1\n")
    with pytest.raises(ConfigError, match=rf"{conf}:3: unknown option --no-such-option"):
        parser().parse_args([f"--config={conf}", "x", "y"])


def test_booleans():
    p = parser()
    assert p.parse_args(["x", "y"]).use_energy is True
    assert p.parse_args(["--use-energy=false", "x", "y"]).use_energy is False
    assert p.parse_args(["x", "y", "--use-energy"]).use_energy is True
    with pytest.raises(SystemExit):
        p.parse_args(["--use-energy=maybe", "x", "y"])


def test_extra_config_file_option(tmp_path):
    main_conf, batch_conf = tmp_path / "m.conf", tmp_path / "b.conf"
    main_conf.write_text("--batch-size=2\n--num-ceps=7\n")
    batch_conf.write_text("--batch_size=64\n")
    a = parser().parse_args([f"--config={main_conf}", "--batching-config", str(batch_conf),
                             "x", "y"])
    assert a.batch_size == 64 and a.num_ceps == 7  # read after --config
    assert a.batching_config == str(batch_conf)
    a = parser().parse_args([f"--batching-config={batch_conf}", "--batch-size=3", "x", "y"])
    assert a.batch_size == 3
    batch_conf.write_text("--num-ceps=1\n--mystery=2\n")
    with pytest.raises(ConfigError, match=rf"{batch_conf}:2: unknown option --mystery"):
        parser().parse_args([f"--batching-config={batch_conf}", "x", "y"])


def test_save_resolved_config(tmp_path):
    p = parser()
    a = p.parse_args(["--num-ceps=9", "--use-energy=false", "x", "y"])
    out = tmp_path / "exp" / "tool.conf"
    save_resolved_config(p, a, str(out))
    values = {e.name: e.value for e in read_config_file(str(out))}
    assert values == {"sample-frequency": "16000.0", "num-ceps": "9", "use-energy": "false",
                      "batch-size": "1"}
    assert out.read_text().startswith("# resolved configuration of: ")
    again = parser().parse_args([f"--config={out}", "x", "y"])
    assert options_dict(p, again) == options_dict(p, a)


def test_resolved_config_with_extra_config_reads_back(tmp_path):
    batch_conf = tmp_path / "b.conf"
    batch_conf.write_text("--batch-size=64\n")
    p = parser()
    a = p.parse_args([f"--batching-config={batch_conf}", "x", "y"])
    save_resolved_config(p, a, str(tmp_path / "r.conf"))
    assert "batching-config" not in (tmp_path / "r.conf").read_text()
    again = parser().parse_args([f"--config={tmp_path / 'r.conf'}", "x", "y"])
    assert again.batch_size == 64
    assert options_dict(p, again) == options_dict(p, a)
    assert "batching_config" not in options_dict(p, a) and "config" not in options_dict(p, a)


def test_bare_boolean_before_positional():
    a = parser().parse_args(["--use-energy", "x", "y"])
    assert a.use_energy is True and (a.inp, a.out) == ("x", "y")
    a = parser().parse_args(["--use_energy", "--num-ceps=3", "x", "y"])
    assert a.use_energy is True and a.num_ceps == 3
    # Kaldi never takes the next word as a boolean's value: "false" is the first positional
    a = parser().parse_args(["--use-energy", "false", "y"])
    assert a.use_energy is True and (a.inp, a.out) == ("false", "y")
    with pytest.raises(SystemExit):  # one positional too many
        parser().parse_args(["--use-energy", "false", "x", "y"])


def test_bare_boolean_in_config_file_and_after_double_dash(tmp_path):
    conf = tmp_path / "b.conf"
    conf.write_text("--use-energy\n")
    p = parser()
    a = p.parse_args(["--use-energy=false", f"--config={conf}", "x", "y"])
    assert a.use_energy is False  # the command line wins
    a = p.parse_args([f"--config={conf}", "x", "y"])
    assert a.use_energy is True
    a = parser().parse_args(["--use-energy=false", "--", "--use-energy", "--config=c"])
    assert a.use_energy is False and (a.inp, a.out) == ("--use-energy", "--config=c")
    assert a.config == []


def test_bare_boolean_registered_on_an_argument_group():
    p = make_parser("tool.py", "groups")
    g = p.add_argument_group("features")
    add_bool(g, "--norm-vars", False, "variance normalisation")
    p.add_argument("inp")
    assert "--norm-vars" in p.bool_options()
    a = p.parse_args(["--norm-vars", "data/train"])
    assert a.norm_vars is True and a.inp == "data/train"
    assert p.parse_args(["--norm_vars=false", "d"]).norm_vars is False


def test_help_shows_usage_and_example(capsys):
    with pytest.raises(SystemExit) as e:
        parser().parse_args(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "tool.py [options] <in> <out>" in out and "e.g.: tool.py --num-ceps=13 a b" in out


def test_run_main_prints_command_line_and_turns_errors_into_exit_1(tmp_path):
    script = tmp_path / "t.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from hybridasr.cli import run_main\n"
        "from hybridasr.errors import FormatError\n"
        "import logging\n"
        "def main(argv=None):\n"
        "    logging.getLogger('t').info('working')\n"
        "    if sys.argv[1] == 'bad':\n"
        "        raise FormatError('data/x/text:3: broken')\n"
        "    return 0\n"
        "run_main(main)\n")
    r = subprocess.run([sys.executable, str(script), "bad", "a b"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
    err = r.stderr.splitlines()
    assert err[0] == "t.py bad 'a b'"
    assert "INFO t: working" in err[1]
    assert "ERROR" in err[2] and "data/x/text:3: broken" in err[2]
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, str(script), "good"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0


_VERBOSE_SCRIPT = (
    "import logging, sys\n"
    "sys.path.insert(0, {repo!r})\n"
    "from hybridasr.cli import make_parser, run_main\n"
    "def main(argv=None):\n"
    "    p = make_parser('v.py', 'verbosity')\n"
    "    p.add_argument('words', nargs='*')\n"
    "    p.parse_args(argv)\n"
    "    logging.getLogger('v').debug('detail')\n"
    "    logging.getLogger('v').info('summary')\n"
    "run_main(main)\n")


@pytest.mark.parametrize("args,debug", [
    ([], False), (["--verbose=0"], False), (["--verbose=1"], True), (["--verbose", "1"], True),
    (["--verbose=3"], True), (["--", "--verbose=1"], False), (["conf"], True)])
def test_run_main_debug_logging_follows_parsed_verbose(tmp_path, args, debug):
    script = tmp_path / "v.py"
    script.write_text(_VERBOSE_SCRIPT.format(repo=str(REPO)))
    conf = tmp_path / "v.conf"
    conf.write_text("--verbose=2\n")
    args = [f"--config={conf}" if a == "conf" else a for a in args]
    r = subprocess.run([sys.executable, str(script)] + args, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "INFO v: summary" in r.stderr
    assert ("DEBUG v: detail" in r.stderr) is debug


def test_run_main_in_process(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["prog.py", "--x=1"])

    def main(argv=None):
        raise FormatError("f.scp:2: bad")

    with pytest.raises(SystemExit) as e:
        run_main(main)
    assert e.value.code == 1
    assert capsys.readouterr().err.startswith("prog.py --x=1\n")
