"""wav.scp forms, segments, channels, formats and bad input for one feature job."""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import kaldiio
import numpy as np
import pytest
import soundfile as sf

from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.features.audio import Audio, UtteranceError, iter_audio
from hybridasr.features.extractor import FeatureExtractor
from hybridasr.features.make_feats import compute_feature_table
from hybridasr.features.options import FeatureOptions
from train_helpers import load_pybin

OPTS = FeatureOptions.kaldi_defaults("mfcc", sample_frequency=8000, dither=0.0,
                                     use_energy=False)


def run_feature_program(kind, argv):
    return load_pybin(f"compute_{kind}_feats").main(argv)


@pytest.fixture
def recdir(tmp_path, kaldi_digits, monkeypatch):
    """A recipe-like dir (cwd) with one real 8 kHz wav in several forms."""
    monkeypatch.chdir(tmp_path)
    src = kaldi_digits / "digits_audio/test/nicolas_2"
    os.makedirs("wav")
    for d in ("3", "5"):
        shutil.copy(src / f"{d}.wav", f"wav/{d}.wav")
    x, rate = sf.read("wav/3.wav", dtype="int16")
    sf.write("wav/3_float.wav", x.astype(np.float32) / 32768.0, rate, subtype="FLOAT")
    sf.write("wav/3.flac", x, rate, subtype="PCM_16")
    # int32 data fills the 24 bits from the top: raw 24-bit samples = 256 x the 16-bit ones
    sf.write("wav/3_24bit.wav", x.astype(np.int32) * 65536, rate, subtype="PCM_24")
    other = sf.read("wav/5.wav", dtype="int16")[0][: len(x)]
    other = np.pad(other, (0, len(x) - len(other)))
    sf.write("wav/stereo.wav", np.stack([other, x], axis=1), rate, subtype="PCM_16")
    import torch
    import torchaudio.functional as taF

    up = taF.resample(torch.from_numpy(x.astype(np.float32)), 8000, 16000).numpy()
    sf.write("wav/16k.wav", np.round(up).clip(-32768, 32767).astype(np.int16), 16000,
             subtype="PCM_16")
    open("wav/empty.wav", "wb").close()
    sf.write("wav/zero_len.wav", np.zeros(0, np.int16), rate, subtype="PCM_16")
    return tmp_path


def _write(path, lines):
    Path(path).write_text("".join(f"{line}\n" for line in lines))


def _feats(x):
    return FeatureExtractor(OPTS).compute(np.asarray(x, np.float32))


def test_wav_scp_forms_give_kaldi_numbers(recdir):
    ref = _feats(sf.read("wav/3.wav", dtype="int16")[0])
    raw = bytearray(open("wav/3.wav", "rb").read())  # as a wav written to a pipe: no lengths
    i = raw.find(b"data")
    raw[4:8] = raw[i + 4:i + 8] = b"\xff\xff\xff\xff"
    Path("wav/3.stream").write_bytes(bytes(raw))
    _write("wav.scp", ["a_plain wav/3.wav", "b_pipe cat wav/3.wav |", "g_stream cat wav/3.stream |",
                       "c_float wav/3_float.wav", "d_flac wav/3.flac",
                       "e_24bit wav/3_24bit.wav"])
    rep = compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS,
                                write_num_frames="ark,t:nf", write_utt2dur="ark,t:dur")
    assert rep.num_done == 6 and rep.num_skipped == 0
    got = dict(kaldiio.load_scp("o.scp"))
    for key in ("a_plain", "b_pipe", "g_stream", "c_float", "d_flac"):
        np.testing.assert_allclose(got[key], ref, atol=1e-4, err_msg=key)
    # Kaldi reads 24-bit samples as raw integers (256 x the 16-bit ones): every log mel
    # energy grows by log(256^2), which moves only C0 (by sqrt(23) * 2 log 256)
    np.testing.assert_allclose(got["e_24bit"][:, 1:], ref[:, 1:], atol=1e-3)
    np.testing.assert_allclose(got["e_24bit"][:, 0] - ref[:, 0],
                               2 * np.sqrt(23) * np.log(256.0), atol=1e-2)
    nf = dict(line.split() for line in open("nf"))
    assert nf["a_plain"] == str(ref.shape[0]) and len(nf) == 6
    dur = dict(line.split() for line in open("dur"))
    assert abs(float(dur["a_plain"]) - len(sf.read("wav/3.wav")[0]) / 8000) < 1e-6


