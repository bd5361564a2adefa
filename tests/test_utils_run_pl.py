"""utils/run.pl and utils/slurm.pl / queue.pl: Kaldi's job-runner contract."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_PL = str(REPO / "utils" / "run.pl")
ENDED = re.compile(r"^# Ended \(code (\d+)\) at .+, elapsed time \d+ seconds$")


def run(args, cwd, env=None, timeout=60):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def read_log(path: Path):
    lines = path.read_text().splitlines()
    return lines


def test_jobs_run_in_parallel_with_job_substituted(tmp_path):
    # each job records when it started and ended; all 3 must overlap in time
    r = run([RUN_PL, "--max-jobs-run", "3", "JOB=1:3", "exp/log/work.JOB.log",
             "date", "+%s.%N", ">", "t.JOB.start", "&&", "sleep", "1", "&&",
             "date", "+%s.%N", ">", "t.JOB.end", "&&", "echo", "job", "JOB", "|", "tr", "a-z",
             "A-Z"], tmp_path)
    assert r.returncode == 0, r.stderr
    starts = [float((tmp_path / f"t.{j}.start").read_text()) for j in (1, 2, 3)]
    ends = [float((tmp_path / f"t.{j}.end").read_text()) for j in (1, 2, 3)]
    assert max(starts) < min(ends), "the jobs did not overlap"
    for j in (1, 2, 3):
        lines = read_log(tmp_path / "exp" / "log" / f"work.{j}.log")
        assert lines[0] == (f"# date +%s.%N > t.{j}.start && sleep 1 && date +%s.%N > "
                            f"t.{j}.end && echo job {j} | tr a-z A-Z")
        assert lines[1].startswith("# Started at ")
        assert lines[2] == "#"
        assert f"JOB {j}" in lines  # the pipe ran in bash, JOB substituted
        assert re.match(r"^# Accounting: time=\d+ threads=1$", lines[-2])
        m = ENDED.match(lines[-1])
        assert m and m.group(1) == "0"


def test_failed_jobs_are_counted_and_exit_1(tmp_path):
    r = run([RUN_PL, "JOB=1:4", "log/f.JOB.log", "test", "JOB", "-ne", "2", "&&", "test",
             "JOB", "-ne", "3"], tmp_path)
    assert r.returncode == 1
    assert "run.pl: 2 / 4 failed, log is in log/f.*.log" in r.stderr
    codes = {j: ENDED.match(read_log(tmp_path / "log" / f"f.{j}.log")[-1]).group(1)
             for j in range(1, 5)}
    assert codes == {1: "0", 2: "1", 3: "1", 4: "0"}


def test_single_job_form_and_its_failure_message(tmp_path):
    r = run([RUN_PL, "log/one.log", "echo", "ark:gunzip -c a.gz |", "x"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = read_log(tmp_path / "log" / "one.log")
    assert lines[0] == '# echo "ark:gunzip -c a.gz |" x'  # Kaldi's quoting of a word with spaces
    assert "ark:gunzip -c a.gz | x" in lines
    r = run([RUN_PL, "log/bad.log", "exit", "3"], tmp_path)
    assert r.returncode == 1
    assert "run.pl: job failed, log is in log/bad.log" in r.stderr
    assert ENDED.match(read_log(tmp_path / "log" / "bad.log")[-1]).group(1) == "3"


def test_max_jobs_run_limits_concurrency(tmp_path):
    # with one slot, each job starts after the previous ended
    r = run([RUN_PL, "--max-jobs-run", "1", "TASK=2:4", "log/s.TASK.log", "date", "+%s.%N",
             ">", "s.TASK", "&&", "sleep", "0.3", "&&", "date", "+%s.%N", ">", "e.TASK"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    spans = [(float((tmp_path / f"s.{j}").read_text()), float((tmp_path / f"e.{j}").read_text()))
             for j in (2, 3, 4)]
    spans.sort()
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(2)), spans
    assert sorted(os.listdir(tmp_path / "log")) == ["s.2.log", "s.3.log", "s.4.log"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def start_sleeping_jobs(tmp_path):
    """run.pl, in a session of its own, with two jobs that each leave a grandchild (a
    background sleep) whose pid they write to s.JOB; returns run.pl and the two pids."""
    p = subprocess.Popen([RUN_PL, "JOB=1:2", "log/sleep.JOB.log", "sleep", "60", "&",
                          "echo", "$!", ">", "s.JOB.tmp", "&&", "mv", "s.JOB.tmp", "s.JOB", "&&",
                          "wait"], cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    end = time.monotonic() + 30
    while not all((tmp_path / f"s.{j}").exists() for j in (1, 2)):
        assert time.monotonic() < end and p.poll() is None, "the jobs did not start"
        time.sleep(0.05)
    pids = [int((tmp_path / f"s.{j}").read_text()) for j in (1, 2)]
    assert all(alive(pid) for pid in pids)
    return p, pids


def assert_ended(pids, within=10.0):
    end = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < end, f"still running: {[p for p in pids if alive(p)]}"
        time.sleep(0.05)


def test_killing_the_recipes_process_group_leaves_no_job_running(tmp_path):
    # kill -9 of the recipe (its process group) must reach the jobs and what they started:
    # a job left running would write into the dir while the recipe is run again
    p, pids = start_sleeping_jobs(tmp_path)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert_ended(pids)


def test_sigterm_to_run_pl_alone_stops_its_jobs_and_theirs(tmp_path):
    p, pids = start_sleeping_jobs(tmp_path)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 143
    assert "run.pl: interrupted, jobs stopped" in p.stderr.read()
    assert_ended(pids)


def test_bad_arguments(tmp_path):
    r = run([RUN_PL, "JOB=1:2", "log/same.log", "true"], tmp_path)
    assert r.returncode == 1 and "just one log file" in r.stderr
    r = run([RUN_PL, "JOB=3:2", "log/x.JOB.log", "true"], tmp_path)
    assert r.returncode == 1 and "invalid job range" in r.stderr
    r = run([RUN_PL, "--max-jobs-run", "0", "log/x.log", "true"], tmp_path)
    assert r.returncode == 1
    r = run([RUN_PL, "log/x.log"], tmp_path)
    assert r.returncode == 1 and "Usage" in r.stderr


def test_run_pl_needs_only_the_system_python(tmp_path):
    """run.pl is Perl, as Kaldi's, and its Python half is stdlib-only: it runs under a python
    without the venv's packages (a cluster node's system python3), found from any cwd."""
    assert Path(RUN_PL).read_text().startswith("#!/usr/bin/env perl")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    env = dict(os.environ, HYBRIDASR_PYTHON=python, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    r = run(["perl", RUN_PL, "--gpu", "1", "--mem", "2G", "log/p.log", "echo", "ok"],
            tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "ok" in read_log(tmp_path / "log" / "p.log")


FAKE_SBATCH = """#!/usr/bin/env bash
# stand-in sbatch: runs the array tasks here, in parallel, and waits (like --wait)
echo "$@" >> "$FAKE_ARGS"
arr=; out=; script=
for a in "$@"; do
  case $a in
    --array=*) arr=${a#--array=} ;;
    --output=*) out=${a#--output=} ;;
    -*) ;;
    *) script=$a ;;
  esac
