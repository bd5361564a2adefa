"""Checkpoints inside an epoch (``--checkpoint-every-batches``) and an exact resume at
the batch: a training SIGKILLed in the middle of epoch 2 (with dropout) ends, once run again,
with the model and metrics of an uninterrupted one; the loader skips the batches done without
reading their features; stale or unreadable checkpoints are handled (kaldi_digits' real
features and alignments)."""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest
import torch

from train_helpers import load_pybin, make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_PY = os.path.join(REPO, "pybin", "train.py")
EVERY = 3      # batches between in-epoch checkpoints
KILL_AT = 6    # the killed run dies right after epoch 2's checkpoint at this batch
CFG = ["--model=blstm", "--num-layers=2", "--hidden-size=16", "--dropout=0.3",
       "--seq-ordering=laplace:2", "--max-frames=500", "--num-workers=0",
       "--learning-rate=0.004", "--lr-schedule=newbob", "--max-iters=2",
       "--progress-every=0", "--num-threads=1"]
# the killed process: partial.save as it is, then SIGKILL after epoch 2's checkpoint KILL_AT
KILLER = """
import os, runpy, signal, sys
import hybridasr.train.partial as partial
real = partial.save
def save(exp, epoch, stats, *a):
    path = real(exp, epoch, stats, *a)
    if epoch == 2 and stats.batches == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)
    return path
partial.save = save
sys.argv = [{train_py!r}] + sys.argv[1:]
runpy.run_path({train_py!r}, run_name="__main__")
"""


def _args(digits, exp, *extra):
    tr, cv, ali = digits
    return [*CFG, *extra, str(tr), str(cv), str(ali), str(ali), str(exp)]


def _train(digits, exp, *extra) -> int:
    return load_pybin("train").main(_args(digits, exp, *extra))


def _history(exp) -> list:
    return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "frames_per_s")}
            for line in (exp / "metrics.jsonl").read_text().splitlines()]


def _partials(exp) -> list:
    return sorted(n for n in os.listdir(exp / "nnet") if "partial" in n)


def _same_model(a, b) -> None:
    from hybridasr.models import load_model

    ma, _ = load_model(str(a))
    mb, _ = load_model(str(b))
    sa, sb = ma.state_dict(), mb.state_dict()
    assert list(sa) == list(sb)
    for n in sa:
        assert torch.equal(sa[n], sb[n]), n


