"""The recipe's options are checked before any stage runs: a stage range that runs
nothing, a non-number, --nj 0 or an unknown feature type fails at once naming the option,
instead of exiting 0 having done nothing or failing deep inside a step."""
from __future__ import annotations

import subprocess

import pytest

from test_recipe_e2e import make_recipe_copy

CASES = [
    (["--stage", "9"], "the stages are 0..5"),
    (["--stage", "abc"], "--stage must be a whole number, not 'abc'"),
    (["--stage", "4", "--stop-stage", "2"], "--stage 4 is after --stop-stage 2"),
    (["--nj", "0"], "--nj is a number of jobs, at least 1"),
    (["--nj", "two"], "--nj must be a whole number"),
    (["--feat-type", "plp"], "--feat-type is mfcc, fbank or auto, not 'plp'"),
    (["--speed-perturb", "yes"], "--speed-perturb is true, false or auto, not 'yes'"),
    (["--seq-epochs", "x"], "--seq-epochs is a number of epochs or auto"),
    (["--ali", "none", "--flat-objective", "em"], "--flat-objective is gmm, fullsum or ce, not 'em'"),
]


@pytest.fixture(scope="module")
def recipe(tmp_path_factory, repo_dir):
    return make_recipe_copy(repo_dir, tmp_path_factory.mktemp("bad_options") / "s5")


@pytest.mark.parametrize("args,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_option_fails_before_any_stage(recipe, env_with_path, repo_dir, kaldi_digits,
                                           args, message):
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits), *args], cwd=recipe,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
    assert "===== stage" not in p.stdout
    assert not (recipe / "data").exists()


def test_second_run_in_the_same_dir_exits_naming_the_first(recipe, env_with_path, repo_dir,
                                                           kaldi_digits):
    import os
    import signal
    import time

    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    first = subprocess.Popen(["./run.sh", "--kaldi-dir", str(kaldi_digits), "--stop-stage", "1"],
                             cwd=recipe, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        for _ in range(100):  # until the first holds the lock
            if (recipe / ".run.lock.who").exists() and \
                    f"pid {first.pid}" in (recipe / ".run.lock.who").read_text():
                break
            time.sleep(0.1)
        t = time.perf_counter()
        p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits)], cwd=recipe, env=env,
                           capture_output=True, text=True, timeout=60)
        assert time.perf_counter() - t < 10
        assert p.returncode != 0
        assert f"another run is using {recipe}: pid {first.pid}: ./run.sh --kaldi-dir" in p.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # killed: the lock is free again
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits), "--stage", "0",
                        "--stop-stage", "0"], cwd=recipe, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


def test_other_inputs_in_a_used_dir_are_refused_naming_restart(tmp_path, repo_dir,
                                                               env_with_path,
                                                               kaldi_digits_copy):
    """A recipe dir made with one --ali: a run with another is refused, naming --restart, and
    nothing of the first run is touched; --restart true starts over."""
    import os

    kaldi_digits = kaldi_digits_copy
    mdl = kaldi_digits / "exp/mono/final.mdl"
    if not mdl.is_symlink():  # a copy that flattened Kaldi's final.mdl -> 40.mdl
        mdl.unlink()
        os.symlink("40.mdl", mdl)
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))

    def run(*args):
        return subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits), *args], cwd=s5,
                              env=env, capture_output=True, text=True, timeout=300)

    p = run("--stop-stage", "0")
    assert p.returncode == 0, p.stderr[-2000:]
    made = (s5 / "data/recipe_inputs.txt").read_text()
    assert "ali=exp/mono_ali" in made
    p = run("--stop-stage", "0", "--ali", "exp/mono")
    assert p.returncode != 0
    assert "before: ali=exp/mono_ali" in p.stderr and "now:    ali=exp/mono" in p.stderr
    assert "--restart true" in p.stderr
    assert (s5 / "data/recipe_inputs.txt").read_text() == made
    p = run("--stop-stage", "0", "--ali", "exp/mono", "--restart", "true")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ali=exp/mono " in (s5 / "data/recipe_inputs.txt").read_text()
