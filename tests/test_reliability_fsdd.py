"""Egs/fsdd/s5/run.sh has the checks of egs/digits/s5 (shared in utils/recipe_lib.sh):
bad --stage/--stop-stage/--nj fail before any stage, a second run in the same dir exits naming
the first, and a run with another corpus than the one data/ was made from is refused naming
--restart true, which starts over. None of these runs a stage."""
from __future__ import annotations

import fcntl
import subprocess

import pytest

from test_fsdd_recipe import REPO, recipe_copy

CASES = [(["--stage", "7"], "the stages are 0..6"),
         (["--stop-stage", "x"], "--stop-stage must be a whole number, not 'x'"),
         (["--stage", "3", "--stop-stage", "1"], "--stage 3 is after --stop-stage 1"),
         (["--nj", "0"], "--nj is a number of jobs, at least 1")]


@pytest.fixture(scope="module")
def s5(tmp_path_factory):
    return recipe_copy(tmp_path_factory.mktemp("fsdd_checks") / "s5")


@pytest.fixture(scope="module")
def env(env_with_path):
    return dict(env_with_path, HYBRIDASR_ROOT=str(REPO))


def run(s5, env, *args):
    return subprocess.run(["./run.sh", *args], cwd=s5, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_stage_options_fail_before_any_stage(s5, env, args, message):
    p = run(s5, env, *args)
    assert p.returncode == 1 and message in p.stderr, p.stderr
    assert "===== stage" not in p.stdout and not (s5 / "data").exists()


def test_a_second_run_exits_naming_the_first(s5, env):
    with open(s5 / ".run.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (s5 / ".run.lock.who").write_text("pid 4242: ./run.sh --stage 3\n")
        p = run(s5, env, "--stage", "6")
    assert p.returncode == 1
    assert f"another run is using {s5}: pid 4242: ./run.sh --stage 3" in p.stderr


def test_another_corpus_is_refused_naming_restart(s5, env, tmp_path):
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    # stage 6 alone (the summary of nothing): only the checks before it matter here
    p = run(s5, env, "--recordings", recordings, "--stage", "6")
    made = (s5 / "data/recipe_inputs.txt").read_text()
    assert "corpus_seed=777 " in made and "train_speakers=jackson,nicolas,theo,george" in made
    (s5 / "exp/keep").mkdir(parents=True, exist_ok=True)
    p = run(s5, env, "--recordings", recordings, "--stage", "6", "--corpus-seed", "1")
    assert p.returncode == 1
    assert "before: corpus_seed=777" in p.stderr and "now:    corpus_seed=1" in p.stderr
    assert "run with --restart true" in p.stderr and "===== stage" not in p.stdout
    assert (s5 / "data/recipe_inputs.txt").read_text() == made and (s5 / "exp/keep").is_dir()
    p = run(s5, env, "--recordings", recordings, "--stage", "6", "--corpus-seed", "1",
            "--restart", "true")
    assert "--restart true: removing data exp mfcc" in p.stdout
    assert "corpus_seed=1 " in (s5 / "data/recipe_inputs.txt").read_text()
    assert not (s5 / "exp/keep").exists()