def test_frame_counts_go_to_stdout_with_ark_t_dash(recdir, capfd):
    """``--write-num-frames=ark,t:-`` prints the table, as Kaldi; no file named ``-``."""
    ref = _feats(sf.read("wav/3.wav", dtype="int16")[0])
    _write("wav.scp", ["a_plain wav/3.wav"])
    compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS, write_num_frames="ark,t:-")
    assert capfd.readouterr().out == f"a_plain {ref.shape[0]}\n"
    assert not os.path.exists("-")


def test_channel_semantics(recdir, caplog):
    _write("wav.scp", ["s wav/stereo.wav"])
    x = sf.read("wav/stereo.wav", dtype="int16")[0]
    with caplog.at_level(logging.WARNING):
        items = list(iter_audio("wav.scp", channel=-1, warn=logging.getLogger("t").warning))
    # Kaldi's compute-mfcc-feats: -1 expects mono, takes channel 0 of stereo with a warning
    assert isinstance(items[0], Audio) and np.array_equal(items[0].samples, x[:, 0])
    assert "channel" in caplog.text
    right = list(iter_audio("wav.scp", channel=1))[0]
    assert np.array_equal(right.samples, x[:, 1])
    bad = list(iter_audio("wav.scp", channel=5))[0]
    assert isinstance(bad, UtteranceError) and "2 channel" in bad.reason
    rep = compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS, channel=1)
    np.testing.assert_allclose(kaldiio.load_scp("o.scp")["s"], _feats(x[:, 1]), atol=1e-5)
    assert rep.num_done == 1
    _write("wav.scp", ["m wav/3.wav", "s wav/stereo.wav"])
    with pytest.raises(HybridAsrError, match="1 of 2"):  # a mono file has no channel 1
        compute_feature_table("wav.scp", "ark,scp:p.ark,p.scp", OPTS, channel=1)
    assert not os.path.exists("p.ark") and not os.path.exists("p.scp")  # nothing half-written


def test_segments_cut_like_extract_segments(recdir):
    x = sf.read("wav/3.wav", dtype="int16")[0].astype(np.float32)
    n = len(x)
    _write("wav.scp", ["rec3 wav/3.wav", "recS wav/stereo.wav", "recP false |"])
    _write("segments", [
        "u1 rec3 0.02 0.2",           # plain cut: samples int(0.02*8000)..int(0.2*8000)
        "u2 rec3 0.1 -1",             # to the end
        f"u3 rec3 0.05 {n / 8000 + 0.2:.3f}",  # small overshoot: truncated
        f"u4 rec3 0.1 {n / 8000 + 2:.3f}",    # far beyond the end: skipped
        f"u5 rec3 {n / 8000 + 1:.3f} {n / 8000 + 2:.3f}",  # starts after the end: skipped
        "u6 rec3 0.2 0.1",            # invalid: skipped
        "u0 rec3 0.1 0.15",           # shorter than 0.1 s: skipped
        "u7 recS 0.0 0.2 1",          # channel column
        "u8 recS 0.0 0.2",            # stereo without a channel: channel 0, with a warning
        "u9 recX 0.0 0.2",            # unknown recording: skipped
        "v1 recP 0.0 0.2",            # failing command: skipped
    ])
    warnings = []
    items = {i.key: i for i in iter_audio("wav.scp", "segments", warn=warnings.append)}
    assert np.array_equal(items["u1"].samples, x[160:1600])
    assert np.array_equal(items["u2"].samples, x[800:])
    assert np.array_equal(items["u3"].samples, x[400:])
    for key in ("u0", "u4", "u5", "u6", "u9", "v1"):
        assert isinstance(items[key], UtteranceError), key
    assert "beyond the end" in items["u4"].reason and "beyond the end" in items["u5"].reason
    assert "exit status" in items["v1"].reason
    stereo = sf.read("wav/stereo.wav", dtype="int16")[0][:1600]
    assert np.array_equal(items["u7"].samples, stereo[:, 1])
    assert np.array_equal(items["u8"].samples, stereo[:, 0])
    assert [w for w in warnings if w.startswith("u8:") and "using channel 0" in w]


