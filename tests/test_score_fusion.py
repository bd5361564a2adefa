"""Decoding with a GMM's log-likelihoods added to the network's (steps/nnet/decode.sh --gmm-dir,
Kaldi's DecodableSumScaled): gmm_compute_likes.py --feature-pipeline (the GMM dir's own
features: deltas, or splice + final.mat), matrix_sum.py (Kaldi's matrix-sum), and decode.sh's
fused log-likelihoods on kaldi_digits with a small untrained network; at weight 1 the decoding
is the GMM's own, and reproduces Kaldi's."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import kaldiio
import numpy as np
import pytest

from hybridasr.kaldi.gmm_model import read_gmm_model
from test_decode_model import copy_data_dir, save_tiny_model


def _run(args, env, cwd):
    return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _tool(repo_dir, name):
    return [sys.executable, str(repo_dir / "pybin" / name)]


def test_gmm_likes_of_the_gmm_dirs_own_features(kaldi_digits, shared_dir, repo_dir,
                                               env_with_path, tmp_path):
    """--feature-pipeline=<gmm-dir>: a delta system's (kaldi_digits' mono) equal the
    apply-cmvn + add-deltas default; an LDA+MLLT system's (kaldi_hindi_sat's tri2b_ali: its
    cmvn_opts, splice_opts, final.mat) equal the GMM on make_fmllr_feats.py's features of that
    dir without transforms; the GMM of one and features of the other: an error before any
    output."""
    likes = _tool(repo_dir, "gmm_compute_likes.py")
    for opts, out in (([], "a"), (["--feature-pipeline=exp/mono_ali"], "b")):
        p = _run(likes + opts + ["exp/mono_ali/final.mdl", "data/test",
                                 f"ark:{tmp_path}/{out}.ark"], env_with_path, kaldi_digits)
        assert p.returncode == 0, p.stderr
    a = dict(kaldiio.load_ark(str(tmp_path / "a.ark")))
    b = dict(kaldiio.load_ark(str(tmp_path / "b.ark")))
    assert list(a) == list(b) and len(a) == 30
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])

    hindi = shared_dir / "data/kaldi_hindi_sat"
    p = _run(likes + ["--feature-pipeline=exp/tri2b_ali", "exp/tri2b_ali/final.mdl",
                      "data/test", f"ark:{tmp_path}/lda.ark"], env_with_path, hindi)
    assert p.returncode == 0, p.stderr
    got = dict(kaldiio.load_ark(str(tmp_path / "lda.ark")))
    p = _run(_tool(repo_dir, "make_fmllr_feats.py") + [
        "exp/tri2b_ali", "data/test/utt2spk", "data/test/cmvn.scp", "data/test/feats.scp",
        f"ark:{tmp_path}/feats.ark"], env_with_path, hindi)
    assert p.returncode == 0, p.stderr
    _, gmm = read_gmm_model(str(hindi / "exp/tri2b_ali/final.mdl"))
    feats = dict(kaldiio.load_ark(str(tmp_path / "feats.ark")))
    assert list(got) == list(feats) and len(got) == 20
    for k in got:
        assert got[k].shape == (len(feats[k]), gmm.num_pdfs)
        np.testing.assert_allclose(got[k], gmm.log_likelihoods(feats[k]), rtol=1e-5)
    # tri2b's GMM (40-dim LDA features) on the mono system's delta features: refused
    p = _run(likes + ["--feature-pipeline=exp/mono_ali", "exp/tri2b_ali/final.mdl",
                      "data/test", f"ark:{tmp_path}/x.ark"], env_with_path, hindi)
    assert p.returncode != 0 and "exp/mono_ali's pipeline have dim 39" in p.stderr
    assert "expects 40" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x.ark").exists()


def test_matrix_sum(kaldi_digits, repo_dir, env_with_path, tmp_path):
    """Kaldi's matrix-sum in table mode on real GMM log-likelihoods: scale1 x the first +
    scale2 x the second, in the first's order, read from a pipe too; an utterance missing from
    the second is skipped and counted; matrices of other shapes are an error naming the
    utterance."""
    p = _run(_tool(repo_dir, "gmm_compute_likes.py") + [
        "exp/mono_ali/final.mdl", "data/test", f"ark,scp:{tmp_path}/g.ark,{tmp_path}/g.scp"],
        env_with_path, kaldi_digits)
    assert p.returncode == 0, p.stderr
    g = dict(kaldiio.load_scp(str(tmp_path / "g.scp")))
    keys = list(g)
    # the second: all but the first two utterances, each times -1 (a text archive)
    kaldiio.save_ark(str(tmp_path / "h.ark"), {k: -g[k] for k in keys[2:]})
    msum = _tool(repo_dir, "matrix_sum.py")
    p = _run(msum + ["--scale1=0.25", "--scale2=0.5", f"ark:cat {tmp_path}/g.ark|",
                     f"ark:{tmp_path}/h.ark", f"ark,scp:{tmp_path}/s.ark,{tmp_path}/s.scp"],
             env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    s = dict(kaldiio.load_scp(str(tmp_path / "s.scp")))
    assert list(s) == keys[2:]
    for k in s:
        np.testing.assert_allclose(s[k], -0.25 * g[k], rtol=1e-5)
    assert f"utterance {keys[0]} is not in ark:{tmp_path}/h.ark: skipped" in p.stderr
    assert "summed 28 utterances of 2 tables, skipped 2" in p.stderr
    # three tables (the third at scale 1), the others read by key from an scp
    p = _run(msum + ["--scale1=1", "--scale2=2", f"scp:{tmp_path}/s.scp", f"scp:{tmp_path}/g.scp",
                     f"scp:{tmp_path}/g.scp", f"ark:{tmp_path}/t.ark"], env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    t = dict(kaldiio.load_ark(str(tmp_path / "t.ark")))
    np.testing.assert_allclose(t[keys[5]], 2.75 * g[keys[5]], rtol=1e-5)
    # other shapes: an error naming the utterance; too few tables: a usage error
    kaldiio.save_ark(str(tmp_path / "short.ark"), {k: g[k][:-1] for k in keys})
    p = _run(msum + [f"scp:{tmp_path}/g.scp", f"ark:{tmp_path}/short.ark", "ark:/dev/null"],
             env_with_path, tmp_path)
    assert p.returncode != 0 and f"utterance {keys[0]}: " in p.stderr
    assert "another tree?" in p.stderr and "Traceback" not in p.stderr
    p = _run(msum + [f"scp:{tmp_path}/g.scp", "ark:/dev/null"], env_with_path, tmp_path)
    assert p.returncode != 0 and "at least two tables" in p.stderr
    # nothing in common: an error, not an empty output
    kaldiio.save_ark(str(tmp_path / "other.ark"), {"nobody": g[keys[0]]})
    p = _run(msum + [f"ark:{tmp_path}/other.ark", f"scp:{tmp_path}/g.scp", "ark:/dev/null"],
             env_with_path, tmp_path)
    assert p.returncode != 0 and "is in every table" in p.stderr


@pytest.fixture
def exp(tmp_path, kaldi_digits):
    """An s5-like dir: data/test, exp/dnn/{final.nnet (small, untrained), final.mdl, tree,
    ali_train_pdf.counts} on kaldi_digits' mono_ali."""
    copy_data_dir(kaldi_digits, "test", tmp_path / "data/test")
    d = tmp_path / "exp/dnn"
    d.mkdir(parents=True)
    save_tiny_model(d / "final.nnet")
    for f in ("final.mdl", "tree"):
        shutil.copy(kaldi_digits / "exp/mono_ali" / f, d / f)
    (d / "ali_train_pdf.counts").write_text("[ " + " ".join(map(str, range(1, 71))) + " ]\n")
    return tmp_path


