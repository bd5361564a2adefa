"""steps/nnet/train.sh as a Kaldi user calls it: nnet1's argument order, Kaldi alignment
dirs imported on the way, what decoding needs copied beside the model, failures naming the
log."""
from __future__ import annotations

import json
import subprocess

import pytest

from train_helpers import make_tr_cv

TINY = "--max-iters=1 --num-layers=1 --hidden-size=16 --progress-every=0 --num-workers=0"


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_step"))


def train_sh(repo_dir, env, cwd, *args):
    return subprocess.run(["bash", str(repo_dir / "steps/nnet/train.sh"), *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_train_sh_with_kaldi_alignment_dirs(repo_dir, env_with_path, kaldi_digits, digits,
                                            tmp_path):
    tr, cv, _ = digits
    ali = kaldi_digits / "exp/mono_ali"
    exp = tmp_path / "exp"
    p = train_sh(repo_dir, env_with_path, tmp_path, "--train-opts", TINY, tr, cv,
                 kaldi_digits / "data/lang", ali, ali, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    for f in ("final.nnet", "final.mdl", "ali_train_pdf.counts", "metrics.jsonl",
              "log/train.log", "ali_tr/targets.scp", "ali_cv/targets.scp", "train.conf"):
        assert (exp / f).exists(), f
    assert (exp / "final.mdl").read_bytes() == (ali / "final.mdl").read_bytes()
    n_tr = sum(1 for _ in open(tr / "feats.scp"))
    assert sum(1 for _ in open(exp / "ali_tr/targets.scp")) == n_tr
    assert "--hidden-size=16" in (exp / "train.conf").read_text() or \
        "--hidden_size=16" in (exp / "train.conf").read_text()


def test_train_sh_failures_are_explained(repo_dir, env_with_path, kaldi_digits, digits,
                                         tmp_path):
    tr, cv, ali = digits
    p = train_sh(repo_dir, env_with_path, tmp_path, tr, cv, kaldi_digits / "data/lang",
                 tmp_path, ali, tmp_path / "exp1")
    assert p.returncode != 0 and "neither an imported alignment dir" in p.stderr
    p = train_sh(repo_dir, env_with_path, tmp_path, "--train-opts", "--no-such-option=1",
                 tr, cv, kaldi_digits / "data/lang", ali, ali, tmp_path / "exp2")
    assert p.returncode != 0
    assert "training failed, see" in p.stderr and "exp2/log/train.log" in p.stderr
    p = train_sh(repo_dir, env_with_path, tmp_path, tr, cv)
    assert p.returncode != 0 and "e.g.:" in p.stderr


def test_train_sh_restart_trains_from_scratch(repo_dir, env_with_path, kaldi_digits, digits,
                                              tmp_path):
    """--restart true reaches train.py: the files of an earlier training go (a finished state
    that a resume would keep, a stale epoch), the others stay (resuming, the default, and what
    exactly is removed: test_train_restart.py)."""
    tr, cv, ali = digits
    exp = tmp_path / "exp"
    (exp / "nnet").mkdir(parents=True)
    (exp / "nnet" / "epoch7.nnet_rejected").write_text("stale")
    (exp / "train_state.json").write_text(json.dumps({"done": True, "epoch": 7}))
    (exp / "decode_test").mkdir()
    (exp / "decode_test" / "wer_10").write_text("%WER 0.00 [ 0 / 30, 0 ins, 0 del, 0 sub ]\n")
    mlp = ("--model=mlp --num-layers=1 --hidden-size=8 --seq-ordering=frame_shuffle "
           "--max-frames=2048 --max-iters=1 --num-workers=0 --progress-every=0 --num-threads=1")
    p = train_sh(repo_dir, env_with_path, tmp_path, "--restart", "true", "--train-opts", mlp,
                 tr, cv, kaldi_digits / "data/lang", ali, ali, exp)
    assert p.returncode == 0, p.stderr
    log = (exp / "log/train.log").read_text()
    assert "--restart=true" in log and "initial cross-validation" in log
    assert not (exp / "nnet" / "epoch7.nnet_rejected").exists()
    assert json.loads((exp / "train_state.json").read_text())["epoch"] == 1
    assert (exp / "decode_test" / "wer_10").exists() and (exp / "final.nnet").exists()
    p = train_sh(repo_dir, env_with_path, tmp_path, "--restart", "maybe", "--train-opts", mlp,
                 tr, cv, kaldi_digits / "data/lang", ali, ali, exp)
    assert p.returncode != 0 and 'expected "true" or "false": --restart maybe' in p.stderr
