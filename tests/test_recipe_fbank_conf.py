"""``./run.sh --feat-type fbank`` on a Kaldi dir that has a conf/mfcc.conf but no fbank.conf:
the recipe's 40-bin fbank conf at the Kaldi dir's sample frequency (16 kHz for kaldi_polish,
where the recipe's own conf says 8 kHz, the digits rate)."""
from __future__ import annotations

import subprocess

import kaldiio

from kaldi_shapes import polish_dir
from test_recipe_e2e import make_recipe_copy


def test_fbank_takes_the_kaldi_dirs_sample_frequency(tmp_path, repo_dir, kaldi_polish,
                                                     env_with_path, monkeypatch):
    utts = sorted(line.split()[0] for line in
                  open(kaldi_polish / "data/train/utt2spk", encoding="utf-8"))[:4]
    kaldi = polish_dir(kaldi_polish, tmp_path / "kaldi", utts)
    assert not (kaldi / "conf/fbank.conf").exists()
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    assert "--sample-frequency=8000" in (s5 / "conf/fbank.conf").read_text()
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    args = ["./run.sh", "--kaldi-dir", str(kaldi), "--ali", "exp/tri1_ali", "--graph",
            "exp/tri1/graph", "--feat-type", "fbank", "--nj", "1", "--stop-stage", "1"]
    p = subprocess.run(args, cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    conf = (s5 / "data/fbank.conf").read_text().splitlines()
    assert "--num-mel-bins=40" in conf
    assert [c.split()[0] for c in conf if "frequency" in c] == ["--sample-frequency=16000"]
    monkeypatch.chdir(s5)  # feats.scp holds recipe-relative paths
    with kaldiio.ReadHelper("scp:data/train/feats.scp") as feats:
        dims = {utt: m.shape[1] for utt, m in feats}
    assert len(dims) == 4 and set(dims.values()) == {40}
    # a rerun leaves the conf (and so stage 1's record) as it was
    before = (s5 / "data/fbank.conf").stat().st_mtime_ns
    p = subprocess.run(args, cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert (s5 / "data/fbank.conf").stat().st_mtime_ns == before