def test_decode_adds_the_gmms_loglikes(exp, kaldi_digits, repo_dir, env_with_path,
                                       monkeypatch):
    """decode.sh --gmm-dir: each job's log-likelihoods are (1 - w) x forward.py's + w x the
    GMM's; at w = 1 the decoding is the GMM's alone and scores as Kaldi's own decoding of
    it; the GMM's temporary tables are removed; bad options and another tree are refused."""
    graph = kaldi_digits / "exp/mono/graph"
    gmm_dir = kaldi_digits / "exp/mono_ali"
    decode = [repo_dir / "steps/nnet/decode.sh", "--nj", "2"]
    p = _run(_tool(repo_dir, "forward.py") + [
        "--class-frame-counts=exp/dnn/ali_train_pdf.counts", "exp/dnn/final.nnet", "data/test",
        "ark:net.ark"], env_with_path, exp)
    assert p.returncode == 0, p.stderr
    net = dict(kaldiio.load_ark(str(exp / "net.ark")))
    p = _run(_tool(repo_dir, "gmm_compute_likes.py") + [gmm_dir / "final.mdl", "data/test",
                                                        "ark:gmm.ark"], env_with_path, exp)
    assert p.returncode == 0, p.stderr
    gmm = dict(kaldiio.load_ark(str(exp / "gmm.ark")))
    p = _run(decode + ["--gmm-dir", gmm_dir, "--gmm-weight", "0.3", "--skip-scoring", "true",
                       graph, "data/test", "exp/dnn/decode_fused"], env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"+ {gmm_dir}/final.mdl (weights 0.7, 0.3)" in p.stdout
    dec = exp / "exp/dnn/decode_fused"
    monkeypatch.chdir(exp)  # (the scp's paths are relative to the recipe dir)
    got = {}
    for j in (1, 2):
        got.update(kaldiio.load_scp(str(dec / f"loglikes.{j}.scp")))
    assert sorted(got) == sorted(net) and len(got) == 30
    for k in got:
        ok = net[k] > -1e9  # (pdfs of a zero prior are disabled: a huge negative value)
        np.testing.assert_allclose(got[k][ok], 0.7 * net[k][ok] + 0.3 * gmm[k][ok], rtol=1e-4,
                                   atol=1e-3)
    assert not list(dec.glob("gmm_loglikes.*")) and (dec / "log/gmm_likes.1.log").exists()
    assert "matrix_sum.py --scale1=0.7 --scale2=0.3" in (dec / "log/forward.1.log").read_text()
    # weight 1: the GMM alone, scored at Kaldi's LM weight 12 as its exp/mono/decode
    p = _run(decode + ["--gmm-dir", gmm_dir, "--gmm-weight", "1", "--scoring-opts",
                       "--min-lmwt 12 --max-lmwt 12 --word-ins-penalty 0.0", graph, "data/test",
                       "exp/dnn/decode_gmm"], env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    kaldi = (kaldi_digits / "exp/mono/decode/wer_12").read_text().splitlines()
    ours = (exp / "exp/dnn/decode_gmm/wer_12").read_text().splitlines()
    assert [x for x in ours if x.startswith("%WER")] == [x for x in kaldi if x.startswith("%WER")]
    # weight 0: the network alone, the same tables as without --gmm-dir
    p = _run(decode + ["--gmm-dir", gmm_dir, "--gmm-weight", "0", "--skip-scoring", "true",
                       graph, "data/test", "exp/dnn/decode_w0"], env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "final.mdl (weights" not in p.stdout
    assert not (exp / "exp/dnn/decode_w0/log/gmm_likes.1.log").exists()
    # refused: a weight outside 0..1, a feature kind, a GMM of another tree, no GMM
    for opts, err in ((["--gmm-weight", "1.5"], "--gmm-weight 1.5: give a number from 0 to 1"),
                      (["--gmm-feats", "raw"], "bad --gmm-feats raw (pipeline|asis)")):
        p = _run(decode + ["--gmm-dir", gmm_dir] + opts + [graph, "data/test", "exp/dnn/d"],
                 env_with_path, exp)
        assert p.returncode != 0 and err in p.stderr
    other = exp / "other_gmm"
    other.mkdir()
    shutil.copy(gmm_dir / "final.mdl", other / "final.mdl")
    p = _run(decode + ["--gmm-dir", other, graph, "data/test", "exp/dnn/d"], env_with_path, exp)
    assert p.returncode != 0 and f"missing file {other}/tree" in p.stderr
    (other / "tree").write_bytes((gmm_dir / "tree").read_bytes() + b"\0")
    p = _run(decode + ["--gmm-dir", other, graph, "data/test", "exp/dnn/d"], env_with_path, exp)
    assert p.returncode != 0 and "its tree is not the network's (exp/dnn/tree)" in p.stderr


def test_kaldi_pipe_reads_the_fused_loglikes(exp, kaldi_digits, repo_dir, env_with_path):
    """With Kaldi's latgen-faster-mapped on PATH (a stand-in recording what it reads), the
    job's pipe is forward.py | matrix_sum.py | latgen-faster-mapped."""
    bin_dir = exp / "bin"
    bin_dir.mkdir()
    (bin_dir / "latgen-faster-mapped").write_text(
        f"#!{sys.executable}\nimport sys, kaldiio\n"
        "mats = dict(kaldiio.load_ark(sys.stdin.buffer))\n"
        "kaldiio.save_ark('seen.ark', mats)\n")
    (bin_dir / "latgen-faster-mapped").chmod(0o755)
    env = dict(env_with_path, PATH=f"{bin_dir}:{env_with_path['PATH']}")
    p = _run([repo_dir / "steps/nnet/decode.sh", "--nj", "1", "--skip-scoring", "true",
              "--gmm-dir", kaldi_digits / "exp/mono_ali", "--gmm-weight", "1",
              kaldi_digits / "exp/mono/graph", "data/test", "exp/dnn/decode_kaldi"], env, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kaldi decoder" in p.stdout
    seen = dict(kaldiio.load_ark(str(exp / "seen.ark")))
    p = _run(_tool(repo_dir, "gmm_compute_likes.py") + [
        kaldi_digits / "exp/mono_ali/final.mdl", "data/test", "ark:gmm.ark"], env_with_path, exp)
    gmm = dict(kaldiio.load_ark(str(exp / "gmm.ark")))
    assert sorted(seen) == sorted(gmm) and len(seen) == 30
    for k in seen:  # weight 1: the network's part is 0 x its values
        np.testing.assert_allclose(seen[k], gmm[k], rtol=1e-5)
    assert not list((exp / "exp/dnn/decode_kaldi").glob("gmm_loglikes.*"))


def test_recipe_adds_the_gmm_only_where_it_can(kaldi_digits_copy, repo_dir, tmp_path,
                                               env_with_path):
    """run.sh on kaldi_digits (below 0.5 h, a GMM's alignment): the rule's --gmm-weight 0.5
    puts the GMM of --ali into decoding's options, its features through its dir's pipeline.
    An --ali whose final.mdl is not a GMM (an nnet's: a transition model, then no AmDiagGmm)
    drops the rule's choice with a note; a given --gmm-weight there is an error."""
    from hybridasr.recipe.kaldi_dir import _is_gmm_model
    from kaldi_shapes import real_model
    from test_recipe_e2e import make_recipe_copy

    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))

    def run(kaldi, *args):
        return subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi), "--stop-stage", "0",
                               *args], cwd=s5, env=env, capture_output=True, text=True,
                              timeout=600)

    p = run(kaldi_digits_copy)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "--gmm-weight 0.5  (" in p.stdout
    kaldi_json = (s5 / "data/kaldi_dir.json").read_text()
    assert '"ali_model_is_gmm": true' in kaldi_json
    # an nnet's final.mdl in the alignment dir: the transition model and no GMM after it
    mdl = kaldi_digits_copy / "exp/mono_ali/final.mdl"
    data = real_model(mdl.parent).read_bytes()  # (final.mdl: a symlink, a file, or flattened)
    assert _is_gmm_model(str(mdl))
    mdl.unlink()
    mdl.write_bytes(data[:data.index(b"<DIMENSION>")] + b"<Nnet3> ")
    assert not _is_gmm_model(str(mdl))
    p = run(kaldi_digits_copy, "--restart", "true")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "--gmm-weight 0 (the rule's 0.5 dropped: exp/mono_ali/final.mdl is not a GMM)" \
        in p.stdout
    p = run(kaldi_digits_copy, "--gmm-weight", "0.5")
    assert p.returncode != 0
    assert "--gmm-weight 0.5: exp/mono_ali/final.mdl is not a GMM; give --gmm-weight 0" \
        in p.stderr


