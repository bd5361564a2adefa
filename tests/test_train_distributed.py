"""torch.distributed on 2 CPU processes (gloo): DDP and parameter averaging leave both ranks
with identical parameters, DDP on 2 processes equals 1 process on the same global batch, and
the trainer runs under torchrun."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import torch.multiprocessing as mp

from train_helpers import free_port, make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = {"model": "blstm", "num_layers": 1, "hidden_size": 24, "proj_size": 0, "dropout": 0.0}


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_dist"))


def _global_batches(digits, num=3, rows=8):
    """``num`` global batches of ``rows`` real utterances (features, targets)."""
    from hybridasr.data.dataset import UtteranceDataset

    tr, _, ali = digits
    ds = UtteranceDataset.from_data_dir(str(tr), str(ali / "targets.scp"))
    keys = ds.keys[:num * rows]
    return [[(k, *ds.load(k)) for k in keys[i * rows:(i + 1) * rows]] for i in range(num)]


def _batch(rows):
    from hybridasr.data.batch import collate

    return collate([(x, y) for _, x, y in rows], [k for k, _, _ in rows],
                   [(0, len(x)) for _, x, _ in rows], rows[0][1].shape[1])


def _worker(rank, world, port, mode, batches, out_dir):
    import torch.distributed as dist

    from hybridasr.models import build_model
    from hybridasr.train.distributed import DistInfo, ParameterAverager
    from hybridasr.train.loop import run_epoch

    torch.set_num_threads(1)
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
    info = DistInfo(rank, world, rank, torch.device("cpu"))
    torch.manual_seed(0)
    model = build_model(MODEL, batches[0][0][1].shape[1], 70)
    if mode == "average":  # ranks start apart, as after local updates: averaging must join them
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * (rank + 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    # this rank's rows of each global batch (all of them with one process)
    mine = [_batch(rows[rank::world]) for rows in batches]
    net, averager = model, None
    if mode == "ddp" and world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model)
    elif mode == "average":
        averager = ParameterAverager(model, info, sync_every=2)
    stats = run_epoch(net, mine, info, optimizer=opt, averager=averager,
                      ddp=(mode == "ddp" and world > 1), progress_every=0)
    assert not stats.diverged
    torch.save(model.state_dict(), os.path.join(out_dir, f"{mode}.{world}.{rank}.pt"))
    if world > 1:
        dist.destroy_process_group()


def _run(world, mode, batches, out_dir):
    if world == 1:
        _worker(0, 1, 0, mode, batches, out_dir)
        return
    mp.start_processes(_worker, args=(world, free_port(), mode, batches, out_dir),
                       nprocs=world, start_method="fork")


def _load(out_dir, name):
    return torch.load(os.path.join(out_dir, name), weights_only=True)


@pytest.mark.parametrize("mode", ["ddp", "average"])
def test_ranks_end_with_identical_parameters(digits, tmp_path, mode):
    batches = _global_batches(digits)
    _run(2, mode, batches, str(tmp_path))
    a, b = _load(tmp_path, f"{mode}.2.0.pt"), _load(tmp_path, f"{mode}.2.1.pt")
    for k in a:
        assert torch.equal(a[k], b[k]), k
    init = _load_init(batches)
    assert any(not torch.allclose(a[k], init[k]) for k in a), "nothing was trained"


def _load_init(batches):
    from hybridasr.models import build_model

    torch.manual_seed(0)
    return build_model(MODEL, batches[0][0][1].shape[1], 70).state_dict()


def test_ddp_on_two_processes_equals_one_process_on_the_global_batch(digits, tmp_path):
    batches = _global_batches(digits)
    _run(1, "ddp", batches, str(tmp_path))
    _run(2, "ddp", batches, str(tmp_path))
    one, two = _load(tmp_path, "ddp.1.0.pt"), _load(tmp_path, "ddp.2.0.pt")
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=0, atol=1e-5, msg=k)


@pytest.mark.parametrize("mode", ["ddp", "average"])
def test_trainer_under_torchrun(digits, tmp_path, env_with_path, mode):
    tr, cv, ali = digits
    exp = tmp_path / mode
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", os.path.join(REPO, "pybin", "train.py"), f"--parallel={mode}",
           "--sync-every=3", "--model=blstm", "--num-layers=1", "--hidden-size=24",
           "--seq-ordering=laplace:2", "--max-frames=1500", "--num-workers=0",
           "--max-iters=2", "--num-threads=1", "--progress-every=0",
           str(tr), str(cv), str(ali), str(ali), str(exp)]
    p = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    h = [json.loads(line) for line in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [x["epoch"] for x in h] == [0, 1, 2]
    assert all(x["world_size"] == 2 for x in h[1:])
    # both ranks trained on disjoint halves: together all training frames
    n_frames = sum(int(line.split()[1]) for line in open(tr / "utt2num_frames")) \
        if (tr / "utt2num_frames").exists() else None
    if n_frames:
        assert h[1]["train_frames"] == n_frames
    assert os.path.exists(exp / "final.nnet")
