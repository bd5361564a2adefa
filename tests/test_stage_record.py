"""hybridasr.recipe.stage_record: a stage's record of what it was made from, the
status a rerun gets (done, new, partial, changed), and pybin/stage_record.py's exits."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hybridasr.errors import FormatError
from hybridasr.recipe import stage_record as sr


def test_statuses(tmp_path):
    rec, f = str(tmp_path / "stage1.json"), tmp_path / "wav.scp"
    f.write_text("a x.wav\n")
    assert sr.begin(rec, "1", {"feat_type": "mfcc"}, [str(f)])[0] == sr.NEW
    assert not json.load(open(rec))["complete"]
    status, why = sr.begin(rec, "1", {"feat_type": "mfcc"}, [str(f)])
    assert status == sr.PARTIAL and "never finished" in why[0]  # killed before finish
    sr.finish(rec)
    assert sr.begin(rec, "1", {"feat_type": "mfcc"}, [str(f)])[0] == sr.DONE
    # notes are recorded, not compared
    assert sr.begin(rec, "1", {"feat_type": "mfcc"}, [str(f)], {"opts": "x"})[0] == sr.DONE
    f.write_text("a x.wav\nb y.wav\n")
    os.utime(f, (1e9, 1e9))
    status, why = sr.begin(rec, "1", {"feat_type": "fbank"}, [str(f), str(tmp_path / "no")])
    assert status == sr.CHANGED
    assert "  option feat_type: before 'mfcc', now 'fbank'" in why
    assert any(w.startswith(f"  input {f}: size 8 -> 16, modified ") for w in why)
    assert f"  input {tmp_path / 'no'}: new" in why


def test_a_directory_is_its_files(tmp_path):
    (tmp_path / "ali/log").mkdir(parents=True)
    (tmp_path / "ali/ali.1.gz").write_bytes(b"x")
    (tmp_path / "ali/log/a.log").write_text("y")
    assert sorted(sr.describe_inputs([str(tmp_path / "ali")])) == [
        str(tmp_path / "ali/ali.1.gz"), str(tmp_path / "ali/log/a.log")]


def test_a_damaged_record_names_itself(tmp_path):
    rec = tmp_path / "stage0.json"
    rec.write_text('{"options": ')
    with pytest.raises(FormatError, match=f"{rec}: not a stage record .*remove it to redo"):
        sr.begin(str(rec), "0", {}, [])
    with pytest.raises(FormatError, match="no stage record to finish"):
        sr.finish(str(tmp_path / "none.json"))


def test_cli(tmp_path, repo_dir, env_with_path):
    tool = [sys.executable, str(repo_dir / "pybin/stage_record.py")]
    rec = str(tmp_path / "r.json")

    def run(*args):
        return subprocess.run([*tool, *args], env=env_with_path, capture_output=True,
                              text=True, timeout=60)

    p = run("--note=train_opts=--max-iters=2", "begin", rec, "train_opts2=--lr=1", rec)
    assert p.returncode == 0 and p.stdout == "new\n"
    assert json.load(open(rec))["notes"] == {"train_opts": "--max-iters=2"}
    assert json.load(open(rec))["options"] == {"train_opts2": "--lr=1"}
    p = run("finish", str(tmp_path / "other.json"))
    assert p.returncode == 1 and "other.json: no stage record to finish" in p.stderr