def test_compare_feats_tells_the_gmms_own_features(kaldi_digits, repo_dir, env_with_path,
                                                   tmp_path):
    """compare_feats.py: MFCCs made here with kaldi_digits' conf/mfcc.conf are the Kaldi dir's
    own (dither apart); made at 16 kHz from its 8 kHz audio (a rate rewritten, as for mixed
    rates) they are not; no utterance in common, or other dims, say so."""
    import json

    def mfcc(conf, out):
        p = _run(_tool(repo_dir, "compute_mfcc_feats.py") + [
            f"--config={conf}", "scp:data/test/wav.scp", f"ark,scp:{out}.ark,{out}.scp"],
            env_with_path, kaldi_digits)
        assert p.returncode == 0, p.stderr
        return f"{out}.scp"

    def compare(*args):
        p = _run(_tool(repo_dir, "compare_feats.py") + list(args), env_with_path, tmp_path)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    theirs = kaldi_digits / "data/test/feats.scp"
    same = compare(f"--base2={kaldi_digits}", mfcc(kaldi_digits / "conf/mfcc.conf",
                                                   tmp_path / "ours"), theirs)
    assert same["same"] and same["utterances"] == 20 and same["rel_rms"] < 0.1, same
    assert same["frames_differ"] == 0 and "relative difference" in same["note"]
    (tmp_path / "16k.conf").write_text("--use-energy=false\n--sample-frequency=16000\n"
                                       "--allow-upsample=true\n")
    other = compare(f"--base2={kaldi_digits}", mfcc(tmp_path / "16k.conf", tmp_path / "up"),
                    theirs)
    assert not other["same"] and other["rel_rms"] > 1.0, other
    assert compare("--max-utts=3", f"--base2={kaldi_digits}", str(tmp_path / "up.scp"),
                   theirs)["utterances"] == 3
    none = compare(f"--base2={kaldi_digits}", str(tmp_path / "up.scp"),
                   str(kaldi_digits / "data/train/feats.scp"))
    assert not none["same"] and none["rel_rms"] is None and "no utterance of" in none["note"]


