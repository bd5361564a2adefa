"""The features' sample rate read from the audio (hybridasr/features/sample_rate.py) and the
conf chosen for it (pybin/make_feat_config.py), on real wavs from ../shared: kaldi_digits
(8 kHz mono), kaldi_tiny_2spk (16 kHz, stereo) and copies resampled from them."""
from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from hybridasr.features.options import FbankOptions
from hybridasr.features.sample_rate import (AudioRates, choose_feature_conf, conf_fits_audio,
                                            read_conf_rate, recording_rate, survey_rates,
                                            wav_header_rate)
from kaldi_shapes import write_wav_copy
from train_helpers import load_pybin

REPO = Path(__file__).resolve().parents[1]
RECIPE_FBANK = REPO / "egs/digits/s5/conf/fbank.conf"


@pytest.fixture(scope="module")
def tiny_2spk(shared_dir) -> Path:
    path = shared_dir / "data" / "kaldi_tiny_2spk"
    assert path.is_dir(), path
    return path


def _wavs(kaldi: Path, data: str):
    rows = [line.split(None, 1) for line in
            (kaldi / data / "wav.scp").read_text().splitlines() if line.strip()]
    return [(k, str(kaldi / v.strip())) for k, v in rows]


def _scp(path: Path, rows) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k} {v}\n" for k, v in rows))
    return str(path)


