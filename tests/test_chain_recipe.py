"""The chain recipe (egs/kaldi_dir/s5/local/chain/run_tdnn.sh) on a tiny Kaldi dir cut from
kaldi_digits (20 training utterances of two speakers, 10 test) after run.sh's stages 0-2: the
chain lang dir, the tree at frame subsampling 3, den.fst, a tiny TDNN-F trained with LF-MMI,
the --self-loop-scale 1.0 graph, decoding and scoring, and the summary beside the GMM's; run
again, it redoes nothing."""
from __future__ import annotations

import os
import subprocess

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy

CHAIN_ARGS = ["--nj", "1", "--model-config", "conf/model/tdnnf_small.conf",
              "--schedule-config", "conf/tiny_schedule.conf",
              "--train-opts", "--min-batches-per-epoch=4"]


def _run(s5, env, *cmd):
    p = subprocess.run([str(c) for c in cmd], cwd=s5, env=env, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-5000:]
    return out


def test_chain_recipe_trains_decodes_and_skips_when_done(tmp_path, kaldi_digits, repo_dir,
                                                         env_with_path):
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["jackson_0", "nicolas_0"], ["theo_1"])
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    os.symlink(repo_dir / "egs/kaldi_dir/s5/local", s5 / "local")  # as in the recipe dir
    _run(s5, env, "./run.sh", "--nj", "1", "--kaldi-dir", kaldi, "--stop-stage", "2")
    chain = ["local/chain/run_tdnn.sh", *CHAIN_ARGS, "--gmm-decode-dir", kaldi / "exp/mono/decode",
             kaldi / "data/lang", kaldi / "exp/mono_ali", "exp/chain/tdnn"]
    out = _run(s5, env, *chain)

    c = s5 / "exp/chain"
    assert "<ForwardPdfClass>" in (s5 / "data/lang_chain/topo").read_text()
    assert (c / "tree/frame_subsampling_factor").read_text().strip() == "3"
    outputs = [c / "tree/tree", c / "tree/final.mdl", c / "den/den.fst",
               c / "den/normalization.fst", c / "tdnn/final.nnet", c / "tree/graph/HCLG.fst"]
    assert all(f.stat().st_size > 0 for f in outputs), [f for f in outputs if not f.exists()]
    # the chain network: trained by the lfmmi objective, its outputs subsampled
    assert (c / "tdnn/frame_subsampling_factor").read_text().strip() == "3"
    assert (c / "tdnn/final.mdl").read_bytes() == (c / "den/0.trans_mdl").read_bytes()
    assert '"objective": "lfmmi"' in (c / "tdnn/metrics.jsonl").read_text()
    dec = c / "tdnn/decode_test"
    wers = sorted(dec.glob("wer_*"))
    assert wers and all("%WER" in w.read_text() for w in wers)
    assert "--acwt 1.0 --post-decode-acwt 10.0" in out
    # the summary line, beside the GMM's
    assert "chain model:   %WER" in out and "GMM system:" in out
    assert "TDNN-F chain model" in (c / "tdnn/summary.txt").read_text()

    made = {f: f.stat().st_mtime_ns for f in outputs + wers}
    out = _run(s5, env, *chain)
    for what in ("data/lang_chain is already made", "exp/chain/tree is already built",
                 "exp/chain/den/den.fst is already made", "exp/chain/tdnn/final.nnet exists",
                 "exp/chain/tree/graph is already made", "decode_test is already scored"):
        assert f"{what}" in out, what
    assert {f: f.stat().st_mtime_ns for f in made} == made
    assert "chain model:   %WER" in out


def test_usage_and_a_missing_alignment_dir(repo_dir, kaldi_digits, env_with_path, tmp_path):
    s5 = repo_dir / "egs/kaldi_dir/s5"
    p = subprocess.run(["local/chain/run_tdnn.sh"], cwd=s5, env=env_with_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Usage: local/chain/run_tdnn.sh" in p.stderr
    assert " e.g.: " in p.stderr
    p = subprocess.run(["local/chain/run_tdnn.sh", kaldi_digits / "data/lang",
                        tmp_path / "no_ali", "exp/chain/tdnn"], cwd=s5, env=env_with_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and f"missing {tmp_path / 'no_ali'}/" in p.stderr, p.stderr
