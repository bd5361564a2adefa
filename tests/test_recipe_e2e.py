"""The digits recipe end to end on the real Kaldi dir (tiny model, 2 epochs): every stage's
outputs, the speed copies trained on, Kaldi-format WER files, a second run that redoes nothing,
and --stage 3 after deleting the model retraining only."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from hybridasr.kaldi.io.table import read_map
from hybridasr.kaldi.lattice import read_lattices

WER_LINE = re.compile(r"^%WER (\d+\.\d\d) \[ (\d+) / (\d+), (\d+) ins, (\d+) del, (\d+) sub \]")


def make_recipe_copy(repo_dir, dst):
    """A copy of egs/digits/s5 elsewhere (links to the toolkit's steps/ and utils/)."""
    src = repo_dir / "egs" / "digits" / "s5"
    dst.mkdir(parents=True)
    for name in ("run.sh", "cmd.sh", "path.sh"):
        shutil.copy2(src / name, dst / name)
    shutil.copytree(src / "conf", dst / "conf", symlinks=False)
    os.symlink(repo_dir / "steps", dst / "steps")
    os.symlink(repo_dir / "utils", dst / "utils")
    (dst / "conf" / "tiny_model.conf").write_text(
        "--model=blstm\n--num-layers=1\n--hidden-size=48\n--dropout=0\n")
    (dst / "conf" / "tiny_schedule.conf").write_text(
        "--optimizer=adam\n--learning-rate=0.005\n--lr-schedule=newbob\n--max-iters=2\n")
    return dst


def run_recipe(s5, env, *args):
    p = subprocess.run(["./run.sh", "--model-config", "conf/tiny_model.conf",
                        "--schedule-config", "conf/tiny_schedule.conf", *args],
                       cwd=s5, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return p.stdout + p.stderr


@pytest.fixture(scope="module")
def recipe_run(tmp_path_factory, repo_dir, kaldi_digits, env_with_path):
    s5 = make_recipe_copy(repo_dir, tmp_path_factory.mktemp("recipe") / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    out = run_recipe(s5, env, "--kaldi-dir", str(kaldi_digits))
    return s5, env, out


def test_every_stage_leaves_its_outputs(recipe_run, kaldi_digits):
    s5, _, out = recipe_run
    for n in range(6):
        assert f"===== stage {n}:" in out
    # a --model-config given is that one network (no ensemble, whatever the data's size)
    assert "(conf/tiny_model.conf x 1, " in out and not (s5 / "exp/blstm/member2").exists()
    for f in ("data/kaldi_dir.json", "data/train/feats.scp", "data/train/cmvn.scp",
              "data/test/feats.scp", "data/train/utt2num_frames", "exp/ali_train/targets.scp",
              "exp/ali_train/pdf_counts", "data/train_tr90/feats.scp",
              "data/train_cv10/feats.scp", "exp/blstm/final.nnet", "exp/blstm/final.mdl",
              "exp/blstm/ali_train_pdf.counts", "exp/blstm/metrics.jsonl",
              "exp/blstm/curves.png", "exp/blstm/log/train.log", "exp/blstm/summary.txt"):
        assert (s5 / f).exists(), f
    # features are ours, from the audio, in the recipe's mfcc/ dir
    feats = (s5 / "data/train/feats.scp").read_text().split("\n")[0].split()[1]
    assert feats.startswith("mfcc/")
    wers = sorted((s5 / "exp/blstm/decode_test").glob("wer_*"))
    assert len(wers) >= 3
    for w in wers:
        # Kaldi's wer_N: the compute-wer command line, then the %WER line
        m = next((WER_LINE.match(x) for x in w.read_text().splitlines()
                  if WER_LINE.match(x)), None)
        assert m, w.read_text()
        assert int(m.group(3)) == 30 * 1  # 30 test utterances, one word each
        assert abs(float(m.group(1)) - 100.0 * int(m.group(2)) / int(m.group(3))) < 0.01
    assert "WER" in (s5 / "exp/blstm/summary.txt").read_text()
    # the Kaldi dir was only read
    assert not (kaldi_digits / "exp" / "blstm").exists()


def test_the_speed_copies_are_trained_on(recipe_run):
    """The defaults on kaldi_digits (a cv set can be held out: speed perturbation): stage 3
    trains on data/train_tr90 at speeds 0.9, 1.0, 1.1 with their resampled targets, the cv set
    unperturbed and apart from every copy, to a WER."""
    s5, _, out = recipe_run
    tr = read_map(str(s5 / "data/train_tr90/utt2spk"))
    cv = read_map(str(s5 / "data/train_cv10/utt2spk"))
    sp_tr = read_map(str(s5 / "data/train_sp_tr90/utt2spk"))
    assert set(sp_tr) == {f"{p}{u}" for u in tr for p in ("", "sp0.9-", "sp1.1-")}
    assert not any(u.startswith("sp") for u in cv)
    assert not {re.sub(r"^sp[0-9.]+-", "", u) for u in sp_tr} & set(cv)
    log = (s5 / "exp/blstm/log/train.log").read_text()
    assert "data/train_sp_tr90" in log and "exp/ali_train_sp" in log
    wers = [WER_LINE.match(x) for w in (s5 / "exp/blstm/decode_test").glob("wer_*")
            for x in w.read_text().splitlines()]
    assert any(wers), out[-2000:]
    assert "speed perturbation" in out


def test_second_run_redoes_nothing(recipe_run):
    s5, env, _ = recipe_run
    final = s5 / "exp/blstm/final.nnet"
    before = {p: p.stat().st_mtime_ns for p in
              [final.resolve(), s5 / "data/train/feats.scp", s5 / "exp/ali_train/targets.scp"]
              + sorted((s5 / "exp/blstm/decode_test").glob("wer_*"))}
    out = run_recipe(s5, env)
    assert out.count("skipping") >= 6, out
    after = {p: p.stat().st_mtime_ns for p in before}
    assert before == after


def test_ref_normalize_scores_again_and_scores_the_gmm_alike(recipe_run, kaldi_digits):
    """--ref-normalize true on a scored run: only scoring is redone (the model and lattices
    kept), and the GMM's own lattices are scored the same way for the summary."""
    s5, env, _ = recipe_run
    lat = s5 / "exp/blstm/decode_test/lat.1.gz"
    lat_mtime = lat.stat().st_mtime_ns
    out = run_recipe(s5, env, "--stage", "4", "--ref-normalize", "true")
    assert "exp/blstm/decode_test: scoring again with --ref-normalize true" in out, out[-3000:]
    assert lat.stat().st_mtime_ns == lat_mtime
    rep = json.loads((s5 / "exp/blstm/decode_test/scoring/reference.json").read_text())
    assert rep["normalized"] is True and rep["words"] == 30 and rep["outside_vocabulary"] == 0
    gmm = s5 / "exp/gmm_decode_test"
    assert (gmm / "lat.1.gz").is_symlink() and list(gmm.glob("wer_*"))
    # digits' references are all in words.txt: the GMM's WERs are Kaldi's own
    def wer(path):
        return next(m.groups() for m in map(WER_LINE.match, path.read_text().splitlines()) if m)
    for w in (kaldi_digits / "exp/mono/decode").glob("wer_*"):
        assert wer(gmm / w.name) == wer(w), w.name
    assert "exp/gmm_decode_test" in (s5 / "exp/blstm/summary.txt").read_text()
    out = run_recipe(s5, env, "--stage", "4", "--ref-normalize", "true")
    assert "exp/blstm/decode_test is already scored: skipping" in out
    assert "exp/gmm_decode_test is already scored: skipping" in out
    out = run_recipe(s5, env, "--stage", "4")
    assert "exp/blstm/decode_test: scoring again with --ref-normalize false" in out
    summary = (s5 / "exp/blstm/summary.txt").read_text()
    assert "exp/gmm_decode_test" not in summary and "exp/mono/decode/wer_" in summary, summary


def test_stage_3_after_deleting_the_model_retrains_only(recipe_run):
    s5, env, _ = recipe_run
    feats_mtime = (s5 / "data/train/feats.scp").stat().st_mtime_ns
    # deleting only final.nnet of a finished training trains again from scratch
    os.utime(s5 / "exp/blstm/nnet/epoch0.nnet", ns=(10**9, 10**9))  # an old time stamp
    os.unlink(s5 / "exp/blstm/final.nnet")
    out = run_recipe(s5, env, "--stage", "3", "--stop-stage", "3")
    assert "training again from scratch" in out
    assert (s5 / "exp/blstm/final.nnet").exists()
    # train.py --restart=true removed its own files (epoch 0 is new), nothing else
    assert (s5 / "exp/blstm/nnet/epoch0.nnet").stat().st_mtime_ns != 10**9
    assert "initial cross-validation" in (s5 / "exp/blstm/log/train.log").read_text()
    assert list((s5 / "exp/blstm/decode_test").glob("wer_*"))
    # and so does deleting the whole exp dir
    shutil.rmtree(s5 / "exp/blstm")
    out = run_recipe(s5, env, "--stage", "3")
    assert "===== stage 2" not in out and "===== stage 3" in out
    assert (s5 / "exp/blstm/final.nnet").exists()
    assert list((s5 / "exp/blstm/decode_test").glob("wer_*"))
    assert (s5 / "data/train/feats.scp").stat().st_mtime_ns == feats_mtime


def test_sequence_training_stage(recipe_run):
    """--seq-epochs 1 (auto gives 0 on digits' 110 training utterances): the network's
    alignment and denominator lattices, an sMBR epoch, its decode and its summary line."""
    s5, env, _ = recipe_run
    out = run_recipe(s5, env, "--stage", "4")
    assert "sequence training" not in out  # auto: too few utterances
    out = run_recipe(s5, env, "--stage", "4", "--seq-epochs", "1")
    assert "sequence training (smbr, 1 epochs)" in out
    for f in ("exp/blstm_ali/ali.1.gz", "exp/blstm_denlats/lat.1.gz",
              "exp/blstm_denlats/dengraph/HCLG.fst", "exp/blstm_smbr/final.nnet",
              "exp/blstm_smbr/1.nnet", "exp/blstm_smbr/summary.txt"):
        assert (s5 / f).exists(), f
    assert list((s5 / "exp/blstm_smbr/decode_test").glob("wer_*"))
    assert "epochs of smbr training" in (s5 / "exp/blstm_smbr/summary.txt").read_text()
    # on the data CE trained on: the speed copies (digits: a cv set, so speed perturbation)
    assert (s5 / "data/train_sp/feats.scp").exists()
    for d in ("exp/blstm_ali", "exp/blstm_denlats"):
        assert (s5 / d / "data_dir").read_text().strip() == "data/train_sp", d
    sp_utts = {line.split()[0] for line in open(s5 / "data/train_sp/utt2spk")}
    lat_utts = {k for f in (s5 / "exp/blstm_denlats").glob("lat.*.gz")
                for k, _ in read_lattices(f"ark:gunzip -c {f} |")}
    assert lat_utts <= sp_utts and len(lat_utts) >= 0.95 * len(sp_utts)
    assert any(u.startswith("sp0.9-") for u in lat_utts)
    assert "\n--seq-frame-smoothing=0.3\n" in (s5 / "exp/blstm_smbr/train.conf").read_text()
    out = run_recipe(s5, env, "--stage", "4", "--seq-epochs", "1")
    assert "exp/blstm_smbr is already trained: skipping" in out
    # another option: trained (and decoded) again, not skipped
    out = run_recipe(s5, env, "--stage", "4", "--seq-epochs", "1", "--seq-frame-smoothing", "0")
    assert "exp/blstm_smbr was trained with other options: training it again" in out
    assert "\n--seq-frame-smoothing=0.0\n" in (s5 / "exp/blstm_smbr/train.conf").read_text()
    assert list((s5 / "exp/blstm_smbr/decode_test").glob("wer_*"))
    p = subprocess.run(["./run.sh", "--seq-epochs", "two"], cwd=s5, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--seq-epochs" in p.stderr


def test_broken_kaldi_dir_fails_stage_0_naming_the_problem(tmp_path, repo_dir,
                                                           kaldi_digits_copy, env_with_path):
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    os.unlink(kaldi_digits_copy / "exp/mono_ali/final.mdl")
    lines = (kaldi_digits_copy / "data/test/utt2spk").read_text().splitlines()
    (kaldi_digits_copy / "data/test/utt2spk").write_text("\n".join(reversed(lines)) + "\n")
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits_copy), "--stop-stage", "0"],
                       cwd=s5, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    err = p.stdout + p.stderr
    assert "final.mdl" in err and "stage 0 failed" in err
    assert not (s5 / "data" / "train" / "feats.scp").exists()
