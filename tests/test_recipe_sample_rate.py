"""``./run.sh --stop-stage 1`` computes the features at the audio's sample rate, whatever the
Kaldi dir's confs say (pybin/make_feat_config.py): kaldi_tiny_2spk as it is (16 kHz, stereo, an
mfcc.conf naming no rate, no fbank.conf), a 44.1 kHz copy of kaldi_digits with a conf/fbank.conf
left at 16 kHz, and a copy with 8 and 16 kHz wavs mixed, some stereo."""
from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import kaldiio
import pytest
import soundfile as sf

from kaldi_shapes import digits_dir, write_wav_copy
from test_recipe_e2e import make_recipe_copy


@pytest.fixture
def recipe(tmp_path, repo_dir, env_with_path):
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    return s5, dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir), OMP_NUM_THREADS="1")


def run_to_stage1(s5, env, kaldi, *args):
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi), "--nj", "1", "--stop-stage", "1",
                        *args], cwd=s5, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return p.stdout + p.stderr


def table(path: Path) -> dict:
    return dict(line.split(None, 1) for line in path.read_text().splitlines() if line.strip())


def expected_frames(wav: str, rate: int) -> int:
    """Kaldi's frame count (25 ms windows every 10 ms, snip-edges) of ``wav`` at ``rate``
    (resampled by an integer factor, as torchaudio and Kaldi give n * rate / its rate)."""
    info = sf.info(wav)
    n = info.frames * rate // info.samplerate
    shift, size = int(rate * 0.010), int(rate * 0.025)
    return 1 + (n - size) // shift


def check_features(s5: Path, kind: str, rate: int, dim: int) -> int:
    """Every utterance of data/train and data/test has ``dim``-dim features with the frames of
    its audio at ``rate``; returns how many utterances."""
    total = 0
    for x in ("train", "test"):
        wavs = {u: v.strip() for u, v in table(s5 / f"data/{x}/wav.scp").items()}
        frames = {u: int(n) for u, n in table(s5 / f"data/{x}/utt2num_frames").items()}
        assert frames == {u: expected_frames(w, rate) for u, w in wavs.items()}
        with contextlib.chdir(s5):  # (feats.scp holds recipe-relative paths)
            with kaldiio.ReadHelper(f"scp:data/{x}/feats.scp") as feats:
                shapes = {u: m.shape for u, m in feats}
        assert shapes == {u: (frames[u], dim) for u in wavs}
        total += len(wavs)
    conf = [c.split()[0] for c in (s5 / f"data/{kind}.conf").read_text().splitlines()
            if c.startswith("--sample")]
    assert conf == [f"--sample-frequency={rate}"]
    return total


def test_tiny_2spk_fbank_at_16k(recipe, shared_dir):
    """16 kHz, 39 of 40 wavs stereo, conf/mfcc.conf naming no rate, no conf/fbank.conf: the
    recipe's fbank conf (8 kHz) was taken as it is before and stage 1 failed."""
    s5, env = recipe
    # (resolved: run.sh names the Kaldi dir by its physical path, and CI's shared/ is a link)
    kaldi = (shared_dir / "data" / "kaldi_tiny_2spk").resolve()
    assert "sample" not in (kaldi / "conf/mfcc.conf").read_text()
    assert not (kaldi / "conf/fbank.conf").exists()
    out = run_to_stage1(s5, env, kaldi, "--feat-type", "fbank")
    assert (f"make_feat_config.py: data/fbank.conf: fbank at 16000 Hz: the audio's rate (40 of "
            f"40 recordings); no {kaldi}/conf/fbank.conf: conf/fbank.conf says 8000, the rate "
            f"replaced") in out
    assert check_features(s5, "fbank", 16000, 40) == 40
    assert "using channel 0" in (s5 / "exp/make_fbank/train/make_fbank_train.1.log").read_text()
    # the inputs recorded are the options given (no --feat-config), not the conf made here
    assert " feat_type=fbank feat_config= " in (s5 / "data/recipe_inputs.txt").read_text()


def test_44k_with_a_stale_fbank_conf(recipe, tmp_path, kaldi_digits):
    """A 44.1 kHz dir whose conf/fbank.conf was left at Kaldi's 16 kHz (its authors used MFCCs
    at 44.1 kHz): its other options (30 mel bins) at the audio's rate."""
    s5, env = recipe
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["theo_0"], ["theo_1"], rate=44100)
    (kaldi / "conf/fbank.conf").write_text("--num-mel-bins=30\n--sample-frequency=16000\n")
    out = run_to_stage1(s5, env, kaldi, "--feat-type", "fbank")
    assert (f"fbank at 44100 Hz: the audio's rate (20 of 20 recordings); {kaldi}/conf/fbank.conf "
            f"says 16000, stale: not used") in out
    assert check_features(s5, "fbank", 44100, 30) == 20


def test_mixed_rates_and_stereo(recipe, tmp_path, kaldi_digits):
    """8 kHz and 16 kHz wavs mixed, some stereo, and the Kaldi dir's mfcc.conf at 8 kHz: the
    features at the most common rate (16 kHz), the others upsampled and counted."""
    s5, env = recipe
    kaldi = digits_dir(kaldi_digits, tmp_path / "kaldi", ["theo_0"], ["theo_1"])
    assert "--sample_frequency=8000" in (kaldi / "conf/mfcc.conf").read_text()
    n8 = n16 = 0
    for x in ("train", "test"):
        rows = table(kaldi / f"data/{x}/wav.scp")
        for i, (utt, path) in enumerate(sorted(rows.items())):
            at_16k = i % 3 != 0
            dst = kaldi / "mixed" / f"{utt}.wav"
            write_wav_copy(kaldi / path.strip(), dst, rate=16000 if at_16k else None,
                           stereo=i % 2 == 0)
            rows[utt] = str(dst.relative_to(kaldi))
            n16, n8 = n16 + at_16k, n8 + (not at_16k)
        (kaldi / f"data/{x}/wav.scp").write_text("".join(f"{u} {p}\n" for u, p in rows.items()))
    assert n16 > n8 > 0
    out = run_to_stage1(s5, env, kaldi, "--feat-type", "mfcc")
    assert (f"mfcc at 16000 Hz: the audio's rate ({n16} of {n8 + n16} recordings; {n8} at 8000 "
            f"Hz upsampled); {kaldi}/conf/mfcc.conf says 8000, stale") in out
    conf = (s5 / "data/mfcc.conf").read_text().splitlines()
    assert f"--allow-upsample=true  # {n8} recording(s) resampled" in conf
    assert "--use-energy=false" in conf  # the Kaldi dir's other option
    assert check_features(s5, "mfcc", 16000, 13) == n8 + n16
    assert "using channel 0" in (s5 / "exp/make_mfcc/train/make_mfcc_train.1.log").read_text()
