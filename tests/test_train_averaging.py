"""--parallel=average with --average-decay on two gloo processes, through the real trainer on
kaldi_digits: every sync point gives V(t) = mean_i v_i(t) - beta * V(t-1) with V(t-1) the
previous sync's result across epoch boundaries, after a rejected epoch the one saved with the
best model, and after a resume the one read back from the checkpoint (epoch<N>.avg)."""
from __future__ import annotations

import json
import os

import pytest
import torch
import torch.multiprocessing as mp

from train_helpers import free_port, load_pybin, make_tr_cv

BETA = 0.1
OPTS = ["--model=blstm", "--num-layers=1", "--hidden-size=16", "--dropout=0",
        "--seq-ordering=laplace:2", "--max-frames=1000", "--num-workers=0",
        "--learning-rate=0.004", "--progress-every=0", "--num-threads=1",
        "--parallel=average", f"--average-decay={BETA}"]


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_avg"))


def _configs(argv):
    """(data, model, train config) as pybin/train.py makes them from ``argv``."""
    from hybridasr.data.options import data_config_from_args
    from hybridasr.models import model_config_from_args
    from hybridasr.train.options import train_config_from_args

    args = load_pybin("train").get_parser().parse_args([*argv, "tr", "cv", "ali", "ali", "exp"])
    return data_config_from_args(args), model_config_from_args(args), \
        train_config_from_args(args)


def _scripted_schedule(accept):
    """Accepts or rejects the epochs as ``accept`` says, at a constant learning rate."""
    from hybridasr.train.lr_schedule import EpochDecision, LrSchedule

    class Scripted(LrSchedule):
        name = "scripted"

        def _decide(self, epoch, cv):
            return EpochDecision(accept[epoch - 1], self.lr, False,
                                 "accepted" if accept[epoch - 1] else "rejected")

    return Scripted(0.004, max_iters=len(accept))


class _Stop(Exception):
    pass