@pytest.fixture(scope="module")
def runs(tmp_path_factory, kaldi_digits, env_with_path):
    """(digits, an uninterrupted run without in-epoch checkpoints, a copy of the run killed
    after epoch 2's checkpoint at batch KILL_AT)."""
    root = tmp_path_factory.mktemp("inepoch")
    digits = make_tr_cv(kaldi_digits, root / "digits")
    ref = root / "ref"
    assert _train(digits, ref, "--checkpoint-every=0") == 0
    assert _history(ref)[-1]["epoch"] == 2 and _history(ref)[-1]["batches"] > KILL_AT + 1
    killed = root / "killed"
    code = KILLER.format(kill_at=KILL_AT, train_py=TRAIN_PY)
    p = subprocess.run([sys.executable, "-c", code,
                        *_args(digits, killed, f"--checkpoint-every-batches={EVERY}")],
                       env=env_with_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == -9, p.stdout + p.stderr
    return digits, ref, killed


def _copy(killed, tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(killed, exp, symlinks=True)
    return exp


def test_a_run_killed_mid_epoch_resumes_at_the_batch_and_ends_equal(runs, tmp_path, caplog):
    digits, ref, killed = runs
    exp = _copy(killed, tmp_path)
    # killed after epoch 1's commit (its checkpoints removed) and epoch 2's checkpoint at
    # KILL_AT, whose pointer names it (the one at batch EVERY is gone)
    assert json.loads((exp / "train_state.json").read_text())["epoch"] == 1
    assert _partials(exp) == [f"epoch2.batch{KILL_AT}.partial", "epoch2.partial.json"]
    pointer = json.loads((exp / "nnet" / "epoch2.partial.json").read_text())
    assert pointer["batches"] == KILL_AT and pointer["file"] == f"epoch2.batch{KILL_AT}.partial"
    assert pointer["start_model"] == "nnet/epoch1.nnet"
    with caplog.at_level(logging.INFO):
        assert _train(digits, exp, f"--checkpoint-every-batches={EVERY}") == 0
    total = _history(ref)[-1]["batches"]
    assert f"epoch 2: resumed at batch {KILL_AT} of {total} from" in caplog.text
    assert "epoch 1:" not in caplog.text  # epoch 1 was not trained again
    assert _history(exp) == _history(ref)  # losses, frame error rates, counts, decisions
    _same_model(exp / "nnet" / "epoch2.nnet", ref / "nnet" / "epoch2.nnet")
    _same_model(exp / "final.nnet", ref / "final.nnet")
    assert _partials(exp) == []  # epoch 2's commit removed its checkpoint


def test_resume_skips_the_batches_done_without_reading_them(runs):
    from hybridasr.data.config import DataConfig
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.data.loader import make_batch_iterator
    from hybridasr.features.transform import FeatureTransform

    (tr, _, ali), _, _ = runs
    c = DataConfig(seq_ordering="laplace:2", max_frames=500, num_workers=0)
    ds = UtteranceDataset.from_data_dir(str(tr), str(ali / "targets.scp"),
                                        FeatureTransform.from_options(c.transform))
    reads = Counter()
    raw = ds.raw_feats
    ds.raw_feats = lambda utt: (reads.update([utt]), raw(utt))[1]
    full = list(make_batch_iterator(ds, c, 2))
    it = make_batch_iterator(ds, c, 2, skip_batches=KILL_AT)
    reads.clear()  # making it read one utterance for the feature dim
    rest = list(it)
    assert len(rest) == len(full) - KILL_AT
    for a, b in zip(rest, full[KILL_AT:]):
        assert a.keys == b.keys and torch.equal(a.feats, b.feats)
    skipped = {k for b in full[:KILL_AT] for k in b.keys}
    assert not skipped & set(reads), "features of skipped batches were read"
    assert set(reads) == {k for b in rest for k in b.keys}


def test_an_unreadable_pointer_is_an_error_naming_it(runs, tmp_path):
    from hybridasr.errors import FormatError

    digits, ref, killed = runs
    exp = _copy(killed, tmp_path)
    pointer = exp / "nnet" / "epoch2.partial.json"
    pointer.write_text('{"epoch": 2, "batc')
    with pytest.raises(FormatError, match=r"epoch2\.partial\.json: not a readable in-epoch "
                                          r"checkpoint pointer .*delete it"):
        _train(digits, exp)
    # a pointer naming a data file that is gone: an error naming both
    pointer.write_text(json.dumps(dict(json.loads(
        (killed / "nnet" / "epoch2.partial.json").read_text()), file="epoch2.batch3.partial")))
    with pytest.raises(FormatError, match=r"epoch2\.batch3\.partial \(named by .*"
                                          r"epoch2\.partial\.json\)"):
        _train(digits, exp)
    assert json.loads((exp / "train_state.json").read_text())["epoch"] == 1  # nothing lost


def test_checkpoints_of_finished_epochs_are_removed_and_restart_removes_them(runs, tmp_path,
                                                                            caplog):
    from hybridasr.train.checkpoint import remove_run

    digits, ref, killed = runs
    exp = _copy(ref, tmp_path)
    before = _history(exp)
    # left by a kill between an epoch's commit and the removal of its checkpoints
    (exp / "nnet" / "epoch2.partial.json").write_text("not even JSON")
    (exp / "nnet" / "epoch2.batch4.partial").write_text("stale")
    (exp / "nnet" / "epoch1.batch8.partial").write_text("stale")
    with caplog.at_level(logging.INFO):
        assert _train(digits, exp) == 0
    assert "removed epoch2.partial.json: its epoch was already finished" in caplog.text
    assert _partials(exp) == [] and _history(exp) == before
    # train.py --restart=true (remove_run) removes them with the rest of the run
    shutil.copy(killed / "nnet" / "epoch2.partial.json", exp / "nnet")
    shutil.copy(killed / "nnet" / f"epoch2.batch{KILL_AT}.partial", exp / "nnet")
    (exp / "nnet" / ".epoch2.partial.json.x1y2z3.tmp").write_text("torn")
    removed = {os.path.basename(p) for p in remove_run(str(exp))}
    assert {"epoch2.partial.json", f"epoch2.batch{KILL_AT}.partial",
            ".epoch2.partial.json.x1y2z3.tmp"} <= removed
    assert not (exp / "nnet").exists()