done
range=${arr%%%*}; first=${range%-*}; last=${range#*-}
pids=()
for i in $(seq "$first" "$last"); do
  SLURM_ARRAY_TASK_ID=$i bash "$script" >> "${out//%a/$i}" 2>&1 & pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
"""

FAKE_QSUB = """#!/usr/bin/env bash
# stand-in qsub -sync y -t a:b: runs the tasks here, one after the other
echo "$@" >> "$FAKE_ARGS"
t=; script=
while [ $# -gt 0 ]; do
  case $1 in
    -t) t=$2; shift 2 ;;
    -sync|-N|-o|-tc|-v|-l|-pe|-q) shift 2 ;;
    -*) shift ;;
    *) script=$1; shift ;;
  esac
done
for i in $(seq "${t%:*}" "${t#*:}"); do SGE_TASK_ID=$i bash "$script"; done
exit 0
"""


@pytest.fixture
def fake_cluster(tmp_path):
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("qsub", FAKE_QSUB)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["FAKE_ARGS"] = str(tmp_path / "submitted")
    return env


def test_slurm_pl_submits_an_array_and_reports_failures(tmp_path, fake_cluster):
    work = tmp_path / "w"
    work.mkdir()
    slurm = str(REPO / "utils" / "slurm.pl")
    r = run([slurm, "--mem", "4G", "--max-jobs-run", "2", "--num-threads", "2", "JOB=1:3",
             "exp/log/a.JOB.log", "echo", "task", "JOB", "|", "tr", "a-z", "A-Z", "&&",
             "test", "JOB", "-ne", "2"], work, env=fake_cluster)
    assert r.returncode == 1
    assert "slurm.pl: 1 / 3 failed, log is in exp/log/a.*.log" in r.stderr
    submitted = (tmp_path / "submitted").read_text()
    for part in ("--wait", "--array=1-3%2", "--mem-per-cpu 4G", "--cpus-per-task 2",
                 "--export=ALL"):
        assert part in submitted, submitted
    for j in (1, 2, 3):
        lines = read_log(work / "exp" / "log" / f"a.{j}.log")
        assert lines[0] == f"# echo task {j} | tr a-z A-Z && test {j} -ne 2"
        assert f"TASK {j}" in lines
        assert ENDED.match(lines[-1]).group(1) == ("1" if j == 2 else "0")


def test_slurm_pl_config_and_unknown_option(tmp_path, fake_cluster):
    conf = tmp_path / "slurm.conf"
    conf.write_text("command sbatch -p cpu\noption mem=* --mem=$0\ndefault gpu=0\n"
                    "option gpu=0\noption gpu=* -p gpu --gres=gpu:$0\n")
    r = run([str(REPO / "utils" / "slurm.pl"), "--config", str(conf), "--gpu", "1", "--mem",
             "1G", "log/one.log", "echo", "hello"], tmp_path, env=fake_cluster)
    assert r.returncode == 0, r.stderr
    assert "hello" in read_log(tmp_path / "log" / "one.log")
    submitted = (tmp_path / "submitted").read_text()
    assert submitted.startswith("-p cpu") and "--gres=gpu:1" in submitted
    assert "--mem=1G" in submitted
    r = run([str(REPO / "utils" / "slurm.pl"), "--config", str(conf), "--partition", "x",
             "log/two.log", "true"], tmp_path, env=fake_cluster)
    assert r.returncode == 1 and "--partition x is not described" in r.stderr


def test_queue_pl_with_stand_in_qsub(tmp_path, fake_cluster):
    r = run([str(REPO / "utils" / "queue.pl"), "--mem", "2G", "JOB=1:2", "log/q.JOB.log",
             "echo", "JOB"], tmp_path, env=fake_cluster)
    assert r.returncode == 0, r.stderr
    submitted = (tmp_path / "submitted").read_text()
    assert "-sync y" in submitted and "-t 1:2" in submitted and "mem_free=2G" in submitted
    for j in (1, 2):
        assert str(j) in read_log(tmp_path / "log" / f"q.{j}.log")


def test_job_script_runs_exactly_the_run_pl_command(tmp_path):
    from hybridasr.jobs.runner import join_command, parse_args

    req = parse_args(["-V", "--max-jobs-run=2", "JOB=1:2", "--mem", "1G", "l/x.JOB.log",
                      "cmd", "a b", 'say "hi"', "|"], "run.pl")
    assert req.max_jobs_run == 2 and req.options == {"mem": "1G"}
    assert req.command_for(2) == "cmd \"a b\" 'say \"hi\"' |"
    assert req.log_for(2) == "l/x.2.log"
    assert join_command(["plain"]) == "plain"
    assert req.log_pattern() == "l/x.*.log"
