"""run.sh --realign-iters 1 on kaldi_digits (tiny model, 2 epochs each): round 1 aligns
data/train with the first network into exp/blstm_ali1 (a Kaldi alignment dir, compared with
the GMM's), imports it, retrains exp/blstm_re1 and scores it; a second run redoes nothing."""
from __future__ import annotations

import json

import pytest

from test_recipe_e2e import make_recipe_copy, run_recipe


@pytest.mark.slow
def test_realign_round(tmp_path, repo_dir, kaldi_digits, env_with_path):
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir), OMP_NUM_THREADS="1")
    fast = ("--kaldi-dir", str(kaldi_digits), "--realign-iters", "1", "--use-kaldi-feats",
            "true", "--train-opts", "--min-batches-per-epoch=20 --num-threads=1")
    out = run_recipe(s5, env, *fast)
    assert "realignment round 1 of 1" in out
    ali = s5 / "exp/blstm_ali1"
    assert (ali / "num_jobs").exists() and (ali / "tree").exists() and (ali / "final.mdl").exists()
    cmp = json.loads((ali / "compare_gmm.json").read_text())
    assert cmp["utterances"] == 120 and cmp["num_only_in_first"] == 0  # every utterance aligned
    assert 0 < cmp["phone_agreement"] <= 100
    assert json.loads((s5 / "exp/blstm_ali1_targets/import_report.json").read_text())[
        "utterances_imported"] == 120
    for d in ("exp/blstm", "exp/blstm_re1"):
        assert list((s5 / d / "decode_test").glob("wer_*")), d
        assert (s5 / d / "summary.txt").exists()
    assert "realignment round 1: exp/blstm_ali1 against the GMM's" in out
    again = run_recipe(s5, env, *fast, "--stage", "4")
    assert "exp/blstm_ali1 is already aligned with exp/blstm: skipping" in again
    assert "exp/blstm_re1/final.nnet exists: skipping" in again
    assert "exp/blstm_re1/decode_test is already scored: skipping" in again
