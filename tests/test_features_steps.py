"""steps/make_mfcc.sh, make_fbank.sh and compute_cmvn_stats.sh end to end, as a user runs them
(from a copy of kaldi_digits, the recipe dir, with relative paths as in Kaldi)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import kaldiio
import numpy as np
import pytest

from hybridasr.kaldi.io.table import read_int_map, read_map

@pytest.fixture
def recipe(tmp_path, kaldi_digits):
    d = tmp_path / "s5"
    os.makedirs(d / "data")
    shutil.copytree(kaldi_digits / "conf", d / "conf")
    src = kaldi_digits / "data" / "test"
    os.makedirs(d / "data" / "test")
    for name in ("wav.scp", "utt2spk", "spk2utt", "text"):
        shutil.copy(src / name, d / "data" / "test" / name)
    os.symlink(kaldi_digits / "digits_audio", d / "digits_audio")
    for p in (d / "conf").iterdir():
        os.chmod(p, 0o644)
    return d


def _run(args, cwd, env):
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{args} failed:\n{r.stdout}\n{r.stderr}"
    return r


def test_make_mfcc_and_cmvn_steps(recipe, repo_dir, env_with_path, kaldi_digits, monkeypatch):
    steps = repo_dir / "steps"
    _run([str(steps / "make_mfcc.sh"), "--nj", "2", "--mfcc-config", "conf/mfcc.conf",
          "data/test", "exp/make_mfcc/test", "mfcc"], recipe, env_with_path)
    data = recipe / "data" / "test"
    feats = read_map(str(data / "feats.scp"))
    assert list(feats) == sorted(read_map(str(data / "utt2spk")))
    # the scp points at the final ark paths, relative to the recipe dir as given
    arks = {v.rsplit(":", 1)[0] for v in feats.values()}
    assert arks == {"mfcc/raw_mfcc_test.1.ark", "mfcc/raw_mfcc_test.2.ark"}
    assert not [p for p in os.listdir(recipe / "mfcc") if p.endswith(".tmp")]
    logs = sorted(os.listdir(recipe / "exp/make_mfcc/test"))
    assert "make_mfcc_test.1.log" in logs and "make_mfcc_test.2.log" in logs
    # exactly Kaldi's frame counts, and close to Kaldi's numbers (Kaldi dithered)
    monkeypatch.chdir(kaldi_digits)
    kaldi = {k: v for k, v in kaldiio.load_scp_sequential("data/test/feats.scp")}
    monkeypatch.chdir(recipe)
    nf = read_int_map(str(data / "utt2num_frames"))
    ours = kaldiio.load_scp(str(data / "feats.scp"))
    for utt, ref in kaldi.items():
        assert nf[utt] == ref.shape[0] == ours[utt].shape[0], utt
        assert ours[utt].shape[1] == 13
        assert np.median(np.abs(ours[utt] - ref)) < 0.5, utt
    assert set(read_map(str(data / "utt2dur"))) == set(kaldi)
    assert (recipe / "mfcc/raw_mfcc_test.1.ark").read_bytes()[:40].find(b"\0BCM ") > 0

    _run([str(steps / "compute_cmvn_stats.sh"), "data/test", "exp/make_mfcc/test", "mfcc"],
         recipe, env_with_path)
    cmvn = read_map(str(data / "cmvn.scp"))
    assert list(cmvn) == ["jackson_4", "nicolas_2", "theo_1"]
    assert {v.rsplit(":", 1)[0] for v in cmvn.values()} == {"mfcc/cmvn_test.ark"}
    stats = kaldiio.load_scp(str(data / "cmvn.scp"))["theo_1"]
    frames = sum(nf[u] for u in read_map(str(data / "spk2utt"))["theo_1"].split())
    assert stats.shape == (2, 14) and stats[0, 13] == frames


def test_make_fbank_step_and_bad_input(recipe, repo_dir, env_with_path, monkeypatch):
    monkeypatch.chdir(recipe)
    data = recipe / "data" / "test"
    lines = (data / "wav.scp").read_text().splitlines()
    lines[3] = lines[3].split()[0] + " digits_audio/no_such.wav"  # one unreadable recording
    (data / "wav.scp").write_text("\n".join(lines) + "\n")
    Path(recipe / "conf/fbank.conf").write_text("--sample-frequency=8000\n--num-mel-bins=20")
    r = _run([str(repo_dir / "steps/make_fbank.sh"), "--nj", "1", "data/test"], recipe,
             env_with_path)
    feats = read_map(str(data / "feats.scp"))
    assert len(feats) == 29 and lines[3].split()[0] not in feats
    assert "not all of the feature files" in r.stderr
    log = (data / "log" / "make_fbank_test.1.log").read_text()
    assert "no_such.wav" in log and "29 out of 30" in log
    assert kaldiio.load_scp(str(data / "feats.scp"))[next(iter(feats))].shape[1] == 20
    assert {v.rsplit(":", 1)[0] for v in feats.values()} == {"data/test/data/raw_fbank_test.1.ark"}
    # more than 5% failing: the step fails
    (data / "wav.scp").write_text("\n".join(
        line.split()[0] + " missing.wav" if i < 5 else line for i, line in enumerate(lines)) + "\n")
    r = subprocess.run([str(repo_dir / "steps/make_fbank.sh"), "--nj", "1", "data/test"],
                       cwd=recipe, env=env_with_path, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0


def test_make_mfcc_with_segments(recipe, repo_dir, env_with_path, monkeypatch):
    monkeypatch.chdir(recipe)
    data = recipe / "data" / "seg"
    os.makedirs(data)
    wavs = read_map(str(recipe / "data/test/wav.scp"))
    recs = list(wavs.items())[:4]  # recordings rec<i>, two segments each, one speaker
    (data / "wav.scp").write_text("".join(f"rec{i} {p}\n" for i, (_, p) in enumerate(recs)))
    seg = [f"rec{i}_s{j} rec{i} {0.1 * j:.1f} {0.1 * j + 0.2:.1f}" for i in range(4)
           for j in range(2)]
    (data / "segments").write_text("".join(line + "\n" for line in seg))
    (data / "utt2spk").write_text("".join(f"{s.split()[0]} spk\n" for s in seg))
    (data / "spk2utt").write_text("spk " + " ".join(s.split()[0] for s in seg) + "\n")
    _run([str(repo_dir / "steps/make_mfcc.sh"), "--nj", "1", "data/seg", "exp/mk", "mfcc"],
         recipe, env_with_path)
    nf = read_int_map(str(data / "utt2num_frames"))
    assert sorted(nf) == sorted(s.split()[0] for s in seg)
    assert set(nf.values()) == {18}  # 0.2 s at 8 kHz: 1600 samples -> 1 + (1600-200)//80
    durs = read_map(str(data / "utt2dur"))
    assert all(abs(float(v) - 0.2) < 1e-9 for v in durs.values())
