"""Training across two Slurm nodes as the README's "Clusters" section says: one sbatch job of
2 nodes x 1 task whose srun starts steps/nnet/train.sh on each node, torchrun's rendezvous in
--torchrun-opts (--node-rank $SLURM_NODEID), on the test cluster of tests/slurm_cluster.py."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from slurm_cluster import slurm_cluster  # noqa: F401  (the session fixture)
from train_helpers import free_port, make_tr_cv

REPO = Path(__file__).resolve().parents[1]
TRAIN_OPTS = ("--model=blstm --num-layers=1 --hidden-size=16 --seq-ordering=laplace:2 "
              "--max-frames=1500 --num-workers=0 --num-threads=1 --progress-every=0 "
              "--max-iters=1")


@pytest.mark.slow
def test_sbatch_two_nodes_srun_train_sh(slurm_cluster, kaldi_digits, tmp_path,  # noqa: F811
                                        env_with_path):
    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path / "digits")
    exp = tmp_path / "exp"
    rdzv = (f"--nnodes 2 --node-rank $SLURM_NODEID --rdzv-backend c10d --rdzv-id $SLURM_JOB_ID "
            f"--rdzv-endpoint 127.0.0.1:{free_port()}")  # the head node's name on a real cluster
    script = tmp_path / "train_2nodes.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "#SBATCH --nodes=2 --ntasks-per-node=1\n"
        f"srun bash -c '{REPO}/steps/nnet/train.sh --torchrun-opts \"{rdzv}\" --train-opts "
        f"\"{TRAIN_OPTS}\" {tr} {cv} {tmp_path}/no_lang {ali} {ali} {exp} && "
        "echo trained on $SLURMD_NODENAME as node $SLURM_NODEID'\n")
    env = dict(slurm_cluster.env(env_with_path), OMP_NUM_THREADS="1")
    p = subprocess.run(["sbatch", "--wait", f"--output={tmp_path}/slurm.out", str(script)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = (tmp_path / "slurm.out").read_text() if (tmp_path / "slurm.out").exists() else ""
    assert p.returncode == 0, p.stdout + p.stderr + out
    assert sorted(x for x in out.splitlines() if x.startswith("trained on")) == \
        ["trained on n1 as node 0", "trained on n2 as node 1"], out
    history = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [h["epoch"] for h in history] == [0, 1] and history[1]["world_size"] == 2
    logs = (exp / "log/train.log").read_text() + (exp / "log/train.node1.log").read_text()
    assert "rank 0 of 2" in logs and "rank 1 of 2" in logs
    assert (exp / "final.nnet").exists()
