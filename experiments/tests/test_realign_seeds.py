"""experiments.realign_seeds on real decodes and its paired bootstrap. The figures: the recipe
with one realignment round on kaldi_digits (tiny model, 2 epochs each, the test set and the
held-out cv split scored), then each model's per-utterance errors (the errors of its best
wer_* line), how it was aligned and trained, the plot and the report's rows. The bootstrap
(the interval of the WER difference between two systems over the same utterances): none for
equal errors, the exact difference where every utterance moves the same way, an interval
around 0 where they cancel."""
from __future__ import annotations

import argparse
import json
import os
import subprocess

import pytest

from experiments import realign_seeds
from experiments.any_dir import make_recipe_copy

TINY_MODEL = "--model=blstm\n--num-layers=1\n--hidden-size=48\n--dropout=0\n"
TINY_SCHEDULE = "--optimizer=adam\n--learning-rate=0.005\n--lr-schedule=newbob\n--max-iters=2\n"


@pytest.fixture(scope="module")
def realign_run(tmp_path_factory, repo_dir, kaldi_digits):
    """A recipe copy after ``run.sh --realign-iters 1 --decode-sets "test train_cv10"``:
    exp/blstm, its alignment exp/blstm_ali1 and exp/blstm_re1 trained on it, both scored."""
    s5 = make_recipe_copy(tmp_path_factory.mktemp("realign") / "s5")
    (s5 / "conf" / "tiny_model.conf").write_text(TINY_MODEL)
    (s5 / "conf" / "tiny_schedule.conf").write_text(TINY_SCHEDULE)
    env = dict(os.environ, HYBRIDASR_ROOT=str(repo_dir), OMP_NUM_THREADS="1")
    cmd = ["./run.sh", "--model-config", "conf/tiny_model.conf",
           "--schedule-config", "conf/tiny_schedule.conf", "--kaldi-dir", str(kaldi_digits),
           "--realign-iters", "1", "--use-kaldi-feats", "true",
           "--train-opts", "--min-batches-per-epoch=20 --num-threads=1",
           "--decode-sets", "test train_cv10"]
    p = subprocess.run(cmd, cwd=s5, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    assert "realignment round 1 of 1" in p.stdout + p.stderr
    return s5


@pytest.mark.slow
def test_figures_from_real_decodes(tmp_path, realign_run, kaldi_digits):
    s5 = realign_run
    cmp = json.loads((s5 / "exp/blstm_ali1/compare_gmm.json").read_text())
    cv_utts = len((s5 / "data/train_cv10/text").read_text().splitlines())
    first_lr = next(x for x in (s5 / "exp/blstm/train.conf").read_text().splitlines()
                    if x.startswith("--learning-rate="))
    end_lr = json.loads((s5 / "exp/blstm/train_state.json").read_text())["schedule"]["lr"]
    assert end_lr > 0

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


def test_paired_bootstrap():
    same = [(3, 3, 10), (0, 0, 5), (2, 2, 8)]
    assert realign_seeds.paired_bootstrap(same, 500) == (0.0, 0.0)
    worse = [(1, 2, 10), (0, 1, 10), (2, 3, 10), (1, 2, 10)]  # one more error in every one
    lo, hi = realign_seeds.paired_bootstrap(worse, 500)
    assert lo == hi == pytest.approx(10.0)
    mixed = [(1, 0, 10), (0, 1, 10)] * 20
    lo, hi = realign_seeds.paired_bootstrap(mixed, 2000)
    assert lo < 0 < hi and hi - lo < 10