def test_recipe_drops_the_gmm_on_features_not_its_own(kaldi_digits, repo_dir, tmp_path,
                                                      env_with_path):
    """Features made at another sample rate than the GMM's (a --feat-config at 16 kHz for
    kaldi_digits' 8 kHz audio): stage 1's check (data/gmm_features.json) drops the rule's
    --gmm-weight with a note, and refuses a given one before training."""
    import json

    from test_recipe_e2e import make_recipe_copy

    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    conf = tmp_path / "16k.conf"
    conf.write_text("--use-energy=false\n--sample-frequency=16000\n--allow-upsample=true\n")

    def run(*args):
        return subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits), "--stop-stage",
                               "1", "--speed-perturb", "false", *args], cwd=s5, env=env,
                              capture_output=True, text=True, timeout=600)

    p = run()  # the Kaldi dir's own conf: its GMM's features, kept
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert json.loads((s5 / "data/gmm_features.json").read_text())["same"] is True
    assert "dropped" not in p.stdout
    p = run("--feat-config", str(conf), "--restart", "true")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    check = json.loads((s5 / "data/gmm_features.json").read_text())
    assert check["same"] is False and check["rel_rms"] > 1.0
    assert "--gmm-weight 0 (the rule's 0.5 dropped: the features made here are not shown to be " \
           "the ones it was trained on (data/gmm_features.json: relative difference" in p.stdout
    p = run("--feat-config", str(conf), "--gmm-weight", "0.5", "--restart", "true")
    assert p.returncode != 0
    assert "--gmm-weight 0.5: the features made here are not shown to be the ones it was " \
           "trained on" in p.stderr
