"""The recipe killed (SIGKILL, the whole process group) inside each stage and during
scoring, then run again, ends with the WER of an uninterrupted run; each stage's record
(data/stage<N>.json, exp/blstm/stage<N>.json) says what it was made from, and a stage made from
other inputs is redone. On a tiny Kaldi dir cut from kaldi_digits (20 training utterances of
two speakers, 10 test), a tiny network, --nj 1: every run is a few seconds of work."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy

ARGS = ["--nj", "1", "--model-config", "conf/tiny_model.conf", "--schedule-config",
        "conf/tiny_schedule.conf", "--train-opts", "--min-batches-per-epoch=5",
        "--decode-opts", "--max-active 200"]
WER = re.compile(r"%WER (\d+\.\d\d) \[ (\d+) / (\d+),")


def best_wer(decode_dir: Path):
    wers = [WER.search(p.read_text()).groups() for p in decode_dir.glob("wer_*")]
    assert wers, f"no wer_* in {decode_dir}"
    return min(wers, key=lambda w: float(w[0])), len(wers)


def run(s5, env, kaldi, *more, check=True):
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi), *ARGS, *more], cwd=s5, env=env,
                       capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    if check:
        assert p.returncode == 0, out[-5000:]
    return p.returncode, out


def run_until(s5, env, kaldi, path: str, timeout: float = 300):
    """Runs the recipe and kills it (SIGKILL, its process group) once ``path`` exists under
    the recipe dir; returns False when it ended before that."""
    p = subprocess.Popen(["./run.sh", "--kaldi-dir", str(kaldi), *ARGS], cwd=s5, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    end = time.monotonic() + timeout
    try:
        while p.poll() is None and time.monotonic() < end:
            if (s5 / path).exists():
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return True
            time.sleep(0.02)
        return False
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, kaldi_digits, repo_dir, env_with_path):
    """The tiny Kaldi dir, and the uninterrupted run's best WER."""
    root = tmp_path_factory.mktemp("kill")
    kaldi = digits_dir(kaldi_digits, root / "kaldi", ["jackson_0", "nicolas_0"], ["theo_1"])
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    s5 = make_recipe_copy(repo_dir, root / "reference")
    run(s5, env, kaldi)
    return kaldi, env, s5, best_wer(s5 / "exp/blstm/decode_test")


def test_killed_in_each_stage_and_in_scoring_then_rerun_gives_the_same_wer(tiny, tmp_path,
                                                                            repo_dir):
    kaldi, env, _, reference = tiny
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    points = ["data/train/.imported",            # stage 0, inside
              "exp/make_mfcc/test",              # stage 1, the second set's features
              "data/train_tr90",                 # stage 2, after the import, in the split
              "exp/blstm/nnet/epoch1.nnet",      # stage 3, after the first epoch
              "exp/blstm/decode_test/num_jobs",  # stage 4, decoding
              "exp/blstm/decode_test/scoring"]   # stage 4, scoring
    killed = [p for p in points if run_until(s5, env, kaldi, p)]
    assert len(killed) >= 5, killed  # (a stage may finish between two looks)
    _, out = run(s5, env, kaldi)
    assert best_wer(s5 / "exp/blstm/decode_test") == reference
    for rec in (["data/stage0.json", "data/stage1.json", "data/stage2.json",
                             "exp/blstm/stage3.json", "exp/blstm/stage4.json"]):
        assert json.loads((s5 / rec).read_text())["complete"], rec


def test_a_stage_killed_at_its_end_boundary_is_not_redone_and_one_with_other_inputs_is(
        tiny, tmp_path):
    """The reference dir run again: every stage done, nothing made again; an input of stage 2
    changed (the GMM's alignments rewritten): stage 2 is redone, naming the file, and so are
    the stages after it."""
    kaldi, env, s5, reference = tiny
    _, out = run(s5, env, kaldi, "--stop-stage", "2")
    assert out.count("done with these options and inputs") == 3, out[-3000:]
    assert "make_mfcc.sh" not in out and "import_ali.sh" not in out
    ali = kaldi / "exp/mono_ali/ali.1.gz"
    os.utime(ali, (time.time() + 5, time.time() + 5))
    _, out = run(s5, env, kaldi, "--stage", "2", "--stop-stage", "3")
    assert "data/stage2.json: the stage was made from other options or inputs" in out
    assert f"input {ali}: modified" in out
    assert "exp/blstm/stage3.json: the stage was made from other options or inputs" in out
    assert "training again from scratch" in out


def test_features_recomputed_after_a_skipped_wav_is_fixed(tmp_path, kaldi_digits, repo_dir,
                                                          env_with_path):
    """An unreadable wav: stage 1 skips it (counted) and stays unfinished; once the wav is
    fixed, the next run computes the features of every utterance (was: kept the old
    feats.scp, one utterance short)."""
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["jackson_0", "nicolas_0", "theo_0"],
                       ["theo_1"])  # (a job fails when more than 5% of its wavs do)
    wav_scp = kaldi / "data/train/wav.scp"
    rows = wav_scp.read_text().splitlines()
    utt, wav = rows[3].split(" ", 1)
    bad = kaldi / "broken" / "x.wav"
    bad.parent.mkdir()
    bad.write_bytes((kaldi / wav).read_bytes()[:100])  # cut short after the header
    rows[3] = f"{utt} broken/x.wav"
    wav_scp.write_text("\n".join(rows) + "\n")
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    # (speed copies asked for: the defaults make none for a cv set of 3 one-digit utterances)
    _, out = run(s5, env, kaldi, "--stop-stage", "1", "--speed-perturb", "true")
    assert "features of only: data/train: 29 of 30; stage 1 stays unfinished" in out, out[-3000:]
    assert len((s5 / "data/train/feats.scp").read_text().splitlines()) == 29
    assert not json.loads((s5 / "data/stage1.json").read_text())["complete"]
    # the speed copies of the 29 with features
    assert len((s5 / "data/train_sp/feats.scp").read_text().splitlines()) == 3 * 29
    assert not (s5 / "data/train/.with_feats").exists()  # (the list of those: not left there)
    shutil.copyfile(kaldi / wav, bad)  # fixed
    _, out = run(s5, env, kaldi, "--stop-stage", "1", "--speed-perturb", "true")
    assert "data/stage1.json: the stage started" in out and "never finished" in out
    feats = (s5 / "data/train/feats.scp").read_text().splitlines()
    assert len(feats) == 30 and any(line.startswith(utt + " ") for line in feats)
    assert json.loads((s5 / "data/stage1.json").read_text())["complete"]
    sp = (s5 / "data/train_sp/feats.scp").read_text().splitlines()
    assert len(sp) == 3 * 30 and any(line.startswith(f"sp0.9-{utt} ") for line in sp)
