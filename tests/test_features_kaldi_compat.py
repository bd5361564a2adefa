"""MFCC/fbank numbers: against kaldi-native-fbank, torchaudio.compliance.kaldi and the frame
counts of Kaldi's own features in the shared kaldi_digits experiment."""
from __future__ import annotations

import os

import kaldi_native_fbank as knf
import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.compliance.kaldi as ta_kaldi

from hybridasr.features.extractor import FeatureExtractor
from hybridasr.features.options import FeatureOptions
from hybridasr.kaldi.io.table import read_map


def _kaldi_scale(path):
    x, rate = sf.read(path, dtype="int16")
    return x.astype(np.float32), rate


def _knf(kind, opts: FeatureOptions, wave):
    ko = knf.MfccOptions() if kind == "mfcc" else knf.FbankOptions()
    fo = ko.frame_opts
    fo.samp_freq = opts.sample_frequency
    fo.dither = 0.0
    fo.snip_edges = opts.snip_edges
    fo.window_type = opts.window_type
    fo.frame_shift_ms = opts.frame_shift
    fo.frame_length_ms = opts.frame_length
    fo.preemph_coeff = opts.preemphasis_coefficient
    fo.remove_dc_offset = opts.remove_dc_offset
    fo.round_to_power_of_two = opts.round_to_power_of_two
    fo.blackman_coeff = opts.blackman_coeff
    mo = ko.mel_opts
    mo.num_bins = opts.num_mel_bins
    mo.low_freq = opts.low_freq
    mo.high_freq = opts.high_freq
    ko.use_energy = opts.use_energy
    ko.raw_energy = opts.raw_energy
    ko.htk_compat = opts.htk_compat
    ko.energy_floor = opts.energy_floor
    if kind == "mfcc":
        ko.num_ceps = opts.num_ceps
        ko.cepstral_lifter = opts.cepstral_lifter
        comp = knf.OnlineMfcc(ko)
    else:
        ko.use_log_fbank = opts.use_log_fbank
        ko.use_power = opts.use_power
        comp = knf.OnlineFbank(ko)
    comp.accept_waveform(opts.sample_frequency, wave)
    comp.input_finished()
    n = comp.num_frames_ready
    return np.stack([comp.get_frame(i) for i in range(n)]) if n else np.zeros((0, opts.feature_dim))


def _digits_wavs(kaldi_digits, subset):
    scp = read_map(str(kaldi_digits / "data" / subset / "wav.scp"))
    return {k: str(kaldi_digits / v) for k, v in scp.items()}


def _kaldi_frame_counts(kaldi_digits, subset):
    import kaldiio

    cwd = os.getcwd()
    os.chdir(kaldi_digits)  # scp paths are relative to the experiment dir
    try:
        return {k: v.shape[0] for k, v in
                kaldiio.load_scp_sequential(f"data/{subset}/feats.scp")}
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("kind", ["mfcc", "fbank"])
def test_kaldi_digits_match_knf_and_kaldi_frame_counts(kind, kaldi_digits):
    # the experiment's own conf (8 kHz, --use-energy=false) for MFCC, Kaldi defaults for fbank
    overrides = {"use_energy": False} if kind == "mfcc" else {}
    opts = FeatureOptions.kaldi_defaults(kind, sample_frequency=8000, dither=0.0, **overrides)
    ex = FeatureExtractor(opts)
    checked = 0
    for subset in ("train", "test"):
        wavs = _digits_wavs(kaldi_digits, subset)
        counts = _kaldi_frame_counts(kaldi_digits, subset)
        assert set(counts) == set(wavs)
        keys = sorted(wavs)
        waves = [_kaldi_scale(wavs[k])[0] for k in keys]
        ours = ex.compute_batch(waves, keys=keys)
        for key, wave, feats in zip(keys, waves, ours):
            ref = _knf(kind, opts, wave)
            assert feats.shape == ref.shape == (counts[key], opts.feature_dim), key
            np.testing.assert_allclose(feats, ref, atol=1e-3, rtol=0, err_msg=key)
            checked += 1
    assert checked == 150


@pytest.mark.parametrize("kind", ["mfcc", "fbank"])
def test_an4_16khz_matches_knf(kind, shared_dir):
    root = shared_dir / "data" / "an4_subset"
    wavs = sorted(root.glob("*/an4/wav/*.wav"))
    assert len(wavs) == 40
    opts = FeatureOptions.kaldi_defaults(kind, dither=0.0)  # Kaldi defaults: 16 kHz
    ex = FeatureExtractor(opts)
    for path in wavs:
        wave, rate = _kaldi_scale(str(path))
        assert rate == 16000
        ours = ex.compute(wave)
        ref = _knf(kind, opts, wave)
        assert ours.shape == ref.shape and ours.shape[0] > 50
        np.testing.assert_allclose(ours, ref, atol=1e-3, rtol=0, err_msg=str(path))


