"""The chain recipe (egs/kaldi_dir/s5/local/chain/run_tdnn.sh) through run.sh --chain true on a
tiny Kaldi dir cut from kaldi_digits (20 training utterances of two speakers, 10 test): beside the
hybrid network, stage 3 makes the chain lang dir, the tree at frame subsampling 3, den.fst and a
tiny TDNN-F trained with LF-MMI, stage 4 the --self-loop-scale 1.0 graph,
decoding and scoring (run.sh's --ref-normalize), stage 5 the summary beside the GMM's and the
hybrid's; run again, it redoes nothing. The numerator: the lattices of the GMM's training graphs,
made on its own features (data/train_gmm), or its alignment (--chain-lats false, or auto where
those features do not fit it). run.sh refuses --chain true before stage 0 where it
cannot finish (no G.fst for its graph). Without a GMM (--ali none): tests/test_flatstart.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy

ARGS = ["--nj", "1", "--model-config", "conf/tiny_model.conf", "--schedule-config",
        "conf/tiny_schedule.conf", "--train-opts", "--min-batches-per-epoch=4",
        "--ref-normalize", "true", "--chain", "true", "--chain-opts",
        "--model-config conf/model/tdnnf_small.conf --schedule-config conf/tiny_schedule.conf",
        "--chain-train-opts", "--seed=7"]


def _run(s5, env, *cmd, rc=0):
    p = subprocess.run([str(c) for c in cmd], cwd=s5, env=env, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == rc, out[-5000:]
    return out


def test_run_sh_chain_trains_decodes_sums_up_and_skips_when_done(tmp_path, kaldi_digits,
                                                                 repo_dir, env_with_path):
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["jackson_0", "nicolas_0"], ["theo_1"])
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    os.symlink(repo_dir / "egs/kaldi_dir/s5/local", s5 / "local")  # as in the recipe dir
    run = ["./run.sh", *ARGS, "--kaldi-dir", kaldi]
    out = _run(s5, env, *run)

    c = s5 / "exp/chain"
    assert "<ForwardPdfClass>" in (s5 / "data/lang_chain/topo").read_text()
    assert (c / "tree/frame_subsampling_factor").read_text().strip() == "3"
    outputs = [c / "tree/tree", c / "tree/final.mdl", c / "den/den.fst",
               c / "den/normalization.fst", c / "tdnn/final.nnet", c / "tree/graph/HCLG.fst"]
    assert all(f.stat().st_size > 0 for f in outputs), [f for f in outputs if not f.exists()]
    # the chain network: trained by the lfmmi objective, its numerator from the lattices of the
    # GMM's training graphs (--chain-lats auto: Kaldi's align_fmllr_lats.sh) made on the GMM's
    # own features (data/train_gmm, checked to fit it), with run.sh's --train-opts and then
    # --chain-train-opts; its outputs subsampled
    assert (c / "tdnn/frame_subsampling_factor").read_text().strip() == "3"
    assert (c / "tdnn/final.mdl").read_bytes() == (c / "den/0.trans_mdl").read_bytes()
    assert '"objective": "lfmmi"' in (c / "tdnn/metrics.jsonl").read_text()
    log = (c / "tdnn/log/train.log").read_text()
    assert f"the tree of {kaldi}/exp/mono_ali" in out and "--min-batches-per-epoch=4 --seed=7" in log
    assert (s5 / "data/train_gmm/gmm_check").read_text().strip() == "ok"
    assert "steps/align_si.sh --nj 1 --cmd run.pl --generate-lats true --normalize-unknown " \
           "false data/train_gmm" in out
    n_all = len((s5 / "data/train/utt2spk").read_text().splitlines())
    assert f"aligned {n_all} of {n_all} utterances" in out
    lat_dir = "exp/chain/lats"
    assert (s5 / lat_dir / "lat.1.gz").is_file() and not (s5 / lat_dir / "ali.1.gz").exists()
    assert f"supervision from the lattices (lat.*.gz) of {lat_dir}" in log
    tr = json.loads((c / "tdnn/lfmmi_report.json").read_text())["training"]
    n_tr = len((s5 / "data/train_tr90/utt2spk").read_text().splitlines())
    assert tr["ali_dir"] == lat_dir and tr["no_lattice"] == 0, tr
    kept_or_counted = ("utterances", "unusable_lattice", "length_mismatch", "no_path",
                       "not_in_den")
    assert sum(tr[k] for k in kept_or_counted) == n_tr, tr
    assert tr["utterances"] >= n_tr - 2, tr
    assert "--seed=7" not in (s5 / "exp/blstm/log/train.log").read_text()
    dec = c / "tdnn/decode_test"
    wers = sorted(dec.glob("wer_*"))
    assert wers and all("%WER" in w.read_text() for w in wers)
    assert json.loads((dec / "scoring/reference.json").read_text())["normalized"] is True
    assert "--acwt 1.0 --post-decode-acwt 10.0" in out
    # stage 5: the chain's summary line beside the GMM's, and its best WER beside the hybrid's
    summary = out[out.index("===== stage 5"):]
    assert "chain model:   %WER" in summary and "GMM system:" in summary
    assert "best WERs side by side (hybrid exp/blstm | chain exp/chain/tdnn):" in summary
    assert "TDNN-F chain model" in (c / "tdnn/summary.txt").read_text()

    made = {f: f.stat().st_mtime_ns
            for f in outputs + wers + [s5 / "data/train_gmm/feats.scp", s5 / lat_dir / "lat.1.gz"]}
    out = _run(s5, env, *run)
    for what in ("data/lang_chain is already made", "exp/chain/tree is already built",
                 "exp/chain/den/den.fst is already made",
                 f"{lat_dir} already holds the lattices of {kaldi}/exp/mono_ali: skipping",
                 "exp/chain/tdnn/final.nnet exists",
                 "exp/chain/tree/graph is already made",
                 "exp/chain/tdnn/decode_test is already scored"):
        assert f"{what}" in out, what
    assert {f: f.stat().st_mtime_ns for f in made} == made
    assert "chain model:   %WER" in out
    # the summary alone, without the --chain-opts: it names the config the model was trained
    # with (its train.conf), not the default the options now give
    out = _run(s5, env, *run[:run.index("--chain-opts")], "--kaldi-dir",
               kaldi, "--stage", "5")
    assert "TDNN-F chain model (LF-MMI; conf/model/tdnnf_small.conf)" in out

    # --chain-lats false: the GMM's alignment is the numerator (the model trained again)
    out = _run(s5, env, *run, "--stage", "3", "--stop-stage", "3", "--chain-lats", "false")
    log = (c / "tdnn/log/train.log").read_text()
    assert "supervision from the lattices" not in log and f"numerator from {kaldi}/exp/mono_ali," in out
    # features that do not fit the GMM (gmm_check): auto falls back to the alignment, saying
    # why; --chain-lats true refuses
    (s5 / "data/train_gmm/gmm_check").write_text("no\nthe features made here do not fit\n")
    out = _run(s5, env, *run, "--stage", "5")
    assert "the chain numerator is the alignment, not lattices of a GMM: the features made here" in out
    out = _run(s5, env, *run, "--stage", "5", "--chain-lats", "true", rc=1)
    assert "--chain-lats true: the features made here do not fit; give --chain-lats false" in out
    # a check cut short (an empty record) is made again at the next stage 3, not read as "no"
    (s5 / "data/train_gmm/gmm_check").write_text("")
    out = _run(s5, env, *run, "--stage", "3", "--stop-stage", "3", "--chain-lats", "true")
    assert (s5 / "data/train_gmm/gmm_check").read_text().strip() == "ok"
    # a lattice dir not made here (e.g. the user's Kaldi exp/tri3b_lats) is never written into
    (s5 / lat_dir / "stage.json").unlink()
    out = _run(s5, env, "local/chain/run_tdnn.sh", "--stop-stage", "0", "--lat-data",
               "data/train_gmm", f"{kaldi}/data/lang", f"{kaldi}/exp/mono_ali", "exp/chain/tdnn",
               rc=1)
    assert f"--lat-data would make lattices into {lat_dir}, which holds lattices not made here" in out
    assert (s5 / lat_dir / "lat.1.gz").is_file()
    # a lattice dir without its files: refused, naming what is missing
    os.unlink(s5 / lat_dir / "num_jobs")
    out = _run(s5, env, "local/chain/run_tdnn.sh", "--lat-dir", lat_dir, f"{kaldi}/data/lang",
               f"{kaldi}/exp/mono_ali", "exp/chain/tdnn_lat2", rc=1)
    assert f"missing {lat_dir}/num_jobs (--lat-dir" in out


def test_run_sh_refuses_chain_where_it_cannot_finish(tmp_path, kaldi_digits, repo_dir,
                                                     env_with_path):
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["jackson_0"], ["theo_1"])
    shared_lang = (kaldi / "data/lang").resolve()
    (kaldi / "data/lang").unlink()  # (Kaldi's data/lang: no G.fst)
    (kaldi / "data/lang").mkdir()
    for f in shared_lang.iterdir():
        if f.name != "G.fst":
            (kaldi / "data/lang" / f.name).symlink_to(f)
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--chain", "true", rc=1)
    assert f"needs a G.fst, and {kaldi}/data/lang has none" in out, out
    assert "--chain-opts" in out and "--lang-test" in out and "--lm-arpa" in out
    # beside it data/lang_test_tg with one (Kaldi's yesno, mini_librispeech's
    # data/lang_test_tgsmall): the chain graph takes it, where it has the words of --graph
    (kaldi / "data/lang_test_tg").mkdir()
    for f in shared_lang.iterdir():
        (kaldi / "data/lang_test_tg" / f.name).symlink_to(f)
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--chain", "true", "--stop-stage", "0")
    assert f"--chain true: data/lang has no G.fst: the chain graph's LM from " \
           f"{kaldi}/data/lang_test_tg (the words of exp/mono/graph" in out, out[-3000:]
    shutil.rmtree(s5 / "data")
    (kaldi / "data/lang_test_tg/words.txt").unlink()  # (another LM's words: not taken)
    (kaldi / "data/lang_test_tg/words.txt").write_text("<eps> 0\n")
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--chain", "true", rc=1)
    assert f"needs a G.fst, and {kaldi}/data/lang has none" in out
    # a dict dir beside the GMM with --lm-text: stage 0 makes data/lang_test with a G.fst,
    # the chain graph's (not refused); the dirs given as absolute paths (--lang outside the
    # Kaldi dir)
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--ali", kaldi / "exp/mono_ali",
               "--graph", kaldi / "exp/mono/graph", "--lang",
               kaldi_digits / "data/local/dict", "--lm-text",
               kaldi_digits / "data/local/corpus.txt", "--lm-order", "1", "--chain", "true",
               "--stop-stage", "0")
    assert "needs a G.fst" not in out and (s5 / "data/lang_test/G.fst").stat().st_size > 0
    assert (s5 / "data/lang/L.fst").exists() and not (s5 / "data/lang/G.fst").exists()
    shutil.rmtree(s5 / "data")
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--chain", "yes", rc=1)
    assert 'expected "true" or "false": --chain yes' in out
    out = _run(s5, env, "./run.sh", "--kaldi-dir", kaldi, "--chain", "true", "--chain-lats",
               "maybe", rc=1)
    assert "--chain-lats" in out and "maybe" in out and "auto" in out, out[-2000:]
    assert not (s5 / "data").exists()  # (refused before stage 0)


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
