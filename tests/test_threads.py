"""CPU threads: a process uses the cores it was given (explicit option, the job runner's
--num-threads, OMP_NUM_THREADS, else 1), never more than its affinity and cgroup quota allow;
jobs started by utils/run.pl and slurm.pl carry their --num-threads to the toolkit's processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hybridasr.jobs.cluster import job_script
from hybridasr.utils.threads import available_cores, cgroup_quota_cores, decide
from train_helpers import make_tr_cv

REPO = Path(__file__).resolve().parents[1]
RUN_PL = str(REPO / "utils" / "run.pl")

# a pybin-style entry point (hybridasr.cli.run_main) that reports torch's thread pools
REPORT_THREADS = """
import json, sys
from hybridasr.cli import run_main

def main(argv=None):
    import torch
    print(json.dumps({"intra": torch.get_num_threads(),
                      "interop": torch.get_num_interop_threads()}))

run_main(main)
"""


def test_explicit_option_wins_over_the_environment():
    env = {"HYBRIDASR_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    assert decide(2, env, cores=4).num_threads == 2
    assert decide(2, env, cores=4).reason == "--num-threads"


def test_default_is_one_thread_per_process():
    c = decide(0, {}, cores=64)
    assert c.num_threads == 1 and "unless told" in c.reason


def test_job_runner_threads_then_omp_num_threads():
    # run.pl --num-threads 3 gives the job 3 cores
    assert decide(0, {"HYBRIDASR_NUM_THREADS": "3"}, cores=8).num_threads == 3
    # a step sets OMP_NUM_THREADS for one command inside the job: that command's count
    assert decide(0, {"HYBRIDASR_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"},
                  cores=8).num_threads == 2
    # rubbish is ignored, not fatal
    assert decide(0, {"OMP_NUM_THREADS": "lots"}, cores=8).num_threads == 1


def test_torchrun_workers_share_the_jobs_cores():
    # torchrun sets OMP_NUM_THREADS=1 for its workers itself: the job's 8 cores go 4 + 4
    env = {"HYBRIDASR_NUM_THREADS": "8", "LOCAL_WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"}
    assert decide(0, env, cores=8).num_threads == 4
    env = {"HYBRIDASR_NUM_THREADS": "2", "LOCAL_WORLD_SIZE": "4"}
    assert decide(0, env, cores=8).num_threads == 1
    # without a job runner, torchrun's per-worker OMP_NUM_THREADS stands
    assert decide(0, {"LOCAL_WORLD_SIZE": "2", "OMP_NUM_THREADS": "3"},
                  cores=8).num_threads == 3


def test_never_more_than_the_available_cores(caplog):
    with caplog.at_level("WARNING"):
        c = decide(16, {}, cores=2)
    assert c.num_threads == 2 and "bounded by the 2 available cores" in c.reason
    assert "asks for 16 CPU threads" in caplog.text
    assert decide(0, {"HYBRIDASR_NUM_THREADS": "8"}, cores=3).num_threads == 3


def test_cgroup_quota_in_whole_cores(tmp_path):
    f = tmp_path / "cpu.max"
    for text, cores in (("200000 100000\n", 2), ("150000 100000\n", 2), ("50000 100000", 1),
                        ("max 100000\n", None), ("garbage", None)):
        f.write_text(text)
        assert cgroup_quota_cores(str(f)) == cores, text
    assert cgroup_quota_cores(str(tmp_path / "absent")) is None
    f.write_text("100000 100000\n")
    assert available_cores(str(f)) == 1


def test_affinity_bounds_the_thread_count(tmp_path):
    # a process pinned to one core (taskset, a Slurm cpuset) uses one thread even when asked
    # for more: apply() in a child pinned to its first core
    code = ("import os, json, torch\n"
            "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from hybridasr.utils.threads import apply\n"
            "c = apply(4)\n"
            "print(json.dumps([c.num_threads, torch.get_num_threads()]))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == [1, 1]


def _runner_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "HYBRIDASR_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _threads_in_job(tmp_path, runner_opts):
    script = tmp_path / "report_threads.py"
    script.write_text(REPORT_THREADS)
    r = subprocess.run([RUN_PL, *runner_opts, "log/threads.log", sys.executable, str(script)],
                       cwd=tmp_path, env=_runner_env(), capture_output=True, text=True,
                       timeout=120)
    log = (tmp_path / "log" / "threads.log").read_text()
    assert r.returncode == 0, r.stderr + log
    lines = log.splitlines()
    report = next(json.loads(x) for x in lines if x.startswith("{"))
    return report, lines


def test_run_pl_job_gets_one_thread_by_default(tmp_path):
    report, lines = _threads_in_job(tmp_path, [])
    assert report["intra"] == 1  # (the inter-op pool is set where a tool calls apply())
    assert lines[-2].endswith("threads=1")


def test_run_pl_num_threads_reaches_the_job(tmp_path):
    n = min(2, available_cores())
    report, lines = _threads_in_job(tmp_path, ["--num-threads", str(n)])
    assert report["intra"] == n
    assert lines[-2].endswith(f"threads={n}")  # Kaldi's accounting line names them


def test_run_pl_rejects_a_bad_num_threads(tmp_path):
    r = subprocess.run([RUN_PL, "--num-threads", "x", "log/a.log", "true"], cwd=tmp_path,
                       env=_runner_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "invalid option --num-threads x" in r.stderr
    assert not (tmp_path / "log").exists()


def test_cluster_job_script_exports_the_jobs_threads():
    script = job_script("echo hi", "/tmp/x.log", "/tmp", num_threads=4)
    assert "export HYBRIDASR_NUM_THREADS=4\n" in script
    assert "threads=4" in script and "threads=1" not in script


def test_train_in_a_run_pl_job_uses_one_thread(tmp_path, kaldi_digits):
    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path / "digits")
    exp = tmp_path / "exp"
    r = subprocess.run(
        [RUN_PL, "--num-threads", "1", "exp/log/train.log", sys.executable,
         str(REPO / "pybin" / "train.py"), "--model=blstm", "--num-layers=1",
         "--hidden-size=16", "--max-frames=4000", "--num-workers=0", "--max-iters=1",
         "--progress-every=0", str(tr), str(cv), str(ali), str(ali), str(exp)],
        cwd=tmp_path, env=_runner_env(), capture_output=True, text=True, timeout=300)
    log = (exp / "log" / "train.log").read_text()
    assert r.returncode == 0, r.stderr + log
    assert "using 1 CPU threads, 1 inter-op (the job runner's --num-threads" in log
    assert (exp / "final.nnet").exists()
