"""Training on kaldi_digits' real features and GMM alignments: convergence of a BLSTM and an
MLP, resumption after a kill, NaN handling, and bad input caught before training."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from train_helpers import load_pybin, make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_PY = os.path.join(REPO, "pybin", "train.py")


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits"))


def train_args(digits, exp, *extra):
    tr, cv, ali = digits
    return [*extra, str(tr), str(cv), str(ali), str(ali), str(exp)]


def _main(argv):
    return load_pybin("train").main(argv)


def history(exp):
    with open(os.path.join(exp, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


BLSTM = ["--model=blstm", "--num-layers=2", "--hidden-size=64", "--dropout=0",
         "--seq-ordering=laplace:4", "--max-frames=2000", "--num-workers=0",
         "--optimizer=adam", "--learning-rate=0.004", "--lr-schedule=newbob",
         "--progress-every=0", "--num-threads=1"]


def decode_test_wer(model_path, kaldi_digits, ali) -> float:
    """forward.py's work (priors from the alignment counts) and the embedded decoder on
    kaldi_digits' data/test with its real graph; the WER in percent."""
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.forward import forward_dataset, load_model_and_data
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.decode.wer import compute_wer
    from hybridasr.kaldi.transition_model import read_transition_model

    cwd = os.getcwd()
    os.chdir(kaldi_digits)  # data/test's scp paths are relative to the Kaldi dir
    try:
        model, meta, test = load_model_and_data(str(model_path), "data/test",
                                                torch.device("cpu"))
        tm = read_transition_model("exp/mono_ali/final.mdl")
        priors = load_log_priors(str(ali / "pdf_counts"), meta["num_pdfs"])
        lls = {}
        forward_dataset(model, test, torch.device("cpu"), lls.__setitem__, meta["num_pdfs"],
                        priors)
        graph = load_graph_dir("exp/mono/graph")
        dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                            DecodeOptions(beam=13, max_active=7000, min_active=200),
                            max_ilabel=graph.max_ilabel)
        hyps = {u: [graph.words[w] for w in dec.decode(ll, 0.1, u).words]
                for u, ll in lls.items()}
        stats = compute_wer(read_text_archive("data/test/text"), hyps)
    finally:
        os.chdir(cwd)
    assert stats.num_words == 30 and stats.num_absent == 0
    return stats.wer


def test_blstm_reaches_cv_fer_below_35_percent(digits, tmp_path, kaldi_digits):
    exp = tmp_path / "blstm"
    ali = digits[2]
    assert _main(train_args(digits, exp, *BLSTM, "--max-iters=25")) == 0
    h = history(exp)
    assert h[0]["epoch"] == 0 and h[0]["reason"] == "initial model"
    best = min(x["cv_fer"] for x in h if x.get("accepted"))
    assert best < 0.35, h
    for x in h[1:]:
        assert {"train_loss", "cv_loss", "cv_fer", "lr", "accepted", "frames_per_s",
                "padding_ratio"} <= set(x)
    assert os.path.islink(exp / "final.nnet")
    state = json.loads((exp / "train_state.json").read_text())
    assert os.path.realpath(exp / "final.nnet") == os.path.realpath(exp / state["best"])
    assert (exp / "curves.png").stat().st_size > 1000
    assert (exp / "train.conf").exists() and (exp / "config.json").exists()
    # the saved model decodes: it loads (weights only) with the transform in its meta
    from hybridasr.models import load_model

    model, meta = load_model(str(exp / "final.nnet"))
    assert meta["num_pdfs"] == 70 and meta["transform"]["norm_means"] is True
    # ... and decodes kaldi_digits' test set with the real HCLG (the bar: <= 5% WER)
    assert decode_test_wer(exp / "final.nnet", kaldi_digits, ali) <= 5.0
    # accepted epochs improve the best CV loss monotonically; rejected ones are kept aside
    best_loss = h[0]["cv_loss"]
    for x in h[1:]:
        if x["accepted"]:
            assert x["cv_loss"] < best_loss
            best_loss = x["cv_loss"]
        else:
            assert x["model"].endswith("_rejected") and (exp / x["model"]).exists()


