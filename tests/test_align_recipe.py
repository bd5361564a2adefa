"""run.sh --realign-iters 1 on kaldi_digits (tiny model, 2 epochs each): round 1 aligns
data/train with the first network into exp/blstm_ali1 (a Kaldi alignment dir, compared with
the GMM's), imports it, retrains exp/blstm_re1 and scores it on the test set and (with
--decode-sets) the held-out cv split, each set's best wer_* line the errors of its references
against that LM weight's transcripts; a second run redoes nothing; the round's options reach
its align.sh and train.py. (experiments.realign_seeds' figures on such decodes are checked in
experiments/tests/test_realign_seeds.py.)"""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from hybridasr.decode.wer import WerStats
from hybridasr.kaldi.io.table import read_map, read_text_archive
from hybridasr.recipe.summary import best_wer
from test_recipe_e2e import make_recipe_copy, run_recipe


def best_line_and_errors(decode_dir, words_txt):
    """(the best wer_* line, {utterance: (errors, words)} of scoring/test_filt.txt against the
    scoring/ transcript of that wer_*'s LM weight and penalty)."""
    _, line, path = best_wer(str(decode_dir))
    m = re.fullmatch(r"wer_(\d+)(?:_([0-9.]+))?", path.rsplit("/", 1)[-1])
    assert m, path
    sub = f"penalty_{m.group(2)}/" if m.group(2) else ""
    id2word = {v: k for k, v in read_map(words_txt).items()}
    hyps = read_text_archive(str(decode_dir / "scoring" / f"{sub}{m.group(1)}.tra"))
    out = {}
    for u, ref in read_text_archive(str(decode_dir / "scoring" / "test_filt.txt")).items():
        stats = WerStats()
        stats.add(ref, [id2word.get(w, w) for w in hyps.get(u, [])])
        out[u] = (stats.word_errs, stats.num_words)
    return line, out


@pytest.mark.slow
def test_realign_round(tmp_path, repo_dir, kaldi_digits, env_with_path):
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

    # each set's best wer_* line: the errors of its references (every utterance of the set)
    # against the transcript of that LM weight and penalty; each model accepted an epoch
    words = str(kaldi_digits / "exp/mono/graph/words.txt")
    for d in ("exp/blstm", "exp/blstm_re1"):
        for x, n in (("test", 30), ("train_cv10", cv_utts)):
            line, utts = best_line_and_errors(s5 / d / f"decode_{x}", words)
            assert len(utts) == n, (d, x)
            errs, nwords = sum(e for e, _ in utts.values()), sum(w for _, w in utts.values())
            assert f"[ {errs} / {nwords}," in line, (d, x, line)
        rows = (s5 / d / "metrics.jsonl").read_text().splitlines()
        epochs = [r for r in map(json.loads, filter(str.strip, rows)) if r.get("epoch", 0) > 0]
        assert len(epochs) >= sum(bool(r.get("accepted")) for r in epochs) >= 1, d
    assert [x for x in first_conf if x.startswith("--init-model")] in ([], ["--init-model="])
