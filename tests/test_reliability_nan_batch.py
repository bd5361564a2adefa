"""A training loss that goes NaN/inf names the batch and its utterances, in the log
and in the error train.py exits with (was: "learning rate probably too large" alone)."""
from __future__ import annotations

import subprocess
import sys

import torch

from hybridasr.data.batch import collate
from hybridasr.train.distributed import DistInfo
from hybridasr.train.loop import run_epoch
from train_helpers import make_tr_cv

TINY = ["--model=blstm", "--num-layers=1", "--hidden-size=8", "--dropout=0",
        "--seq-ordering=laplace:2", "--max-frames=3000", "--num-workers=0", "--max-iters=1",
        "--progress-every=0", "--num-threads=1"]


def test_diverged_training_names_the_batch_utterances(tmp_path, kaldi_digits, repo_dir,
                                                      env_with_path):
    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path)
    # a learning rate of 1e38: after the first update the weights overflow, the second
    # batch's loss is NaN
    p = subprocess.run([sys.executable, str(repo_dir / "pybin/train.py"), *TINY,
                        "--learning-rate=1e38", str(tr), str(cv), str(ali), str(ali),
                        str(tmp_path / "exp")], env=env_with_path, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1, p.stderr[-3000:]
    assert "loss NaN/inf in batch 2 (utterances " in p.stderr, p.stderr[-3000:]
    assert "epoch 1: the loss became NaN or inf in batch 2 (utterances" in p.stderr
    err = [line for line in p.stderr.splitlines() if "did not improve" in line][-1]
    utts = err.split("in batch 2 (utterances ")[1].split(")")[0].replace(" and ", ", ")
    known = set((tr / "utt2spk").read_text().split()[::2])
    assert utts.split(", ")[0] in known and "Traceback" not in p.stderr


def test_run_epoch_names_the_batch_whose_loss_went_nan():
    """Checked every batch (the CPU): that batch; checked every k (a GPU): the k batches."""
    model = torch.nn.Module()
    lin = torch.nn.Linear(3, 4)
    model.forward = lambda x, lengths: lin(x)  # noqa: E731
    model.add_module("lin", lin)
    good = torch.ones(5, 3).numpy(), torch.zeros(5, dtype=torch.int64).numpy()
    bad = (torch.full((5, 3), float("nan")).numpy(), good[1])
    batches = [collate([good, good], ["a", "b"], [], 3), collate([good, bad], ["c", "d"], [], 3)]
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    info = DistInfo()
    stats = run_epoch(model, batches, info, optimizer=opt)
    assert stats.diverged and stats.diverged_at == "batch 2 (utterances c, d)"
    stats = run_epoch(model, batches * 2, info, optimizer=opt, check_every=3)
    assert stats.diverged_at.startswith("one of batches 1..3 (the loss is checked every 3; "
                                        "the last: utterances a, b)")
