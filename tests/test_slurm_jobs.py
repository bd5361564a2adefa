"""utils/slurm.pl on a real Slurm cluster (tests/slurm_cluster.py: slurmctld and two slurmd on
this machine): Kaldi's array-job semantics and logs, the runner options as Slurm sees them, a
cancelled job, and Kaldi step scripts giving the same outputs with --cmd slurm.pl as with run.pl.
"""
from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from slurm_cluster import slurm_cluster  # noqa: F401  (the session fixture)

REPO = Path(__file__).resolve().parents[1]
SLURM_PL = str(REPO / "utils" / "slurm.pl")
ENDED = re.compile(r"^# Ended \(code (\d+)\) at .+, elapsed time \d+ seconds$")


@pytest.fixture
def env(slurm_cluster, env_with_path):  # noqa: F811
    return slurm_cluster.env(env_with_path)


def _run(args, cwd, env, timeout=120):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _lines(path: Path):
    return path.read_text().splitlines()


def test_array_job_logs_and_a_failure(tmp_path, env):
    r = _run([SLURM_PL, "JOB=1:4", "exp/log/work.JOB.log", "echo", "task", "JOB",
              "$SLURM_ARRAY_TASK_ID", "on", "$SLURMD_NODENAME", "|", "tr", "a-z", "A-Z",
              "&&", "test", "JOB", "-ne", "3"], tmp_path, env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "slurm.pl: 1 / 4 failed, log is in exp/log/work.*.log" in r.stderr
    nodes = set()
    for j in range(1, 5):
        lines = _lines(tmp_path / "exp" / "log" / f"work.{j}.log")
        assert lines[0] == (f"# echo task {j} $SLURM_ARRAY_TASK_ID on $SLURMD_NODENAME | "
                            f"tr a-z A-Z && test {j} -ne 3")
        assert lines[1].startswith("# Running on ")
        assert lines[2].startswith("# Started at ") and lines[3] == "#"
        out = [x for x in lines if x.startswith("TASK ")]
        # run by Slurm as array task j, on one of the cluster's nodes
        assert len(out) == 1 and out[0].split()[:3] == ["TASK", str(j), str(j)], lines
        nodes.add(out[0].split()[-1])
        assert re.match(r"^# Accounting: time=\d+ threads=1$", lines[-2])
        assert ENDED.match(lines[-1]).group(1) == ("1" if j == 3 else "0")
    assert nodes <= {"N1", "N2"} and nodes
    # the array was submitted once, with --wait, and its script is kept beside the logs
    submitted = (tmp_path / "exp" / "log" / "q" / "work.submit").read_text()
    assert "--array=1-4" in submitted and "--wait" in submitted


def _show_job(log: Path) -> dict:
    """The 'scontrol show job' fields the job printed about itself."""
    fields = {}
    for line in _lines(log):
        for m in re.finditer(r"([A-Za-z/:]+)=(\S*)", line):
            fields.setdefault(m.group(1), m.group(2))
    return fields


def test_options_reach_slurm(tmp_path, env):
    """--mem, --num-threads and --gpu as Slurm recorded them for the running job; --gpu 0 asks
    for no GPU and no GPU partition; conf/slurm.conf, when there, replaces the default config
    (as in Kaldi). The runners at once (each waits ~2 s for sbatch --wait)."""
    show = ["scontrol", "show", "job", "$SLURM_JOB_ID"]
    plain, withconf = tmp_path / "plain", tmp_path / "withconf"
    plain.mkdir()
    (withconf / "conf").mkdir(parents=True)
    (withconf / "conf/slurm.conf").write_text(
        "command sbatch --export=ALL\noption mem=* --mem=$0  # per node\n")
    runs = [subprocess.Popen([SLURM_PL, *opts, f"log/{name}.log", *show], cwd=cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name, cwd, opts in (
                ("gpu", plain, ["--gpu", "1", "--mem", "100M", "--num-threads", "2"]),
                ("cpu", plain, ["--gpu", "0", "--mem", "50M"]),
                ("conf", withconf, ["--mem", "70M"]))]
    for p in runs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, out + err
    gpu, cpu = _show_job(plain / "log/gpu.log"), _show_job(plain / "log/cpu.log")
    assert gpu["Partition"] == "gpu" and gpu["TresPerNode"] == "gres:gpu:1", gpu
    assert gpu["MinMemoryCPU"] == "100M" and gpu["CPUs/Task"] == "2" and gpu["NumCPUs"] == "2"
    assert gpu["NodeList"] == "n2"  # the only node with a GPU
    assert cpu["Partition"] == "debug" and cpu["MinMemoryCPU"] == "50M"
    assert cpu["CPUs/Task"] == "1" and "gpu" not in (plain / "log/cpu.log").read_text()
    assert _show_job(withconf / "log/conf.log")["MinMemoryNode"] == "70M"
    r = _run([SLURM_PL, "--gpu", "1", "log/x.log", "true"], withconf, env)
    assert r.returncode == 1, r.stderr
    assert "--gpu 1 is not described in the config (conf/slurm.conf)" in r.stderr


def test_cancelled_job_is_a_failure(tmp_path, env, slurm_cluster):  # noqa: F811
    p = subprocess.Popen([SLURM_PL, "JOB=1:2", "log/cancelme.JOB.log", "if", "[", "JOB", "-eq",
                          "2", "];", "then", "sleep", "120;", "fi;", "echo", "done", "JOB"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    log2 = tmp_path / "log/cancelme.2.log"
    t0 = time.time()
    while not (log2.exists() and "# Started at" in log2.read_text()):
        assert time.time() - t0 < 60 and p.poll() is None, "task 2 never started"
        time.sleep(0.2)
    job = slurm_cluster.run("squeue", "-h", "-n", "cancelme", "-t", "RUNNING", "-o",
                            "%F").split()[0]
    slurm_cluster.run("scancel", f"{job}_2")
    t0 = time.time()
    out, err = p.communicate(timeout=60)
    assert time.time() - t0 < 30
    assert p.returncode == 1, out + err
    assert "slurm.pl: 1 / 2 failed, log is in log/cancelme.*.log" in err
    lines = _lines(log2)
    assert "done 2" not in lines and any(x.startswith("# Got SIGTERM") for x in lines), lines
    assert ENDED.match(lines[-1]).group(1) == "143"  # 128 + SIGTERM, never 0
    assert ENDED.match(_lines(tmp_path / "log/cancelme.1.log")[-1]).group(1) == "0"


# ------------------------------------------------------------------ Kaldi steps with slurm.pl
def _both(commands, cwds, env):
    """The run.pl and the slurm.pl command at once (slurm.pl mostly waits for sbatch)."""
    procs = [subprocess.Popen(c, cwd=d, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for c, d in zip(commands, cwds)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out

def _recipe(dst: Path, kaldi_digits: Path) -> Path:
    """A recipe dir with data/test's audio lists (as tests/test_features_steps.py)."""
    (dst / "data" / "test").mkdir(parents=True)
    shutil.copytree(kaldi_digits / "conf", dst / "conf")
    for p in (dst / "conf").iterdir():
        os.chmod(p, 0o644)
    for name in ("wav.scp", "utt2spk", "spk2utt", "text"):
        shutil.copy(kaldi_digits / "data" / "test" / name, dst / "data" / "test" / name)
    os.symlink(kaldi_digits / "digits_audio", dst / "digits_audio")
    return dst


def test_make_mfcc_same_with_slurm_pl(tmp_path, env, kaldi_digits):
    dirs = {cmd: _recipe(tmp_path / cmd, kaldi_digits) for cmd in ("run.pl", "slurm.pl")}
    _both([[str(REPO / "steps/make_mfcc.sh"), "--nj", "2", "--cmd", cmd, "--mfcc-config",
            "conf/mfcc.conf", "data/test", "exp/make_mfcc/test", "mfcc"] for cmd in dirs],
          list(dirs.values()), env)
    a, b = dirs["run.pl"], dirs["slurm.pl"]
    for f in ("data/test/feats.scp", "data/test/utt2num_frames", "data/test/utt2dur",
              "mfcc/raw_mfcc_test.1.ark", "mfcc/raw_mfcc_test.2.ark"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert len((a / "data/test/feats.scp").read_text().splitlines()) == 30
    assert (b / "exp/make_mfcc/test/q").is_dir()  # slurm.pl's scripts: Slurm ran the jobs
    log = _lines(b / "exp/make_mfcc/test/make_mfcc_test.2.log")
    assert ENDED.match(log[-1]).group(1) == "0"


def test_nnet_decode_same_with_slurm_pl(tmp_path, env, kaldi_digits):
    from hybridasr import models
    from hybridasr.features.transform import FeatureTransform

    config = {"model": "blstm", "num_layers": 1, "hidden_size": 16, "proj_size": 0,
              "dropout": 0.0}
    transform = FeatureTransform(norm_means=True, delta_order=1)  # 13 -> 26 dims
    src = kaldi_digits / "data" / "test"
    data = tmp_path / "data" / "test"
    data.mkdir(parents=True)
    for f in ("feats.scp", "cmvn.scp"):  # absolute paths into ../shared
        (data / f).write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in
                                      (x.split(" ", 1) for x in _lines(src / f))))
    for f in ("text", "utt2spk", "spk2utt"):
        shutil.copy(src / f, data / f)
    exp = tmp_path / "exp" / "dnn"
    exp.mkdir(parents=True)
    torch.manual_seed(0)
    model = models.build_model(dict(config), 26, 70)
    models.save_model(str(exp / "final.nnet"), model, dict(config),
                      {"transform": transform.to_dict(), "num_pdfs": 70, "input_dim": 26})
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    (exp / "ali_train_pdf.counts").write_text(
        "[ " + " ".join(map(str, np.arange(1, 71))) + " ]\n")
    graph = kaldi_digits / "exp/mono/graph"
    _both([[str(REPO / "steps/nnet/decode.sh"), "--nj", "2", "--cmd", cmd, "--decoder",
            "embedded", "--scoring-opts", "--min-lmwt 10 --max-lmwt 10", str(graph),
            "data/test", f"exp/dnn/decode_{cmd}"] for cmd in ("run.pl", "slurm.pl")],
          [tmp_path, tmp_path], env)
    a, b = exp / "decode_run.pl", exp / "decode_slurm.pl"
    for f in ("lat.1.gz", "lat.2.gz"):  # the same lattices, whichever ran the jobs
        assert gzip.decompress((a / f).read_bytes()) == gzip.decompress((b / f).read_bytes()), f
    for f in ("wer_10_0.0", "wer_10_1.0"):  # the figures (the first line names the decode dir)
        figures = [[x for x in _lines(d / f) if x.startswith(("%WER", "%SER", "Scored"))]
                   for d in (a, b)]
        assert figures[0] == figures[1] and len(figures[0]) == 3, (f, figures)
    assert list((b / "log").glob("q/*.submit")) or list(b.glob("**/q/*.submit"))
