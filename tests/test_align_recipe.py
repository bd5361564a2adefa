"""run.sh --realign-iters 1 on kaldi_digits (tiny model, 2 epochs each): round 1 aligns
data/train with the first network into exp/blstm_ali1 (a Kaldi alignment dir, compared with
the GMM's), imports it, retrains exp/blstm_re1 and scores it on the test set and (with
--decode-sets) the held-out cv split; a second run redoes nothing. experiments.realign_seeds'
figures (per-utterance errors, the paired bootstrap, the report) on those real decodes."""
from __future__ import annotations

import argparse
import json
import subprocess

import pytest

from test_recipe_e2e import make_recipe_copy, run_recipe


@pytest.fixture(scope="module")
def realign_seeds():
    from experiments import realign_seeds as mod
    return mod


@pytest.mark.slow
def test_realign_round(tmp_path, repo_dir, kaldi_digits, env_with_path, realign_seeds):
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir), OMP_NUM_THREADS="1")
    fast = ("--kaldi-dir", str(kaldi_digits), "--realign-iters", "1", "--use-kaldi-feats",
            "true", "--train-opts", "--min-batches-per-epoch=20 --num-threads=1",
            "--decode-sets", "test train_cv10")
    out = run_recipe(s5, env, *fast)
    assert "realignment round 1 of 1" in out
    ali = s5 / "exp/blstm_ali1"
    assert (ali / "num_jobs").exists() and (ali / "tree").exists() and (ali / "final.mdl").exists()
    cmp = json.loads((ali / "compare_gmm.json").read_text())
    assert cmp["utterances"] == 120 and cmp["num_only_in_first"] == 0  # every utterance aligned
    assert 0 < cmp["phone_agreement"] <= 100
    assert json.loads((s5 / "exp/blstm_ali1_targets/import_report.json").read_text())[
        "utterances_imported"] == 120
    cv_utts = len((s5 / "data/train_cv10/text").read_text().splitlines())
    for d in ("exp/blstm", "exp/blstm_re1"):
        assert list((s5 / d / "decode_test").glob("wer_*")), d
        assert list((s5 / d / "decode_train_cv10").glob("wer_*")), d
        summary = json.loads((s5 / d / "summary.json").read_text())
        other = summary["other_sets"][f"{d}/decode_train_cv10"]
        assert other["wer_line"].startswith("%WER") and 0 <= other["wer"] <= 100
        assert f"decode_train_cv10:  {other['wer_line']}" in (s5 / d / "summary.txt").read_text()
    assert "realignment round 1: exp/blstm_ali1 against the GMM's" in out
    again = run_recipe(s5, env, *fast, "--stage", "4")
    assert "exp/blstm_ali1 is already aligned with exp/blstm: skipping" in again
    assert "exp/blstm_re1/final.nnet exists: skipping" in again
    for d in ("exp/blstm", "exp/blstm_re1"):
        for x in ("test", "train_cv10"):
            assert f"{d}/decode_{x} is already scored: skipping" in again
    # a set the recipe has not made: an error naming it, before anything is decoded
    p = subprocess.run(["./run.sh", *fast[:-1], "test dev_clean", "--stage", "4",
                        "--stop-stage", "4"], cwd=s5, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0 and "data/dev_clean, which has no feats.scp" in p.stderr
    assert not (s5 / "exp/blstm/decode_dev_clean").exists()

    # the default round (--realign-init previous): aligned at --realign-prior-scale 0.5, it goes
    # on training the aligning model at the learning rate its schedule ended at
    assert "--prior-scale=0.5" in (ali / "log/align.1.log").read_text()
    first_conf = (s5 / "exp/blstm/train.conf").read_text().splitlines()
    first_lr = next(x for x in first_conf if x.startswith("--learning-rate="))
    end_lr = json.loads((s5 / "exp/blstm/train_state.json").read_text())["schedule"]["lr"]
    assert end_lr > 0
    conf = (s5 / "exp/blstm_re1/train.conf").read_text().splitlines()
    assert "--init-model=exp/blstm/final.nnet" in conf and "--keep-initial-model=true" in conf
    assert f"--learning-rate={end_lr:g}" in conf or f"--learning-rate={end_lr}" in conf
    metrics = [json.loads(x) for x in
               (s5 / "exp/blstm_re1/metrics.jsonl").read_text().splitlines()]
    assert metrics[0]["lr"] == pytest.approx(end_lr)  # epoch 0: the aligning model itself

    # --realign-init scratch, --realign-prior-scale and --align-opts reach the round's align.sh,
    # --realign-train-opts its train.py only; a round off a link to the first model (how
    # experiments.realign_seeds --variant shares it) trains no first model again
    (s5 / "exp/blstm_scr").symlink_to("blstm")
    out = run_recipe(s5, env, *fast, "--stage", "4", "--exp-name", "blstm_scr",
                     "--realign-init", "scratch", "--realign-prior-scale", "1.0",
                     "--align-opts", "--beam 12", "--realign-train-opts", "--max-iters=1")
    assert "exp/blstm_scr/decode_test is already scored: skipping" in out
    log = (s5 / "exp/blstm_scr_ali1/log/align.1.log").read_text()
    assert "--prior-scale=1.0" in log and "--beam=12" in log
    conf = (s5 / "exp/blstm_scr_re1/train.conf").read_text().splitlines()
    assert "--init-model=" in conf and first_lr in conf and "--max-iters=1" in conf
    assert "--keep-initial-model=false" in conf
    assert "--max-iters=1" not in first_conf
    assert list((s5 / "exp/blstm_scr_re1/decode_train_cv10").glob("wer_*"))

    # experiments.realign_seeds' figures from these real decodes
    words = str(kaldi_digits / "exp/mono/graph/words.txt")
    first = realign_seeds.model_figures(str(s5), "blstm", words)
    re1 = realign_seeds.model_figures(str(s5), "blstm_re1", words, "blstm_ali1")
    for m in (first, re1):
        assert len(m["test"]["utterances"]) == 30 and len(m["cv"]["utterances"]) == cv_utts
        for k, x in (("test", "test"), ("cv", "train_cv10")):  # the errors of the best wer_*
            line = realign_seeds.best_wer(str(s5 / "exp" / m["exp"] / f"decode_{x}"))[1]
            assert f"[ {m[k]['errors']} / {m[k]['words']}," in line
    assert re1["alignment"]["phone_agreement"] == cmp["phone_agreement"]
    args = argparse.Namespace(rounds=1, bootstrap=200, realign_init="", align_opts="")
    prepared = {"tr_utts": len((s5 / "data/train_tr90/text").read_text().splitlines()),
                "cv_utts": cv_utts, "test_utts_used": 30}
    png = tmp_path / "realign.png"
    realign_seeds.plot({7: [first, re1]}, str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = realign_seeds.report({7: [first, re1]}, args, 1.0, prepared, str(png))
    assert "![test and cv WER per seed](realign.png)" in md
    assert "| 7 | `blstm` | GMM (tri1) |" in md
    assert "|  | `blstm_re1` | `blstm_ali1` | 120 / 120, 0.5 |" in md
    total = first["test"]["errors"] + first["cv"]["errors"]
    assert f"| first model | {first['test']['errors']} | {first['cv']['errors']} |" in md
    assert f"({total}/{first['test']['words'] + first['cv']['words']})" in md
    assert "Round 1: over 1 seed and" in md
    # how each model was trained (train.conf, metrics.jsonl)
    assert first["training"]["init_model"] == ""
    assert f"--learning-rate={first['training']['start_lr']:g}" == first_lr
    assert re1["training"]["init_model"] == "exp/blstm/final.nnet"
    assert re1["training"]["start_lr"] == pytest.approx(end_lr)
    for m, start in ((first, "new model"), (re1, "from `blstm`")):
        t = m["training"]
        assert t["epochs"] >= t["accepted"] >= 1
        assert f"| {start}, {t['start_lr']:g}, {t['accepted']} of {t['epochs']} |" in md
