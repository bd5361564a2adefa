"""Ensembles: ``steps/nnet/train.sh --num-models N`` trains N networks of other seeds on
kaldi_digits' real features and alignments, and ``final.nnet`` is one model file averaging
their log-posteriors (``hybridasr.models.ensemble``; Kaldi's decode_score_fusion.sh); every
tool that runs a model runs it unchanged. Members that cannot be averaged are refused."""
from __future__ import annotations

import os
import subprocess

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr.errors import FormatError
from hybridasr.models import build_model, load_model, save_model
from hybridasr.models.ensemble import Ensemble
from hybridasr.models.io import save_ensemble
from train_helpers import make_tr_cv

TINY = ("--max-iters=1 --num-layers=1 --hidden-size=16 --progress-every=0 --num-workers=0 "
        "--min-batches-per-epoch=0")


@pytest.fixture(scope="module")
def trained(tmp_path_factory, repo_dir, env_with_path, kaldi_digits):
    """train.sh --num-models 2 on kaldi_digits (one epoch of a tiny BLSTM each)."""
    work = tmp_path_factory.mktemp("ensemble")
    tr, cv, _ = make_tr_cv(kaldi_digits, work)
    ali = kaldi_digits / "exp/mono_ali"
    exp = work / "exp"
    args = ["bash", str(repo_dir / "steps/nnet/train.sh"), "--num-models", "2",
            "--train-opts", TINY, tr, cv, kaldi_digits / "data/lang", ali, ali, exp]
    p = subprocess.run([str(a) for a in args], cwd=work, env=env_with_path,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return work, exp, cv, args, p.stdout + p.stderr


def seed_of(conf):
    return [ln for ln in conf.read_text().splitlines() if ln.startswith("--seed=")][-1]


def test_train_sh_num_models_writes_an_ensemble(trained):
    work, exp, _, _, out = trained
    assert os.readlink(exp / "final.nnet") == "ensemble.nnet"
    # the first member is the exp dir's own training, the others train.conf's seed + 1000 k
    assert seed_of(exp / "train.conf") == "--seed=777"
    assert seed_of(exp / "member2/train.conf") == "--seed=1777"
    for f in ("member2/final.nnet", "member2/metrics.jsonl", "log/train.member2.log",
              "log/ensemble.log", "ali_train_pdf.counts", "final.mdl"):
        assert (exp / f).exists(), f
    assert "training member 2 of 2" in out and not (exp / "member3").exists()
    model, meta = load_model(str(exp / "final.nnet"))
    assert isinstance(model, Ensemble) and len(model.members) == 2
    assert len(meta["ensemble_members"]) == 2
    assert meta["ensemble_members"][0].startswith(str((exp / "nnet").resolve()))
    # the recipe's summary says so
    from hybridasr.recipe.summary import format_summary, summarize
    s = summarize(str(exp), str(exp / "decode_test"))
    assert s["num_models"] == 2 and "the first of 2 networks" in format_summary(s)


def test_forward_of_the_ensemble_averages_the_members(trained, env_with_path):
    """forward.py through final.nnet: per frame, the log of the normalised geometric mean of
    the members' posteriors (their log-posteriors averaged, up to one constant a frame)."""
    work, exp, cv, _, _ = trained
    outs = {}
    members = load_model(str(exp / "final.nnet"))[1]["ensemble_members"]
    for name, nnet in [("ens", exp / "final.nnet")] + [(f"m{i}", m)
                                                       for i, m in enumerate(members)]:
        ark = work / f"{name}.ark"
        p = subprocess.run(["forward.py", str(nnet), str(cv), f"ark:{ark}"], cwd=work,
                           env=env_with_path, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        outs[name] = dict(kaldiio.load_ark(str(ark)))
    assert len(outs["ens"]) == sum(1 for _ in open(cv / "feats.scp"))
    for utt, ens in outs["ens"].items():
        mean = np.mean([outs[f"m{i}"][utt] for i in range(2)], axis=0)
        want = torch.log_softmax(torch.from_numpy(mean), dim=-1).numpy()
        np.testing.assert_allclose(ens, want, atol=1e-4)
        # not any one member's: the members differ
        assert np.abs(outs["m0"][utt] - outs["m1"][utt]).max() > 1e-3


def test_a_rerun_resumes_and_keeps_the_ensemble(trained, env_with_path):
    work, exp, _, args, _ = trained
    before = (exp / "member2/final.nnet").resolve().read_bytes()
    p = subprocess.run([str(a) for a in args], cwd=work, env=env_with_path,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert os.readlink(exp / "final.nnet") == "ensemble.nnet"
    assert (exp / "member2/final.nnet").resolve().read_bytes() == before  # not retrained
    assert isinstance(load_model(str(exp / "final.nnet"))[0], Ensemble)


def test_bad_num_models_is_refused(trained, repo_dir, env_with_path):
    work, exp, _, args, _ = trained
    bad = [str(a) for a in args]
    bad[bad.index("--num-models") + 1] = "0"
    p = subprocess.run(bad, cwd=work, env=env_with_path, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "--num-models must be a whole number" in p.stderr


def test_members_that_cannot_be_averaged_are_refused(trained, tmp_path, env_with_path):
    work, exp, _, _, _ = trained
    m2, m3 = str(exp / "member2/final.nnet"), load_model(str(exp / "final.nnet"))[1][
        "ensemble_members"][0]
    model, meta = load_model(m2)
    # another number of outputs (another tree's pdfs)
    other = build_model(meta["model_config"], meta["input_dim"], meta["num_outputs"] + 1)
    odd = str(tmp_path / "odd.nnet")
    save_model(odd, other, meta["model_config"], {k: v for k, v in meta.items()
                                                  if k not in ("model_config", "input_dim",
                                                               "num_outputs", "num_pdfs")})
    with pytest.raises(FormatError, match="odd.nnet: number of outputs"):
        save_ensemble(str(tmp_path / "e.nnet"), [m2, odd])
    # an ensemble as a member, and a single network
    with pytest.raises(FormatError, match="is an ensemble already"):
        save_ensemble(str(tmp_path / "e.nnet"), [m2, str(exp / "final.nnet")])
    with pytest.raises(FormatError, match="at least 2 networks"):
        save_ensemble(str(tmp_path / "e.nnet"), [m2])
    assert not (tmp_path / "e.nnet").exists()
    # two members are enough; the CLI writes the same
    p = subprocess.run(["ensemble_nnet.py", m2, m3, str(tmp_path / "two.nnet")],
                       capture_output=True, text=True, env=env_with_path)
    assert p.returncode == 0, p.stderr
    assert len(load_model(str(tmp_path / "two.nnet"))[0].members) == 2
    p = subprocess.run(["ensemble_nnet.py", m2, odd, str(tmp_path / "bad.nnet")],
                       capture_output=True, text=True, env=env_with_path)
    assert p.returncode != 0 and "odd.nnet: number of outputs" in p.stderr


def test_training_from_an_ensemble_goes_on_from_its_first_network(trained, env_with_path):
    """--init-model=<an ensemble> (sequence training, a realignment round after train.sh
    --num-models): training continues the first network alone, with a warning."""
    work, exp, cv, args, _ = trained
    tr = args[-6]
    out = work / "from_ensemble"
    p = subprocess.run(["train.py", *TINY.split(), f"--init-model={exp / 'final.nnet'}",
                        str(tr), str(cv), str(exp / "ali_tr"), str(exp / "ali_cv"), str(out)],
                       cwd=work, env=env_with_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "is an ensemble of 2 networks: training goes on from the first" in p.stderr
    model, _ = load_model(str(out / "final.nnet"))
    assert not isinstance(model, Ensemble)
