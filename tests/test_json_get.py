"""pybin/json_get.py and hybridasr.utils.json_value: how shell scripts read JSON (no grep)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from hybridasr.errors import FormatError
from hybridasr.utils.json_value import json_value, read_json, shell_word

DOC = {"done": True, "epoch": 3, "best": "nnet/epoch2.nnet", "lr": 0.25, "none": None,
       "history": [{"epoch": 0, "cv_loss": 4.5}, {"epoch": 1, "cv_loss": 3.25}],
       "schedule": {"halving": False, "name": "newbob"}}


def test_keys_and_indices():
    assert json_value(DOC, "done") is True
    assert json_value(DOC, "history.-1.cv_loss") == 3.25
    assert json_value(DOC, "history.0.epoch") == 0
    assert json_value(DOC, "schedule.name") == "newbob"
    assert [shell_word(json_value(DOC, k)) for k in ("done", "schedule.halving", "epoch", "lr",
                                                     "none", "best", "history.0")] == \
        ["true", "false", "3", "0.25", "null", "nnet/epoch2.nnet", '{"cv_loss": 4.5, "epoch": 0}']


@pytest.mark.parametrize("key, message", [
    ("nope", "no key 'nope' (the top level has no 'nope'; it has: best, done, epoch"),
    ("schedule.x", "no key 'schedule.x' (schedule has no 'x'; it has: halving, name)"),
    ("history.2.epoch", "no key 'history.2.epoch' (history is a list of 2: '2' is not an "
                        "index into it)"),
    ("history.last", "no key 'history.last' (history is a list of 2: 'last' is not an index"),
    ("done.x", "no key 'done.x' (done is true, not an object or a list)"),
])
def test_a_missing_key_is_an_error_naming_it(key, message):
    with pytest.raises(FormatError, match="^state.json: " + re.escape(message)):
        json_value(DOC, key, "state.json")


def test_bad_files(tmp_path):
    with pytest.raises(FormatError, match="missing.json: cannot read"):
        read_json(str(tmp_path / "missing.json"))
    (tmp_path / "torn.json").write_text('{"done": tr')
    with pytest.raises(FormatError, match="torn.json: not valid JSON"):
        read_json(str(tmp_path / "torn.json"))


def test_the_command(tmp_path, repo_dir, env_with_path):
    (tmp_path / "s.json").write_text(json.dumps(DOC))
    run = [sys.executable, str(repo_dir / "pybin/json_get.py"), str(tmp_path / "s.json")]
    p = subprocess.run([*run, "done", "history.-1.cv_loss", "best"], env=env_with_path,
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == "true\n3.25\nnnet/epoch2.nnet\n", p.stderr
    assert p.stderr == ""  # a query: no command line echoed into the calling script's output
    p = subprocess.run([*run, "done", "nope"], env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == "" and "no key 'nope'" in p.stderr


def test_no_shell_script_greps_json_or_logs_for_values(repo_dir):
    """Values come from JSON through json_get.py (or from small Kaldi-style files), never from
    grep/sed/awk over JSON or over the JSON lines of a log."""
    bad = re.compile(r"(grep|sed|awk)\b[^|]*(\.json\b|'\^\{'|\"[a-z_]+\": )")
    scripts = [p for d in ("steps", "steps/nnet", "utils", "utils/data", "egs/digits/s5",
                           "egs/kaldi_dir/s5", "egs/kaldi_dir/s5/local")
               for p in sorted((repo_dir / d).glob("*.sh"))]
    assert len(scripts) > 10
    offenders = [f"{p.relative_to(repo_dir)}:{i}: {line.strip()}" for p in scripts
                 for i, line in enumerate(p.read_text().splitlines(), 1) if bad.search(line)]
    assert offenders == []