def test_mlp_frame_shuffle_reaches_cv_fer_below_35_percent(digits, tmp_path):
    exp = tmp_path / "mlp"
    args = ["--model=mlp", "--num-layers=2", "--hidden-size=256", "--activation=relu",
            "--splice=5", "--seq-ordering=frame_shuffle", "--max-frames=256",
            "--randomizer-size=100000", "--num-workers=0", "--optimizer=adam",
            "--learning-rate=0.001", "--lr-schedule=newbob", "--max-iters=15",
            "--progress-every=0", "--num-threads=1"]
    assert _main(train_args(digits, exp, *args)) == 0
    h = history(exp)
    assert min(x["cv_fer"] for x in h if x.get("accepted")) < 0.35, h


def _proc_train(argv, env_with_path):
    return subprocess.Popen([sys.executable, TRAIN_PY, *argv], env=env_with_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


SMALL = ["--model=blstm", "--num-layers=1", "--hidden-size=32", "--dropout=0.2",
         "--seq-ordering=laplace:2", "--max-frames=1500", "--num-workers=0",
         "--learning-rate=0.004", "--lr-schedule=newbob", "--max-iters=4",
         "--progress-every=0", "--num-threads=1"]


def test_killed_run_resumes_to_the_same_epochs(digits, tmp_path, env_with_path):
    ref = tmp_path / "ref"
    p = _proc_train(train_args(digits, ref, *SMALL), env_with_path)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    # the same training, killed with SIGKILL once epoch 2 is under way, then started again
    exp = tmp_path / "killed"
    p = _proc_train(train_args(digits, exp, *SMALL), env_with_path)
    state = exp / "train_state.json"
    deadline = time.time() + 240
    while time.time() < deadline:
        if state.exists() and json.loads(state.read_text())["epoch"] >= 1:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    killed_at = json.loads(state.read_text())["epoch"]
    assert killed_at < 4, "training finished before it could be killed"
    p = _proc_train(train_args(digits, exp, *SMALL), env_with_path)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    assert "resuming after epoch" in out
    h_ref, h = history(ref), history(exp)
    strip = lambda hs: [{k: v for k, v in x.items()  # noqa: E731
                         if k not in ("seconds", "frames_per_s")} for x in hs]
    assert strip(h) == strip(h_ref)
    from hybridasr.models import load_model

    a, _ = load_model(str(ref / "final.nnet"))
    b, _ = load_model(str(exp / "final.nnet"))
    for (n, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), n
    # and a third run has nothing left to do
    p = _proc_train(train_args(digits, exp, *SMALL), env_with_path)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0 and "epoch 5" not in out
    assert history(exp) == h


def test_nan_loss_rejects_the_epoch_and_halves_the_rate(digits, tmp_path, monkeypatch):
    import hybridasr.train.trainer as trainer_mod
    from hybridasr.train.loop import run_epoch as real_run_epoch

    def poisoned(model, batches, info, **kw):
        if kw.get("what") == "epoch 2":
            def nan_batches():
                for b in batches:
                    b.feats[:] = float("nan")
                    yield b
            return real_run_epoch(model, nan_batches(), info, **kw)
        return real_run_epoch(model, batches, info, **kw)

    monkeypatch.setattr(trainer_mod, "run_epoch", poisoned)
    exp = tmp_path / "nan"
    assert _main(train_args(digits, exp, *SMALL[:-3], "--max-iters=3", "--progress-every=0",
                            "--num-threads=1")) == 0
    h = history(exp)
    e2 = [x for x in h if x["epoch"] == 2][0]
    assert e2["accepted"] is False and e2["cv_loss"] is None
    assert e2["next_lr"] == pytest.approx(e2["lr"] * 0.5)
    e3 = [x for x in h if x["epoch"] == 3][0]
    assert e3["lr"] == pytest.approx(e2["lr"] * 0.5)
    assert all(torch.isfinite(p).all() for p in
               __import__("hybridasr.models", fromlist=["load_model"]).load_model(
                   str(exp / "final.nnet"))[0].parameters())


def test_targets_outside_the_outputs_fail_before_training(digits, tmp_path):
    from hybridasr.errors import FormatError

    tr, cv, ali = digits
    bad = tmp_path / "ali_bad"
    bad.mkdir()
    for name in os.listdir(ali):
        if not name.startswith("."):
            os.symlink(ali / name, bad / name)
    os.unlink(bad / "num_pdfs")
    (bad / "num_pdfs").write_text("50\n")
    with pytest.raises(FormatError, match=r"outside the network's 50 outputs"):
        _main([*SMALL, str(tr), str(cv), str(bad), str(bad), str(tmp_path / "exp")])
    assert not (tmp_path / "exp" / "nnet" / "epoch0.nnet").exists()


def test_a_different_model_in_an_existing_exp_dir_is_refused(digits, tmp_path):
    from hybridasr.errors import ConfigError

    exp = tmp_path / "exp"
    assert _main(train_args(digits, exp, *SMALL[:-3], "--max-iters=1", "--progress-every=0",
                            "--num-threads=1")) == 0
    with pytest.raises(ConfigError, match="another model"):
        _main(train_args(digits, exp, *SMALL[:-3], "--max-iters=1", "--hidden-size=48"))


def test_training_that_never_improves_fails_naming_the_rejected_epochs(
        digits, tmp_path, repo_dir, env_with_path, kaldi_digits):
    """Kaldi's train_scheduler.sh errors out when no epoch beats the initial network: so does
    steps/nnet/train.sh (a learning rate so large that newbob rejects every epoch), with no
    final.nnet left pointing at the untrained epoch0.nnet, also when run again."""
    tr, cv, ali = digits
    exp = tmp_path / "exp"
    opts = ("--model=blstm --num-layers=1 --hidden-size=16 --seq-ordering=laplace:2 "
            "--max-frames=3000 --num-workers=0 --progress-every=0 --num-threads=1 "
            "--optimizer=adam --learning-rate=5 --lr-schedule=newbob "
            "--max-iters=3")

    def train_sh():
        return subprocess.run(["bash", str(repo_dir / "steps/nnet/train.sh"), "--train-opts",
                               opts, str(tr), str(cv), str(kaldi_digits / "data/lang"),
                               str(ali), str(ali), str(exp)], cwd=tmp_path, env=env_with_path,
                              capture_output=True, text=True, timeout=300)

    p = train_sh()
    assert p.returncode != 0, p.stdout + p.stderr
    h = history(exp)
    rejected = [x["epoch"] for x in h[1:] if not x["accepted"]]
    assert rejected == [x["epoch"] for x in h[1:]] and len(rejected) >= 2, h
    # the log and train.sh's own message name the epochs, the rate and the remedy
    log_text = (exp / "log" / "train.log").read_text()
    for text in (log_text, p.stderr):
        assert "did not improve on the initial model" in text, text
        assert f"epochs {', '.join(str(e) for e in rejected[:1])} (learning rate 5" in text
        for e, x in zip(rejected, h[1:]):
            assert f"{e} (learning rate {x['lr']:g}" in text
        assert "smaller --learning-rate" in text
    assert not os.path.lexists(exp / "final.nnet")
    state = json.loads((exp / "train_state.json").read_text())
    assert state["done"] and state["best_epoch"] == 0
    # a final.nnet -> epoch0.nnet left by an older trainer is removed when run again
    os.symlink(os.path.join("nnet", "epoch0.nnet"), exp / "final.nnet")
    p = train_sh()
    assert p.returncode != 0 and "did not improve on the initial model" in p.stderr
    assert not os.path.lexists(exp / "final.nnet")
    assert history(exp) == h  # nothing was trained again


def test_init_model_starts_from_its_weights(digits, tmp_path):
    """--init-model (nnet1's --nnet-init): the new run's initial cross-validation is the given
    model's (same weights, data and targets), not a new model's; another config is refused."""
    from hybridasr.errors import ConfigError

    opts = [*SMALL[:-3], "--progress-every=0", "--num-threads=1"]
    first, second = tmp_path / "first", tmp_path / "second"
    assert _main(train_args(digits, first, *opts, "--max-iters=1")) == 0
    h1 = history(first)
    assert _main(train_args(digits, second, *opts, "--max-iters=1",
                            f"--init-model={first}/final.nnet")) == 0
    h2 = history(second)
    best = min(e["cv_loss"] for e in h1 if e["accepted"])
    assert h2[0]["cv_loss"] == pytest.approx(best, rel=1e-5)
    assert h2[0]["cv_loss"] < h1[0]["cv_loss"]  # not a new model's loss
    with pytest.raises(ConfigError, match="--init-model"):
        _main(train_args(digits, tmp_path / "third", *opts, "--max-iters=1",
                         "--hidden-size=48", f"--init-model={first}/final.nnet"))


def test_keep_initial_model_when_no_epoch_improves(digits, tmp_path, caplog):
    """--keep-initial-model (a realignment round that goes on training): when every epoch is
    rejected the --init-model itself becomes final.nnet, with a warning; without it, the
    error of a training that never improves."""
    from hybridasr.models.io import load_model
    from hybridasr.train.checkpoint import NoImprovementError

    opts = [*SMALL[:-3], "--progress-every=0", "--num-threads=1"]
    first = tmp_path / "first"
    assert _main(train_args(digits, first, *opts, "--max-iters=1")) == 0
    diverge = [*opts, "--max-iters=2", "--learning-rate=5", f"--init-model={first}/final.nnet"]
    with pytest.raises(NoImprovementError, match="did not improve on the initial model"):
        _main(train_args(digits, tmp_path / "fails", *diverge))
    assert not os.path.lexists(tmp_path / "fails" / "final.nnet")
    kept = tmp_path / "kept"
    with caplog.at_level("WARNING"):
        assert _main(train_args(digits, kept, *diverge, "--keep-initial-model=true")) == 0
    h = history(kept)
    assert len(h) == 3 and not any(x["accepted"] for x in h[1:])
    assert os.path.realpath(kept / "final.nnet") == os.path.realpath(kept / "nnet/epoch0.nnet")
    assert "it is kept as final.nnet (--keep-initial-model)" in caplog.text
    a, b = load_model(str(first / "final.nnet"))[0], load_model(str(kept / "final.nnet"))[0]
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_cv_criterion_errors_judges_epochs_by_the_cv_frame_errors(digits, tmp_path):
    """--cv-criterion=errors: newbob accepts or rejects each epoch by its cv frame error rate
    (the figure its reason quotes), not by the cv loss."""
    exp = tmp_path / "fer"
    assert _main(train_args(digits, exp, *SMALL[:-3], "--max-iters=3", "--progress-every=0",
                            "--num-threads=1", "--cv-criterion=errors")) == 0
    h = history(exp)
    assert len(h) >= 3
    best = h[0]["cv_fer"]
    for rec in h[1:]:
        assert f"cv {rec['cv_fer']:.4f}" in rec["reason"], rec
        assert rec["accepted"] == (rec["cv_fer"] < best)
        best = min(best, rec["cv_fer"]) if rec["accepted"] else best
    conf = (exp / "train.conf").read_text()
    assert "--cv-criterion=errors" in conf
    # the final combination (a resume with --combine-models) judges its averages by the same
    # figure, and names it so
    assert _main(train_args(digits, exp, *SMALL[:-3], "--max-iters=3", "--progress-every=0",
                            "--num-threads=1", "--cv-criterion=errors",
                            "--combine-models=3")) == 0
    kept = [rec for rec in h[1:] if rec["accepted"]]
    state = json.loads((exp / "train_state.json").read_text())
    if len(kept) >= 2:
        report = json.loads((exp / "combine.json").read_text())
        assert report["criterion"] == "cv_fer" and "cv_loss" not in report
        assert report["candidates"][0]["cv_fer"] == pytest.approx(kept[-1]["cv_fer"], abs=1e-6)
        assert report["cv_fer"] == min(c["cv_fer"] for c in report["candidates"])
        assert state["combined"]["cv_fer"] == report["cv_fer"]
    else:
        assert state["combined"]["model"] is None
    with pytest.raises(SystemExit):
        _main(train_args(digits, tmp_path / "bad", *SMALL, "--cv-criterion=wer"))