def test_bad_inputs_are_skipped_with_warnings_then_fail_over_threshold(recdir, caplog):
    _write("wav.scp", ["a wav/3.wav", "b wav/missing.wav", "c wav/empty.wav",
                       "d wav/zero_len.wav", "e false |", "f wav/5.wav",
                       "g head -c 10 wav/3.wav |",
                       "h head -c 30 wav/3.wav |",   # cut inside the fmt chunk
                       "i head -c 40 wav/3.wav |"])  # cut before the data chunk
    with caplog.at_level(logging.WARNING):
        rep = compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS,
                                    max_skipped_fraction=0.8)
    assert rep.num_done == 2 and sorted(rep.skipped) == ["b", "c", "d", "e", "g", "h", "i"]
    for key in ("b", "c", "d", "e", "g", "h", "i"):
        assert f"skipping utterance {key}:" in caplog.text
    assert "missing.wav" in caplog.text
    assert [line.split()[0] for line in open("o.scp")] == ["a", "f"]
    with pytest.raises(HybridAsrError, match="7 of 9 utterances"):
        compute_feature_table("wav.scp", "ark,scp:p.ark,p.scp", OPTS)  # default 5 %
    assert not os.path.exists("p.ark") and not os.path.exists("p.scp")
    assert not [f for f in os.listdir(".") if f.endswith(".tmp")]  # no temporary leftovers


def test_sample_rate_mismatch_and_resampling(recdir):
    _write("wav.scp", ["a wav/16k.wav"])
    with pytest.raises(HybridAsrError, match="16000 Hz.*allow-downsample"):
        compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS)
    assert not os.path.exists("o.scp")
    compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp",
                          FeatureOptions.kaldi_defaults("mfcc", sample_frequency=8000,
                                                        dither=0.0, use_energy=False,
                                                        allow_downsample=True))
    got = kaldiio.load_mat("o.ark:2")
    ref = _feats(sf.read("wav/3.wav", dtype="int16")[0])
    assert got.shape == ref.shape
    # Kaldi-style windowed-sinc resampling (6 zeros, cutoff 0.99 of the lower Nyquist)
    import torch
    import torchaudio.functional as taF

    x16 = torch.from_numpy(sf.read("wav/16k.wav", dtype="int16")[0].astype(np.float32))
    down = taF.resample(x16, 16000, 8000, lowpass_filter_width=6, rolloff=0.99).numpy()
    np.testing.assert_allclose(got, _feats(down), atol=1e-4)
    # and an upsampled copy resampled back is close to the original (the band near
    # Nyquist is filtered out, which moves the log energies of the top mel bin)
    assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.99


def test_program_conf_file_scp_and_errors(recdir, kaldi_digits):
    _write("wav.scp", ["a wav/3.wav", "b wav/5.wav"])
    shutil.copy(kaldi_digits / "conf/mfcc.conf", "mfcc.conf")  # no final newline, underscore
    os.makedirs("mfcc")
    run_feature_program("mfcc", ["--config=mfcc.conf", "--dither=0", "--compress=true",
                                 "--write-num-frames=ark,t:nf", "scp:wav.scp",
                                 "ark,scp:mfcc/raw.1.ark,mfcc/raw.1.scp"])
    lines = open("mfcc/raw.1.scp").read().split("\n")
    assert lines[0].startswith("a mfcc/raw.1.ark:") and lines[1].startswith("b mfcc/raw.1.ark:")
    assert sorted(os.listdir("mfcc")) == ["raw.1.ark", "raw.1.scp"]
    got = kaldiio.load_mat(lines[0].split()[1])  # compressed, Kaldi's CM format
    assert open("mfcc/raw.1.ark", "rb").read(8)[2:6] == b"\0BCM"
    ref = _feats(sf.read("wav/3.wav", dtype="int16")[0])
    kaldiio.save_ark("ref.ark", {"a": ref}, compression_method=1)  # copy-feats' default
    np.testing.assert_allclose(got, kaldiio.load_mat("ref.ark:2"), atol=1e-5)
    np.testing.assert_allclose(got, ref, atol=0.3)  # 8-bit compression error

    Path("bad.conf").write_text("--use-energy=false\n--num-ceps=13\n--frobnicate=1\n")
    with pytest.raises(ConfigError, match=r"bad.conf:3: unknown option --frobnicate"):
        run_feature_program("mfcc", ["--config=bad.conf", "scp:wav.scp", "ark:x.ark"])
    Path("bad2.conf").write_text("--use-log-fbank=false\n")  # an fbank option, not MFCC
    with pytest.raises(ConfigError, match=r"bad2.conf:1"):
        run_feature_program("mfcc", ["--config=bad2.conf", "scp:wav.scp", "ark:x.ark"])
    Path("bad3.conf").write_text("--window-type=kaiser\n")
    with pytest.raises(ConfigError, match="window-type=kaiser"):
        run_feature_program("fbank", ["--config=bad3.conf", "scp:wav.scp", "ark:x.ark"])
    with pytest.raises(ConfigError, match="htk"):
        run_feature_program("mfcc", ["--output-format=htk", "scp:wav.scp", "ark:x.ark"])
    with pytest.raises(ConfigError, match="scp:"):
        run_feature_program("mfcc", ["ark:wav.ark", "ark:x.ark"])
    assert not os.path.exists("x.ark")


