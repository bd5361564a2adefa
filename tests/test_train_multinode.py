"""Training across two "nodes": two torchrun agents on this machine (``--nnodes 2 --node-rank
0/1 --rdzv-backend c10d``, one gloo process each), started by steps/nnet/train.sh through
``--torchrun-opts`` and sharing the exp dir as a shared filesystem would. The result equals the
single-node two-process run; when a rank is killed mid-epoch the other stops with a clear
error, and running the same commands again resumes from the last finished epoch."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from train_helpers import free_port, make_tr_cv

REPO = Path(__file__).resolve().parents[1]
TRAIN_SH = str(REPO / "steps" / "nnet" / "train.sh")
TRAIN_OPTS = ("--model=blstm --num-layers=1 --hidden-size=24 --seq-ordering=laplace:2 "
              "--max-frames=1500 --num-workers=0 --num-threads=1 --progress-every=0")


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_multinode"))


def _train_sh(digits, exp: Path, opts, train_opts: str):
    tr, cv, ali = digits
    return [TRAIN_SH, *opts, "--train-opts", f"{TRAIN_OPTS} {train_opts}", str(tr), str(cv),
            str(tr.parent / "no_lang"), str(ali), str(ali), str(exp)]


def _start_nodes(digits, exp: Path, env, train_opts: str, port: int):
    """Two train.sh, as the same command on two machines would be started. Node 0 hosts the
    rendezvous store, as the machine named in ``--rdzv-endpoint`` does on a real cluster (on
    one machine both agents match the endpoint, and whichever binds the port first would host
    it: when that was node 1, killing node 1's worker took the store down with its agent, and
    node 0's agent died of the lost store before its worker could say what happened)."""
    procs = []
    for node in (0, 1):
        rdzv = (f"--nnodes 2 --node-rank {node} --rdzv-backend c10d --rdzv-id multinode "
                f"--rdzv-endpoint 127.0.0.1:{port} "
                f"--rdzv-conf is_host={'true' if node == 0 else 'false'}")
        procs.append(subprocess.Popen(
            _train_sh(digits, exp, ["--nproc", "1", "--torchrun-opts", rdzv], train_opts),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True))
    return procs


def _wait(procs, timeout=240):
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                os.killpg(q.pid, signal.SIGKILL)
            raise
        outs.append(out)
    return [p.returncode for p in procs], outs


def _state_dict(path: Path):
    from hybridasr.models import load_model

    model, _ = load_model(str(path), torch.device("cpu"))
    return model.state_dict()


def _history(exp: Path):
    return [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]


@pytest.mark.slow
def test_two_nodes_equal_one_node_with_two_processes(digits, tmp_path, env_with_path):
    env = dict(env_with_path, OMP_NUM_THREADS="1")
    one, two = tmp_path / "one_node", tmp_path / "two_nodes"
    # both trainings at once (their start-up, mostly imports, dominates)
    single = subprocess.Popen(_train_sh(digits, one, ["--nproc", "2"], "--max-iters=2"),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    codes, outs = _wait([single, *_start_nodes(digits, two, env, "--max-iters=2", free_port())])
    assert codes == [0, 0, 0], "\n".join(outs)
    a, b = _state_dict(one / "final.nnet"), _state_dict(two / "final.nnet")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert [h["world_size"] for h in _history(two)[1:]] == [2, 2]
    assert [h.get("train_loss") for h in _history(two)] == \
        [h.get("train_loss") for h in _history(one)]
    # each node logs to its own file; the global ranks 0 and 1 both ran
    logs = [(two / "log" / n).read_text() for n in ("train.log", "train.node1.log")]
    assert sorted(r for r in (0, 1) for log in logs if f"rank {r} of 2" in log) == [0, 1]
    # only rank 0 wrote: the exp dir holds what the single-node run wrote, and node 1's log
    assert sorted(_listing(two)) == sorted(_listing(one) | {"log/train.node1.log"})


def _listing(exp: Path):
    return {str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file()
            and not p.name.endswith((".png",)) and "/q/" not in str(p)}


def _children(pid: int):
    # -ww: whole command lines (ps cuts them at 80 columns when writing to a pipe, and a long
    # checkout path pushed "pybin/train.py" past that)
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)],
                         capture_output=True, text=True).stdout
    return [(int(x.split(None, 1)[0]), x.split(None, 1)[1]) for x in out.splitlines()]


def _worker_pids(root: int):
    """The train.py processes under ``root`` (train.sh -> run.pl -> bash -> torchrun -> ...)."""
    found, todo = [], [root]
    while todo:
        for pid, args in _children(todo.pop()):
            if "pybin/train.py" in args and "torchrun" not in args:  # not the agent
                found.append(pid)
            todo.append(pid)
    return found


@pytest.mark.slow
def test_rank_killed_mid_epoch_stops_the_other_and_rerun_resumes(digits, tmp_path,
                                                                 env_with_path):
    env = dict(env_with_path, OMP_NUM_THREADS="1")
    exp = tmp_path / "exp"
    procs = _start_nodes(digits, exp, env, "--max-iters=4", free_port())
    # once epoch 1 is finished, kill node 1's training process (SIGKILL) in epoch 2
    t0 = time.time()
    while not ((exp / "metrics.jsonl").exists() and len(_history(exp)) >= 2):
        assert time.time() - t0 < 180 and all(p.poll() is None for p in procs), "no epoch 1"
        time.sleep(0.2)
    workers = _worker_pids(procs[1].pid)
    assert len(workers) == 1, "node 1 runs no train.py"
    for w in workers:
        os.kill(w, signal.SIGKILL)
    t_kill = time.time()
    codes, outs = _wait(procs, timeout=120)
    assert time.time() - t_kill < 90, "the surviving node did not stop in time"
    assert codes[0] != 0 and codes[1] != 0, outs
    log0 = (exp / "log" / "train.log").read_text()
    (tmp_path / "killed_run.log").write_text(log0)  # the rerun rewrites log/train.log
    assert "ERROR" in log0 and "lost contact with another rank" in log0, log0[-3000:]
    done = _history(exp)
    assert 2 <= len(done) <= 4 and not json.loads((exp / "train_state.json").read_text())["done"]
    # the same commands again: resumes after the last finished epoch
    codes, outs = _wait(_start_nodes(digits, exp, env, "--max-iters=4", free_port()))
    assert codes == [0, 0], "\n".join(outs)
    log0 = (exp / "log" / "train.log").read_text() + (exp / "log/train.node1.log").read_text()
    assert f"resuming after epoch {len(done) - 1}" in log0
    assert [h["epoch"] for h in _history(exp)] == [0, 1, 2, 3, 4]
    assert _history(exp)[:len(done)] == done


def test_lost_peer_error_names_the_rank():
    from hybridasr.train.distributed import DistInfo, PeerLostError, stop_on_lost_peer

    two = DistInfo(rank=1, world_size=2)
    msg = "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer"
    with pytest.raises(PeerLostError, match=r"^rank 1 of 2: lost contact with another rank "
                                            r"\(\[.*Connection closed by peer"):
        with stop_on_lost_peer(two):
            raise RuntimeError(msg + " [127.0.0.1]:27276")
    with pytest.raises(RuntimeError, match="shape mismatch"):  # not a lost peer
        with stop_on_lost_peer(two):
            raise RuntimeError("shape mismatch")
    with pytest.raises(RuntimeError, match="Connection closed"):  # one process: not ours
        with stop_on_lost_peer(DistInfo()):
            raise RuntimeError(msg)