VARIANTS = [
    ("mfcc", {}),
    ("mfcc", {"snip_edges": False}),
    ("mfcc", {"htk_compat": True, "use_energy": False}),
    ("mfcc", {"htk_compat": True, "raw_energy": False, "energy_floor": 1.0}),
    ("mfcc", {"window_type": "hamming", "preemphasis_coefficient": 0.0,
              "remove_dc_offset": False, "cepstral_lifter": 0.0}),
    ("mfcc", {"window_type": "blackman", "num_ceps": 20, "num_mel_bins": 30,
              "low_freq": 60.0, "high_freq": -400.0}),
    ("fbank", {"use_energy": True, "htk_compat": True}),
    ("fbank", {"use_log_fbank": False, "use_power": False, "window_type": "hanning"}),
    ("fbank", {"round_to_power_of_two": False, "frame_length": 20.0, "frame_shift": 8.0,
               "window_type": "rectangular"}),
]


@pytest.mark.parametrize("kind,overrides", VARIANTS)
def test_option_variants_match_knf_and_torchaudio(kind, overrides, kaldi_digits):
    wave, rate = _kaldi_scale(str(kaldi_digits / "digits_audio/test/theo_1/7.wav"))
    opts = FeatureOptions.kaldi_defaults(kind, sample_frequency=rate, dither=0.0, **overrides)
    ours = FeatureExtractor(opts).compute(wave)
    ref = _knf(kind, opts, wave)
    assert ours.shape == ref.shape
    scale = 1.0 if kind == "mfcc" or opts.use_log_fbank else max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(ours / scale, ref / scale, atol=1e-3, rtol=0)
    # and the same numbers as calling torchaudio.compliance.kaldi directly
    kw = {k: getattr(opts, k) for k in (
        "blackman_coeff", "energy_floor", "frame_length", "frame_shift", "high_freq",
        "htk_compat", "low_freq", "num_mel_bins", "preemphasis_coefficient", "raw_energy",
        "remove_dc_offset", "round_to_power_of_two", "sample_frequency", "snip_edges",
        "use_energy", "window_type", "vtln_low", "vtln_high")}
    if kind == "mfcc":
        kw.update(num_ceps=opts.num_ceps, cepstral_lifter=opts.cepstral_lifter)
        ta = ta_kaldi.mfcc(torch.from_numpy(wave)[None], dither=0.0, **kw).numpy()
    else:
        kw.update(use_log_fbank=opts.use_log_fbank, use_power=opts.use_power)
        ta = ta_kaldi.fbank(torch.from_numpy(wave)[None], dither=0.0, **kw).numpy()
    np.testing.assert_allclose(ours / scale, ta / scale, atol=1e-3, rtol=0)


def test_vtln_warp_matches_torchaudio(kaldi_digits):
    wave, rate = _kaldi_scale(str(kaldi_digits / "digits_audio/test/theo_1/3.wav"))
    opts = FeatureOptions.kaldi_defaults("fbank", sample_frequency=rate, dither=0.0)
    ex = FeatureExtractor(opts)
    plain = ex.compute(wave)
    warped = ex.compute(wave, vtln_warp=0.9)
    ta = ta_kaldi.fbank(torch.from_numpy(wave)[None], sample_frequency=rate, dither=0.0,
                        energy_floor=0.0, vtln_warp=0.9).numpy()
    np.testing.assert_allclose(warped, ta, atol=1e-3, rtol=0)
    assert np.abs(warped - plain).max() > 0.1


def test_batch_equals_single_and_dither_is_reproducible(kaldi_digits):
    wavs = _digits_wavs(kaldi_digits, "test")
    keys = sorted(wavs)[:6]
    waves = [_kaldi_scale(wavs[k])[0] for k in keys]
    opts = FeatureOptions.kaldi_defaults("mfcc", sample_frequency=8000)  # dither=1.0
    assert opts.dither == 1.0 and opts.use_energy  # Kaldi's defaults, not torchaudio's
    ex = FeatureExtractor(opts, seed=3)
    batch = ex.compute_batch(waves, keys=keys)
    single = [ex.compute(w, key=k) for w, k in zip(waves, keys)]
    for b, s in zip(batch, single):
        np.testing.assert_array_equal(b, s)
    again = FeatureExtractor(opts, seed=3).compute(waves[0], key=keys[0])
    np.testing.assert_array_equal(again, single[0])
    other = FeatureExtractor(opts, seed=4).compute(waves[0], key=keys[0])
    assert np.abs(other - single[0]).max() > 0
    undithered = FeatureExtractor(FeatureOptions.kaldi_defaults(
        "mfcc", sample_frequency=8000, dither=0.0)).compute(waves[0])
    assert np.abs(undithered - single[0]).mean() < 0.5  # dither is a small perturbation


def test_short_waveform_gives_no_frames():
    opts = FeatureOptions.kaldi_defaults("mfcc", dither=0.0)
    ex = FeatureExtractor(opts)
    assert ex.compute(np.ones(100, np.float32)).shape == (0, 13)
    assert opts.num_frames(400) == 1 and opts.num_frames(559) == 1 and opts.num_frames(560) == 2
    no_snip = FeatureOptions.kaldi_defaults("mfcc", dither=0.0, snip_edges=False)
    assert FeatureExtractor(no_snip).compute(np.arange(100, dtype=np.float32)).shape == (1, 13)