def _conf(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _fbank_options(conf_path: str) -> FbankOptions:
    """The options pybin/compute_fbank_feats.py reads from the conf (validated)."""
    from hybridasr.options import from_values

    args = load_pybin("compute_fbank_feats").get_parser().parse_args(
        [f"--config={conf_path}", "scp:x", "ark:y"])
    opts = from_values(FbankOptions, args)
    opts.validate()
    return opts


# ------------------------------------------------------------------ reading the rates
def test_header_rates_of_real_wavs(kaldi_digits, tiny_2spk):
    for kaldi, rate, channels in ((kaldi_digits, 8000, {1}), (tiny_2spk, 16000, {1, 2})):
        wavs = _wavs(kaldi, "data/train")
        assert {sf.info(p).samplerate for _, p in wavs} == {rate}
        assert {sf.info(p).channels for _, p in wavs} <= channels
        assert {wav_header_rate(p) for _, p in wavs} == {rate}
        assert {recording_rate(p) for _, p in wavs} == {rate}


def test_header_rate_past_other_chunks_and_of_a_streamed_wav(tmp_path, kaldi_digits):
    """A LIST chunk before fmt, and the data length a pipe leaves unfilled (0xFFFFFFFF)."""
    src = Path(_wavs(kaldi_digits, "data/train")[0][1]).read_bytes()
    assert src[12:16] == b"fmt "
    riff_list = b"LIST" + struct.pack("<I", 5) + b"INFOx" + b"\0"  # odd size: padded
    with_list = src[:12] + riff_list + src[12:]
    (tmp_path / "list.wav").write_bytes(with_list)
    assert wav_header_rate(str(tmp_path / "list.wav")) == 8000
    data_at = src.index(b"data")
    streamed = src[:4] + b"\xff\xff\xff\xff" + src[8:data_at + 4] + b"\xff\xff\xff\xff" + \
        src[data_at + 8:]
    (tmp_path / "streamed.wav").write_bytes(streamed)
    assert wav_header_rate(str(tmp_path / "streamed.wav")) == 8000
    # not a wav: None from the header, the rate from libsndfile
    x, sr = sf.read(_wavs(kaldi_digits, "data/train")[0][1], dtype="int16")
    sf.write(str(tmp_path / "a.flac"), x, sr)
    assert wav_header_rate(str(tmp_path / "a.flac")) is None
    assert recording_rate(str(tmp_path / "a.flac")) == 8000


def test_survey_counts_rates_commands_and_unreadable(tmp_path, kaldi_digits, tiny_2spk):
    eight = _wavs(kaldi_digits, "data/train")[:3]       # 8 kHz mono
    sixteen = _wavs(tiny_2spk, "data/train")[:4]        # 16 kHz stereo
    write_wav_copy(Path(eight[0][1]), tmp_path / "up.wav", rate=16000, stereo=True)
    rows = eight + sixteen + [("resampled", str(tmp_path / "up.wav")),
                              ("missing", str(tmp_path / "nothing.wav")),
                              ("piped", f"cat {eight[1][1]} |")]
    test_rows = [("again", sixteen[0][1])]  # the same recording listed twice counts once
    scps = [_scp(tmp_path / "train/wav.scp", rows), _scp(tmp_path / "test/wav.scp", test_rows)]
    audio = survey_rates(scps)
    assert audio.counts == {8000: 4, 16000: 5}  # the pipe decoded: 8 kHz
    assert audio.unreadable == 1 and "nothing.wav" in audio.first_error
    assert audio.not_read == 0
    assert audio.rate == 16000
    assert audio.resampled(16000) == ({}, {8000: 4})
    assert audio.resampled(8000) == ({16000: 5}, {})
    # commands beyond --max-decoded are counted, not read
    pipes = [(f"p{i}", f"cat {p} |") for i, (_, p) in enumerate(eight)]
    audio = survey_rates([_scp(tmp_path / "pipes/wav.scp", pipes)], max_decoded=1)
    assert audio.counts == {8000: 1} and audio.not_read == 2


def test_most_common_rate_and_ties():
    assert AudioRates({8000: 3, 16000: 2}).rate == 8000
    assert AudioRates({8000: 2, 16000: 2}).rate == 16000  # a tie: the higher
    assert AudioRates({}).rate is None


# ------------------------------------------------------------------ the conf
def test_conf_rate_as_kaldi_reads_it(tmp_path, kaldi_digits, tiny_2spk):
    digits = read_conf_rate(str(kaldi_digits / "conf/mfcc.conf"))  # --sample_frequency, no \n
    assert digits.named == 8000 and digits.rate == 8000
    tiny = read_conf_rate(str(tiny_2spk / "conf/mfcc.conf"))  # names no rate: Kaldi's 16 kHz
    assert tiny.named is None and tiny.rate == 16000
    c = read_conf_rate(_conf(tmp_path / "c.conf", "--sample-frequency=16000\n"
                             "--allow_downsample=true\n--sample-frequency=8000 # the last\n"))
    assert c.rate == 8000 and c.allow_downsample and not c.allow_upsample


def test_conf_fits_audio(tmp_path):
    at_16k = AudioRates({16000: 10})
    assert conf_fits_audio(None, at_16k)  # no conf: Kaldi's default 16 kHz
    assert conf_fits_audio(_conf(tmp_path / "none.conf", "--num-mel-bins=40\n"), at_16k)
    stale = _conf(tmp_path / "stale.conf", "--sample-frequency=16000\n")
    assert not conf_fits_audio(stale, AudioRates({44100: 3}))
    down = _conf(tmp_path / "down.conf", "--sample-frequency=8000\n--allow-downsample=true\n")
    assert conf_fits_audio(down, at_16k)
    assert not conf_fits_audio(down, AudioRates({16000: 3, 4000: 1}))


def test_kaldi_conf_without_a_rate_at_16k(tmp_path, tiny_2spk, monkeypatch):
    """kaldi_tiny_2spk: its mfcc.conf names no rate and the audio is 16 kHz: used, the rate
    written out; no fbank.conf: the recipe's (8 kHz) at the audio's rate."""
    monkeypatch.chdir(tiny_2spk)  # (its wav.scp paths are relative to it, as Kaldi runs)
    audio = survey_rates(["data/train/wav.scp", "data/test/wav.scp"])
    assert audio.counts == {16000: 40} and audio.unreadable == 0
    mfcc = choose_feature_conf("mfcc", audio,
                               str(tiny_2spk / "conf/mfcc.conf"), str(RECIPE_FBANK))
    assert mfcc.rate == 16000
    assert mfcc.reason == (f"mfcc at 16000 Hz: the audio's rate (40 of 40 recordings); "
                           f"{tiny_2spk}/conf/mfcc.conf says nothing: Kaldi's default 16000")
    lines = mfcc.text.splitlines()
    assert "--use-energy=false   # only non-default option." in lines
    assert lines[-1].startswith("--sample-frequency=16000")
    fbank = choose_feature_conf("fbank", audio,
                                str(tiny_2spk / "conf/fbank.conf"), str(RECIPE_FBANK))
    assert "says 8000, the rate replaced" in fbank.reason
    path = _conf(tmp_path / "fbank.conf", fbank.text)
    opts = _fbank_options(path)
    assert opts.sample_frequency == 16000 and opts.num_mel_bins == 40
    assert not opts.allow_downsample and not opts.allow_upsample


def test_stale_kaldi_conf_keeps_its_other_options(tmp_path):
    """A 44.1 kHz dir whose conf/fbank.conf was left at 16 kHz: its options, the audio's rate;
    a --high-freq beyond the new Nyquist is kept as the same distance below it."""
    kaldi = _conf(tmp_path / "k/conf/fbank.conf",
                  "--num-mel-bins=30\n--sample-frequency=16000\n--high-freq=7600\n")
    chosen = choose_feature_conf("fbank", AudioRates({44100: 12}), kaldi, str(RECIPE_FBANK))
    assert chosen.rate == 44100
    assert chosen.reason.endswith(f"{kaldi} says 16000, stale: not used (its other options "
                                  f"kept, the rate replaced)")
    opts = _fbank_options(_conf(tmp_path / "out.conf", chosen.text))
    assert (opts.sample_frequency, opts.num_mel_bins, opts.high_freq) == (44100, 30, 7600)
    down = choose_feature_conf("fbank", AudioRates({8000: 2}), kaldi, str(RECIPE_FBANK))
    opts = _fbank_options(_conf(tmp_path / "out8.conf", down.text))
    assert (opts.sample_frequency, opts.high_freq) == (8000, -400)  # 3600 Hz at 8 kHz


def test_mixed_rates_add_the_resampling_options(tmp_path, kaldi_digits):
    """8 and 16 kHz mixed: the most common rate, --allow-upsample for the others, counted;
    a Kaldi conf that resamples on purpose (8 kHz, --allow-downsample) is kept."""
    audio = AudioRates({16000: 7, 8000: 3})
    chosen = choose_feature_conf("mfcc", audio, str(kaldi_digits / "conf/mfcc.conf"),
                                 str(RECIPE_FBANK))
    assert chosen.rate == 16000
    assert "(7 of 10 recordings; 3 at 8000 Hz upsampled)" in chosen.reason
    assert "says 8000, stale" in chosen.reason
    text = chosen.text.splitlines()
    assert "--allow-upsample=true  # 3 recording(s) resampled" in text
    assert not any(t.startswith("--allow-downsample") for t in text)
    assert [t.split()[0] for t in text if "sample_frequency" in t or "sample-frequency" in t] \
        == ["--sample-frequency=16000"]
    on_purpose = _conf(tmp_path / "conf/fbank.conf",
                       "--sample-frequency=8000\n--allow-downsample=true\n")
    kept = choose_feature_conf("fbank", audio, on_purpose, str(RECIPE_FBANK))
    assert kept.rate == 8000 and "whose --allow-* options resample" in kept.reason
    assert "7 at 16000 Hz downsampled" in kept.reason
    opts = _fbank_options(_conf(tmp_path / "kept.conf", kept.text))
    assert opts.sample_frequency == 8000 and opts.allow_downsample
    assert not opts.allow_upsample  # (no rate below 8 kHz)


def test_no_rate_read_keeps_the_confs(tmp_path):
    audio = AudioRates({}, unreadable=2, first_error="no such file: a.wav")
    chosen = choose_feature_conf("fbank", audio, None, str(RECIPE_FBANK))
    assert chosen.rate == 8000 and "no recording's rate could be read" in chosen.reason


# ------------------------------------------------------------------ the CLI
def test_cli_writes_the_conf_once(tmp_path, tiny_2spk, kaldi_digits, env_with_path):
    data = tmp_path / "data"
    for x in ("train", "test"):  # the recipe's data dirs: absolute wav paths
        _scp(data / x / "wav.scp", _wavs(tiny_2spk, f"data/{x}"))
    out = data / "fbank.conf"
    cmd = [str(REPO / "pybin/make_feat_config.py"), f"--kaldi-conf={tiny_2spk}/conf/fbank.conf",
           f"--recipe-conf={RECIPE_FBANK}", "fbank", str(out), str(data / "train"),
           str(data / "test")]

    def run():
        p = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-3000:]
        return p.stdout.strip().splitlines()

    assert run() == [f"make_feat_config.py: {out}: fbank at 16000 Hz: the audio's rate (40 of "
                     f"40 recordings); no {tiny_2spk}/conf/fbank.conf: {RECIPE_FBANK} says "
                     f"8000, the rate replaced"]
    assert _fbank_options(str(out)).sample_frequency == 16000
    stamp = out.stat().st_mtime_ns - 10**9
    os.utime(out, ns=(stamp, stamp))
    run()
    assert out.stat().st_mtime_ns == stamp  # the same contents: not rewritten
    # other audio: rewritten (8 kHz now), and no temporary left beside it
    _scp(data / "train" / "wav.scp", _wavs(kaldi_digits, "data/train")[:2])
    _scp(data / "test" / "wav.scp", [])
    said = run()
    assert "fbank at 8000 Hz: the audio's rate (2 of 2 recordings)" in said[0]
    assert _fbank_options(str(out)).sample_frequency == 8000
    assert sorted(p.name for p in data.iterdir()) == ["fbank.conf", "test", "train"]


def test_cli_names_a_bad_conf_line(tmp_path, tiny_2spk, env_with_path):
    data = tmp_path / "data"
    _scp(data / "train" / "wav.scp", _wavs(tiny_2spk, "data/train")[:1])
    bad = _conf(tmp_path / "k/conf/fbank.conf", "--num-mel-bins=40\nsample-frequency=16000\n")
    p = subprocess.run([str(REPO / "pybin/make_feat_config.py"), f"--kaldi-conf={bad}", "fbank",
                        str(data / "fbank.conf"), str(data / "train")], env=env_with_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and f"{bad}:2:" in p.stderr
    assert not (data / "fbank.conf").exists()
