"""pybin/feat_to_len.py, utils/data/get_utt2num_frames.sh and get_utt2dur.sh on copies of the
real kaldi_digits data (Kaldi-written compressed features, real wav files)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import kaldiio
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parents[1]


def sh(args, cwd, env, ok=True):
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    if ok:
        assert r.returncode == 0, f"{args} failed:\n{r.stdout}\n{r.stderr}"
    return r


def table(path: Path):
    return dict(line.split(None, 1) for line in path.read_text().splitlines())


@pytest.fixture
def s5(kaldi_digits_copy):
    return kaldi_digits_copy


def kaldi_lengths(s5, data, monkeypatch):
    monkeypatch.chdir(s5)
    return {k: str(m.shape[0]) for k, m in kaldiio.load_scp_sequential(f"{data}/feats.scp")}


def test_feat_to_len_reads_headers_like_kaldiio_reads_matrices(s5, env_with_path, monkeypatch):
    expected = kaldi_lengths(s5, "data/test", monkeypatch)
    r = sh([REPO / "pybin/feat_to_len.py", "scp:data/test/feats.scp", "ark,t:-"], s5,
           env_with_path)
    assert dict(ln.split() for ln in r.stdout.splitlines()) == expected
    assert r.stderr.splitlines()[0] == "feat_to_len.py scp:data/test/feats.scp ark,t:-"
    sh([REPO / "pybin/feat_to_len.py", "ark:mfcc/raw_mfcc_test.1.ark", "ark,t:lens.txt"], s5,
       env_with_path)
    got = dict(ln.split() for ln in (s5 / "lens.txt").read_text().splitlines())
    assert got and all(expected[k] == v for k, v in got.items())
    first = (s5 / "data/test/feats.scp").read_text().split()[:2]
    r = sh([REPO / "pybin/feat_to_len.py", first[1]], s5, env_with_path)
    assert r.stdout.strip() == expected[first[0]]
    r = sh([REPO / "pybin/feat_to_len.py", "scp:data/test/absent.scp", "ark,t:-"], s5,
           env_with_path, ok=False)
    assert r.returncode == 1 and "data/test/absent.scp" in r.stderr


def test_get_utt2num_frames(s5, env_with_path, monkeypatch):
    expected = kaldi_lengths(s5, "data/train", monkeypatch)
    script = REPO / "utils/data/get_utt2num_frames.sh"
    r = sh([script, "--nj", 3, "data/train"], s5, env_with_path)
    assert table(s5 / "data/train/utt2num_frames") == expected
    assert list(table(s5 / "data/train/utt2num_frames")) == sorted(expected)
    logs = sorted(p.name for p in (s5 / "data/train/log").iterdir())
    assert logs == [f"get_utt2num_frames.{n}.log" for n in (1, 2, 3)]
    r = sh([script, "data/train"], s5, env_with_path)
    assert "already present" in r.stdout
    # more jobs than speakers: capped (data/test has 3 speakers)
    sh([script, "--nj", 8, "data/test"], s5, env_with_path)
    assert len(table(s5 / "data/test/utt2num_frames")) == 30
    r = sh([script], s5, env_with_path, ok=False)
    assert r.returncode == 1 and "e.g.:" in r.stderr
    r = sh([script, "--bogus", 1, "data/test"], s5, env_with_path, ok=False)
    assert r.returncode == 1 and "invalid option --bogus" in r.stderr
    r = sh([script, "data/absent"], s5, env_with_path, ok=False)
    assert r.returncode == 1 and "no such directory data/absent" in r.stderr


def test_get_utt2dur_from_wav_headers_pipes_and_segments(s5, env_with_path):
    script = REPO / "utils/data/get_utt2dur.sh"
    sh([script, "--nj", 2, "data/test"], s5, env_with_path)
    durs = table(s5 / "data/test/utt2dur")
    wavs = table(s5 / "data/test/wav.scp")
    assert list(durs) == sorted(wavs)
    for utt, path in wavs.items():
        info = sf.info(str(s5 / path))
        assert float(durs[utt]) == pytest.approx(info.frames / info.samplerate, abs=1e-5)
    # the same audio through "cmd |" pipes: read, same durations
    d = s5 / "data/piped"
    d.mkdir()
    for name in ("utt2spk", "spk2utt"):
        (d / name).write_text((s5 / "data/test" / name).read_text())
    (d / "wav.scp").write_text("".join(f"{u} cat {p} |\n" for u, p in wavs.items()))
    sh([script, "--nj", 1, "data/piped"], s5, env_with_path)
    assert table(d / "utt2dur") == durs
    # segments: end - start
    (d / "segments").write_text("".join(f"{u} {u} 0.1 0.35\n" for u in wavs))
    (d / "utt2dur").unlink()
    sh([script, "data/piped"], s5, env_with_path)
    assert set(table(d / "utt2dur").values()) == {"0.25"}
    # frame counts without features: from utt2dur, int((dur - 0.015) / 0.01)
    sh([REPO / "utils/data/get_utt2num_frames.sh", "data/piped"], s5, env_with_path)
    assert set(table(d / "utt2num_frames").values()) == {"23"}


def test_get_utt2dur_names_a_bad_wav_line(s5, env_with_path):
    d = s5 / "data/test"
    lines = (d / "wav.scp").read_text().splitlines()
    lines[4] = lines[4].split()[0] + " digits_audio/none.wav"
    (d / "wav.scp").write_text("\n".join(lines) + "\n")
    r = sh([REPO / "utils/data/get_utt2dur.sh", "--nj", 1, "data/test"], s5, env_with_path,
           ok=False)
    assert r.returncode != 0
    log = (d / "log/get_durations.1.log").read_text()
    assert "data/test/split1utt/1/wav.scp:5: cannot read the audio" in log
    assert not (d / "utt2dur").exists()
