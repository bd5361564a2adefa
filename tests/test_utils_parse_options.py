"""utils/parse_options.sh: Kaldi's option semantics, from a tiny script that sources it."""
from __future__ import annotations

import subprocess

import pytest

SCRIPT = """#!/usr/bin/env bash
foo_bar=default
use_gpu=false
nj=4
help_message="Usage: script.sh [options] <dir>\\n  --foo-bar <x>"
. {parse_options}
set -u
echo "foo_bar=$foo_bar"
echo "use_gpu=$use_gpu"
echo "nj=$nj"
echo "rest=$*"
"""


@pytest.fixture
def script(tmp_path, repo_dir):
    p = tmp_path / "script.sh"
    p.write_text(SCRIPT.format(parse_options=repo_dir / "utils" / "parse_options.sh"))
    p.chmod(0o755)
    return p


def run(script, *args, cwd=None):
    r = subprocess.run([str(script), *args], capture_output=True, text=True, cwd=cwd,
                       timeout=30)
    values = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    return r, values


def test_space_and_equals_forms_set_dashed_names(script):
    r, v = run(script, "--foo-bar", "a b", "--nj=8", "x", "--not-an-option")
    assert r.returncode == 0, r.stderr
    assert v == {"foo_bar": "a b", "use_gpu": "false", "nj": "8", "rest": "x --not-an-option"}


def test_underscore_spelling_and_end_of_options(script):
    r, v = run(script, "--foo_bar", "y", "--", "--nj", "3")
    assert r.returncode == 0, r.stderr
    assert v["foo_bar"] == "y" and v["nj"] == "4" and v["rest"] == "--nj 3"


def test_unknown_option_is_an_error(script):
    r, v = run(script, "--no-such-thing", "1", "dir")
    assert r.returncode != 0
    assert "invalid option --no-such-thing" in r.stderr
    assert "rest" not in v  # the script stopped


def test_booleans_take_only_true_or_false(script):
    r, v = run(script, "--use-gpu", "true")
    assert r.returncode == 0 and v["use_gpu"] == "true"
    r, _ = run(script, "--use-gpu", "yes")
    assert r.returncode != 0
    assert 'expected "true" or "false": --use-gpu yes' in r.stderr
    r, _ = run(script, "--use-gpu=1")
    assert r.returncode != 0


def test_missing_value_is_an_error(script):
    r, _ = run(script, "--nj")
    assert r.returncode != 0 and "--nj needs a value" in r.stderr


def test_config_is_read_first_and_command_line_wins(script, tmp_path):
    conf = tmp_path / "opts.conf"
    conf.write_text("# a Kaldi shell config\nnj=16\nfoo_bar=from_config\n")
    r, v = run(script, "--foo-bar", "cli", "--config", str(conf), "d")
    assert r.returncode == 0, r.stderr
    assert v["nj"] == "16" and v["foo_bar"] == "cli" and v["rest"] == "d"
    r, v = run(script, f"--config={conf}")
    assert v["foo_bar"] == "from_config"
    r, _ = run(script, "--config", str(tmp_path / "absent.conf"))
    assert r.returncode != 0 and "missing config" in r.stderr


def test_help_prints_help_message(script):
    r, v = run(script, "--help")
    assert r.returncode == 0
    assert "Usage: script.sh [options] <dir>\n  --foo-bar <x>" in r.stderr
    assert not v


def test_empty_cmd_is_an_error(tmp_path, repo_dir):
    p = tmp_path / "c.sh"
    p.write_text(f"cmd=run.pl\n. {repo_dir / 'utils' / 'parse_options.sh'}\necho ok\n")
    r = subprocess.run(["bash", str(p), "--cmd", ""], capture_output=True, text=True)
    assert r.returncode != 0 and "empty argument to --cmd" in r.stderr