def test_vtln_map_per_speaker(recdir):
    _write("wav.scp", ["s1_a wav/3.wav", "s2_b wav/3.wav"])
    _write("utt2spk", ["s1_a s1", "s2_b s2"])
    _write("spk2warp", ["s1 1.0", "s2 0.9"])
    run_feature_program("fbank", ["--sample-frequency=8000", "--dither=0",
                                  "--vtln-map=ark:spk2warp", "--utt2spk=ark:utt2spk",
                                  "scp:wav.scp", "ark,scp:o.ark,o.scp"])
    got = dict(kaldiio.load_scp("o.scp"))
    opts = FeatureOptions.kaldi_defaults("fbank", sample_frequency=8000, dither=0.0)
    x = sf.read("wav/3.wav", dtype="int16")[0].astype(np.float32)
    np.testing.assert_allclose(got["s1_a"], FeatureExtractor(opts).compute(x), atol=1e-5)
    np.testing.assert_allclose(got["s2_b"], FeatureExtractor(opts).compute(x, vtln_warp=0.9),
                               atol=1e-5)


def test_copy_feats_compresses_kaldi_features(kaldi_digits, tmp_path, monkeypatch):
    from hybridasr.features.copy_table import copy_feature_table

    monkeypatch.chdir(kaldi_digits)
    out = tmp_path / "c"
    n = copy_feature_table("scp:data/test/feats.scp", f"ark,scp:{out}.ark,{out}.scp",
                           compress=False, num_frames=f"ark,t:{tmp_path}/nf")
    assert n == 30
    ref = kaldiio.load_scp("data/test/feats.scp")
    got = kaldiio.load_scp(f"{out}.scp")
    assert list(got) == list(ref)
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], atol=1e-4)
    copy_feature_table(f"ark:{out}.ark", f"ark,scp:{out}2.ark,{out}2.scp", compress=True)
    assert open(f"{out}2.ark", "rb").read(40).find(b"\0BCM ") > 0
    assert (tmp_path / "nf").read_text().split("\n")[0] == f"jackson_4_0 {ref['jackson_4_0'].shape[0]}"


def test_segment_options_min_duration_and_subtract_mean(recdir):
    x = sf.read("wav/3.wav", dtype="int16")[0]
    _write("wav.scp", ["rec3 wav/3.wav", "rec5 wav/5.wav"])
    _write("segments", ["a rec3 0.0 0.05", "b rec5 0.0 0.2", "c rec3 0.0 0.2"])
    # 0.05 s is below Kaldi's default --min-segment-length=0.1 but allowed with 0.01
    rep = compute_feature_table("wav.scp", "ark,scp:o.ark,o.scp", OPTS, segments="segments",
                                min_segment_length=0.01, subtract_mean=True)
    assert rep.num_done == 3
    got = dict(kaldiio.load_scp("o.scp"))
    ref = _feats(x[:1600])
    np.testing.assert_allclose(got["c"], ref - ref.mean(axis=0), atol=1e-4)
    np.testing.assert_allclose(got["c"].mean(axis=0), 0, atol=1e-4)
    # --min-duration: shorter utterances are skipped (as Kaldi: no output for them)
    rep = compute_feature_table("wav.scp", "ark,scp:p.ark,p.scp", OPTS, segments="segments",
                                min_segment_length=0.01, min_duration=0.1,
                                max_skipped_fraction=0.5)
    assert rep.skipped == ["a"] and [line.split()[0] for line in open("p.scp")] == ["b", "c"]
