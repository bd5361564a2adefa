"""``train.py --label-smoothing`` (hybridasr/train/cross_entropy.py): the training
loss is torch's label-smoothed cross-entropy over the real frames, the reported and cv losses
and the frame errors stay those of plain cross-entropy; a training on kaldi_digits' real
features and alignments with it reports a cv loss comparable to one without; bad values and
other objectives are refused at start, naming the option."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from hybridasr.errors import ConfigError
from hybridasr.features.transform import IGNORE_INDEX
from hybridasr.train.cross_entropy import SmoothedCrossEntropy
from train_helpers import load_pybin, make_tr_cv


def _batch():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 5, 7, generator=g, requires_grad=True)
    targets = torch.randint(0, 7, (2, 5), generator=g)
    targets[1, 3:] = IGNORE_INDEX  # padding of the shorter utterance
    return logits, SimpleNamespace(targets=targets)


def test_training_loss_is_torchs_smoothed_cross_entropy_and_reports_plain_ce():
    logits, batch = _batch()
    flat, t = logits.reshape(-1, 7), batch.targets.reshape(-1)
    loss, reported, errors, num = SmoothedCrossEntropy(0.1)(logits, batch)
    want = F.cross_entropy(flat, t, ignore_index=IGNORE_INDEX, label_smoothing=0.1,
                           reduction="sum")
    plain = F.cross_entropy(flat, t, ignore_index=IGNORE_INDEX, reduction="sum")
    assert num == 8
    assert torch.allclose(loss, want, atol=1e-5) and torch.allclose(reported, plain, atol=1e-5)
    assert not torch.allclose(loss, plain)
    real = t != IGNORE_INDEX
    assert int(errors) == int(((flat.argmax(-1) != t) & real).sum())
    loss.backward()
    grad = logits.grad.reshape(-1, 7)
    assert torch.all(grad[~real] == 0)  # padding frames get no gradient
    # the gradient of one real frame: softmax minus the smoothed target
    i = int(real.nonzero()[0])
    target = torch.full((7,), 0.1 / 7)
    target[t[i]] += 0.9
    assert torch.allclose(grad[i], flat[i].softmax(-1).detach() - target, atol=1e-5)


def test_cross_validation_gets_plain_cross_entropy():
    logits, batch = _batch()
    with torch.no_grad():
        loss, reported, _, _ = SmoothedCrossEntropy(0.2)(logits, batch)
    plain = F.cross_entropy(logits.reshape(-1, 7), batch.targets.reshape(-1),
                            ignore_index=IGNORE_INDEX, reduction="sum")
    assert torch.allclose(loss, plain) and torch.allclose(reported, plain)


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("ls") / "digits")


def test_a_training_with_label_smoothing_on_real_data(digits, tmp_path):
    tr, cv, ali = digits
    cfg = ["--model=blstm", "--num-layers=1", "--hidden-size=32", "--dropout=0",
           "--seq-ordering=laplace:2", "--max-frames=500", "--num-workers=0",
           "--lr-schedule=newbob", "--max-iters=3", "--progress-every=0", "--num-threads=1"]
    train = load_pybin("train")
    runs = {}
    for eps in (0.0, 0.1):
        exp = tmp_path / f"ls{eps}"
        assert train.main([*cfg, f"--label-smoothing={eps}", str(tr), str(cv), str(ali),
                           str(ali), str(exp)]) == 0
        runs[eps] = [json.loads(x) for x in open(exp / "metrics.jsonl")]
        assert f"--label-smoothing={eps}" in (exp / "train.conf").read_text().split("\n")
    plain, smoothed = runs[0.0], runs[0.1]
    # epoch 0 (the initial cv) is the same network: identical plain cv losses
    assert smoothed[0]["cv_loss"] == pytest.approx(plain[0]["cv_loss"])
    # the smoothed loss trained another network (same seed and batches otherwise)
    assert smoothed[1]["cv_loss"] != pytest.approx(plain[1]["cv_loss"], rel=1e-6)
    # trained, the cv loss falls and stays plain cross-entropy (no smoothing term: the same
    # scale as without, within what three epochs of a different loss move it)
    assert smoothed[-1]["cv_loss"] < smoothed[0]["cv_loss"]
    assert abs(smoothed[-1]["cv_loss"] - plain[-1]["cv_loss"]) < 0.5


@pytest.mark.parametrize("extra,message", [
    (["--label-smoothing=1.0"], "--label-smoothing=1.0: below 1"),
    (["--label-smoothing=-0.1"], "label-smoothing"),
    (["--label-smoothing=0.1", "--objective=mmi", "--seq-denlats=x"],
     "--label-smoothing is for --objective=ce"),
])
def test_bad_values_are_refused_at_start(digits, tmp_path, extra, message, capsys):
    tr, cv, ali = digits
    train = load_pybin("train")
    with pytest.raises((ConfigError, SystemExit)) as e:
        rc = train.main(["--num-workers=0", *extra, str(tr), str(cv), str(ali), str(ali),
                         str(tmp_path / "exp")])
        assert rc != 0
        raise SystemExit(rc)
    text = str(e.value) + capsys.readouterr().err
    assert message in text