def _worker(rank, world, port, digits, exp, argv, accept, stop_before, out):
    """One rank of a training; every sync point's local parameters and result are recorded
    (and written to ``out``.<rank>.pt). ``stop_before``: leave, as if killed, when that epoch
    would start."""
    import torch.distributed as dist

    import hybridasr.train.trainer as trainer_mod
    from hybridasr.train.distributed import DistInfo

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    records, current = [], {}

    def flat(model):
        return torch.cat([p.detach().reshape(-1).float() for p in model.parameters()]).clone()

    class Recording(trainer_mod.ParameterAverager):
        def average(self, diverged):
            local = flat(self.model)
            done = super().average(diverged)
            records.append({"epoch": current["epoch"], "local": local,
                            "result": flat(self.model), "diverged": done})
            return done

    real_train_epoch = trainer_mod.Trainer.train_epoch

    def train_epoch(self, model, optimizer, epoch, **kw):
        if epoch == stop_before:
            raise _Stop()
        current["epoch"] = epoch
        return real_train_epoch(self, model, optimizer, epoch, **kw)

    trainer_mod.ParameterAverager = Recording
    trainer_mod.Trainer.train_epoch = train_epoch
    tr, cv, ali = digits
    dcfg, mcfg, tcfg = _configs(argv)
    info = DistInfo(rank, world, rank, torch.device("cpu"), True)
    trainer = trainer_mod.Trainer(trainer_mod.TrainInputs(str(tr), str(cv), str(ali), str(ali),
                                                          str(exp)),
                                  dcfg, mcfg, tcfg, _scripted_schedule(accept), info)
    try:
        trainer.run()
    except _Stop:
        pass
    torch.save(records, f"{out}.{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()


def _train(digits, exp, argv, accept, out, stop_before=0):
    mp.start_processes(_worker, args=(2, free_port(), digits, exp, argv, accept, stop_before,
                                      str(out)),
                       nprocs=2, start_method="fork")
    return [torch.load(f"{out}.{r}.pt", weights_only=True) for r in range(2)]


def _history(exp):
    with open(os.path.join(exp, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _check_formula(records, accepted, start=None):
    """Both ranks' sync results follow V(t) = mean_i v_i(t) - BETA * V(t-1) in order, V(t-1)
    restarting at each epoch from the last sync of the best epoch so far (``start``: the one
    a resumed run starts from). Returns (syncs checked, the decay term's size at each first
    sync of an epoch, each epoch's last V)."""
    r0, r1 = records
    assert len(r0) == len(r1) and len(r0) > 0
    best_v, v_prev, epoch = start, start, None
    last_v, first_sync_decay = {}, {}
    for a, b in zip(r0, r1):
        assert a["epoch"] == b["epoch"] and not a["diverged"] and not b["diverged"]
        if a["epoch"] != epoch:  # a new epoch starts from the best model's V
            if epoch is not None and accepted[epoch]:
                best_v = last_v[epoch]
            epoch, v_prev = a["epoch"], best_v
            first_sync_decay[epoch] = None if v_prev is None else \
                float((BETA * v_prev).abs().max())
        expected = (a["local"] + b["local"]) / 2
        if v_prev is not None:
            expected = expected - BETA * v_prev
        torch.testing.assert_close(a["result"], expected, rtol=0, atol=1e-6)
        torch.testing.assert_close(b["result"], a["result"], rtol=0, atol=0)
        v_prev = last_v[epoch] = a["result"]
    return len(r0), first_sync_decay, last_v


def test_decay_follows_the_formula_across_sync_points_epochs_and_a_rejection(digits,
                                                                                tmp_path):
    exp = tmp_path / "exp"
    accept = [True, False, True]  # epoch 2 is rejected: epoch 3 starts from epoch 1
    records = _train(digits, exp, [*OPTS, "--sync-every=2"], accept, tmp_path / "rec")
    h = _history(exp)
    assert [x["accepted"] for x in h[1:]] == accept
    accepted = {x["epoch"]: x["accepted"] for x in h}
    n, first_decay, last_v = _check_formula(records, accepted)
    epochs = [r["epoch"] for r in records[0]]
    assert sorted(set(epochs)) == [1, 2, 3] and all(epochs.count(e) >= 2 for e in (1, 2, 3))
    # the very first sync has no V(t-1); the first sync of every later epoch subtracts one
    # large enough that the plain mean would fail the check above
    assert first_decay[1] is None and first_decay[2] > 1e-3 and first_decay[3] > 1e-3
    # the rejected epoch's syncs differ from epoch 1's: epoch 3 starting from epoch 2's V would
    # have given other parameters
    assert not torch.allclose(last_v[1], last_v[2], atol=1e-4)
    # V of each accepted epoch is saved with its model, not a rejected one's
    for e, ok in ((1, True), (2, False), (3, True)):
        path = exp / "nnet" / f"epoch{e}.avg"
        assert path.exists() == ok, path
        if ok:
            saved = torch.load(path, weights_only=True)
            torch.testing.assert_close(saved["previous"], last_v[e], rtol=0, atol=0)
    # and the end of an epoch is one sync, not two: batches 2, 4, ... and the last (if odd)
    batches = {x["epoch"]: x["batches"] for x in h[1:]}
    for e in (1, 2, 3):
        per_rank = batches[e] // 2
        assert epochs.count(e) == per_rank // 2 + per_rank % 2, (e, batches)


def test_resumed_training_reads_the_previous_average_from_the_checkpoint(digits, tmp_path):
    """--sync-every=0 (one sync per epoch, the README's "as Khomenko et al."): a run stopped
    after epoch 1 and started again applies, at epoch 2's sync, the V(1) saved with epoch 1."""
    argv = [*OPTS, "--sync-every=0"]
    accept = [True, True]
    accepted = {0: True, 1: True, 2: True}
    exp = tmp_path / "exp"
    first = _train(digits, exp, argv, accept, tmp_path / "first", stop_before=2)
    assert [r["epoch"] for r in first[0]] == [1]
    _, _, v = _check_formula(first, accepted)
    state = json.loads((exp / "train_state.json").read_text())
    assert state["epoch"] == 1 and not state["done"]
    saved = torch.load(exp / "nnet" / "epoch1.avg", weights_only=True)
    torch.testing.assert_close(saved["previous"], v[1], rtol=0, atol=0)
    resumed = _train(digits, exp, argv, accept, tmp_path / "resumed")
    assert [r["epoch"] for r in resumed[0]] == [2]
    _, first_decay, _ = _check_formula(resumed, accepted, start=v[1])
    assert first_decay[2] > 1e-3  # the plain mean would have failed the check
    h = _history(exp)
    assert [x["epoch"] for x in h] == [0, 1, 2] and all(x["world_size"] == 2 for x in h[1:])
