"""``train.py --restart=true``: the trainer removes its own files (and nothing else) and trains
from epoch 0; without it a run resumes; a kill in the middle of a restart leaves either the old
run or a dir that the next training starts over in."""
from __future__ import annotations

import json
import os

import pytest

from train_helpers import load_pybin, make_tr_cv

# global normalisation: global_stats.json is written too (and reused by a resumed run)
TINY = ["--model=mlp", "--num-layers=1", "--hidden-size=8", "--dropout=0", "--global-norm=true",
        "--seq-ordering=frame_shuffle", "--max-frames=2048", "--num-workers=0",
        "--max-iters=2", "--progress-every=0", "--num-threads=1"]
OLD = 10**9  # ns: a time stamp no file written by a test has
NOT_THE_TRAINERS = {  # what train.sh, the decoder or a user keeps in an exp dir
    "log/train.log": "a log\n", "final.mdl": "model\n", "ali_train_pdf.counts": "[ 1 2 ]\n",
    "decode_test/wer_10": "%WER 1.00 [ 1 / 100, 0 ins, 0 del, 1 sub ]\n",
    "nnet/nnet_iter1": "a Kaldi nnet1 file\n", "nnet/epoch1.nnet.bak": "a user's copy\n",
    "metrics.jsonl.orig": "kept\n",
}


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("restart"))


def _train(digits, exp, *extra) -> int:
    tr, cv, ali = digits
    return load_pybin("train").main([*TINY, *extra, str(tr), str(cv), str(ali), str(ali),
                                     str(exp)])


def _files(exp) -> dict:
    """relative path -> (inode, mtime_ns) of every file and symlink under exp."""
    out = {}
    for root, _, names in os.walk(exp):
        for n in names:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, exp)] = (st.st_ino, st.st_mtime_ns)
    return out


def _plant(exp) -> None:
    for rel, text in NOT_THE_TRAINERS.items():
        (exp / rel).parent.mkdir(parents=True, exist_ok=True)
        (exp / rel).write_text(text)


def _planted_untouched(exp) -> None:
    for rel, text in NOT_THE_TRAINERS.items():
        assert (exp / rel).read_text() == text, rel


def _history(exp) -> list:
    return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "frames_per_s")}
            for line in (exp / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def finished(digits, tmp_path_factory):
    """A finished tiny training beside files that are not the trainer's: (exp, its files)."""
    exp = tmp_path_factory.mktemp("finished") / "exp"
    exp.mkdir()
    _plant(exp)
    assert _train(digits, exp) == 0
    state = json.loads((exp / "train_state.json").read_text())
    assert state["done"] and state["epoch"] == 2 and (exp / "global_stats.json").exists()
    return exp, _files(exp)


def _copy(finished, tmp_path):
    import shutil

    exp = tmp_path / "exp"
    shutil.copytree(finished[0], exp, symlinks=True)
    return exp


def test_remove_run_removes_every_file_of_the_trainer_and_nothing_else(finished, tmp_path):
    from hybridasr.train.checkpoint import remove_run

    exp = _copy(finished, tmp_path)
    (exp / "nnet" / ".epoch3.opt.abc123xy.tmp").write_text("torn")  # a killed atomic write
    (exp / ".train_state.json.k2j3h4g5.tmp").write_text("torn")
    # the final combination's (--combine-models: hybridasr.train.combine)
    (exp / "nnet" / "combined.nnet").write_text("an average")
    (exp / "combine.json").write_text("{}")
    before = set(_files(exp))
    removed = {os.path.relpath(p, exp) for p in remove_run(str(exp))}
    kept = {"train.conf", "config.json", ".lock"} | set(NOT_THE_TRAINERS)  # the command line's own
    assert removed == before - kept, sorted(removed ^ (before - kept))
    assert set(_files(exp)) == kept
    _planted_untouched(exp)
    assert remove_run(str(exp)) == []  # nothing left to remove: idempotent


def test_resume_keeps_a_finished_run_and_restart_trains_from_epoch_0(finished, digits,
                                                                     tmp_path, caplog):
    import logging

    exp = _copy(finished, tmp_path)
    ref = _history(exp)
    before = _files(exp)
    (exp / "final.nnet").unlink()  # as run.sh does to train again: a resume links it again
    assert _train(digits, exp, "--restart=false") == 0
    after = _files(exp)
    for rel in ("train_state.json", "nnet/epoch0.nnet", "nnet/epoch2.nnet", "global_stats.json"):
        assert after[rel] == before[rel], f"{rel} was rewritten by a resume"
    assert os.path.islink(exp / "final.nnet") and _history(exp) == ref
    # a stale model file of an older run: a restart removes it with the rest
    (exp / "nnet" / "epoch7.nnet_rejected").write_text("stale")
    (exp / "global_stats.json").write_text('{"global_mean": [0], "global_std": [1]}')
    rewritten = ("train_state.json", "nnet/epoch0.nnet", "nnet/epoch1.nnet", "global_stats.json")
    for rel in rewritten:  # an old time stamp: a file written again has a new one
        os.utime(exp / rel, ns=(OLD, OLD))
    with caplog.at_level(logging.INFO):
        assert _train(digits, exp, "--restart=true") == 0
    assert "initial cross-validation" in caplog.text and "resuming" not in caplog.text
    for rel in rewritten:
        assert (exp / rel).stat().st_mtime_ns != OLD, f"{rel} was not written again"
    assert not (exp / "nnet" / "epoch7.nnet_rejected").exists()
    assert len(json.loads((exp / "global_stats.json").read_text())["global_mean"]) == 13
    assert _history(exp) == ref  # the same seed: the same epochs as the first run
    _planted_untouched(exp)
    assert "\n--restart" not in (exp / "train.conf").read_text()  # an action, not a setting


def test_a_restart_killed_after_the_commit_point_starts_over(finished, digits, tmp_path):
    """What a kill after ``remove_run`` has removed ``final.nnet`` and ``train_state.json``
    leaves: a plain run uses nothing of the old files (a wrong global_stats.json, a stale
    epoch file) and ends as the first run did."""
    exp = _copy(finished, tmp_path)
    ref = _history(exp)
    (exp / "final.nnet").unlink()
    (exp / "train_state.json").unlink()
    (exp / "global_stats.json").write_text('{"global_mean": [0], "global_std": [1]}')
    (exp / "nnet" / "epoch7.nnet_rejected").write_text("stale")
    assert _train(digits, exp) == 0
    assert not (exp / "nnet" / "epoch7.nnet_rejected").exists()
    assert len(json.loads((exp / "global_stats.json").read_text())["global_mean"]) == 13
    assert _history(exp) == ref
    _planted_untouched(exp)
