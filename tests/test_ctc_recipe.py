"""The recipe's CTC route (run.sh --ctc true) on a tiny Kaldi dir cut from
kaldi_digits (20 training utterances of two speakers, 10 test): stage 3 trains exp/blstm_ctc
beside the hybrid, stage 4 decodes it through its TLG graph (wer_LMWT) and without a graph
(greedy and prefix beam search), stage 5 lists them; --ref-normalize true reaches all three
scorings, and switching it back scores again without training again."""
from __future__ import annotations

import json
import subprocess

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy

ARGS = ["--nj", "1", "--model-config", "conf/tiny_model.conf", "--schedule-config",
        "conf/tiny_schedule.conf", "--train-opts", "--min-batches-per-epoch=5",
        "--decode-opts", "--max-active 200", "--ctc", "true",
        "--ctc-model-config", "conf/tiny_model.conf", "--ctc-beam-size", "4"]


def run(s5, env, *more):
    p = subprocess.run(["./run.sh", *ARGS, *more], cwd=s5, env=env, capture_output=True,
                       text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-5000:]
    return out


def scored_normalized(decode_dir):
    return json.loads((decode_dir / "scoring/reference.json").read_text())["normalized"]


def test_ctc_route_with_the_reference_normalised_then_as_given(tmp_path, kaldi_digits,
                                                               repo_dir, env_with_path):
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["jackson_0", "nicolas_0"], ["theo_1"])
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    out = run(s5, env, "--kaldi-dir", str(kaldi), "--ref-normalize", "true")
    ctc = s5 / "exp/blstm_ctc"
    dirs = [ctc / "decode_test", ctc / "decode_test_greedy", ctc / "decode_test_beam4"]
    assert list((ctc / "decode_test").glob("wer_*"))
    assert "%WER" in (ctc / "decode_test_greedy/wer_greedy").read_text()
    assert "%WER" in (ctc / "decode_test_beam4/wer_beam4").read_text()
    assert all(scored_normalized(d) for d in dirs)
    assert "blstm_ctc" in out  # stage 5 names the CTC decodes
    nnet = (ctc / "final.nnet").stat().st_mtime_ns
    out = run(s5, env, "--kaldi-dir", str(kaldi), "--stage", "4")
    assert not any(scored_normalized(d) for d in dirs)
    assert (ctc / "final.nnet").stat().st_mtime_ns == nnet
    out = run(s5, env, "--kaldi-dir", str(kaldi), "--stage", "4")
    assert "exp/blstm_ctc/decode_test is already scored: skipping" in out
