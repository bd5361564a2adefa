"""CMVN stats (against Kaldi's own cmvn.scp), apply_cmvn, deltas and splicing."""
from __future__ import annotations

import os

import kaldi_native_fbank as knf
import kaldiio
import numpy as np
import pytest

from hybridasr.errors import FormatError
from hybridasr.features.cmvn import (accumulate_cmvn_stats, apply_cmvn, fake_cmvn_stats,
                                     fake_dims)
from hybridasr.features.cmvn_table import compute_cmvn_table
from hybridasr.features.context import add_deltas, splice_frames
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp


@pytest.mark.parametrize("subset", ["train", "test"])
def test_stats_from_kaldi_features_equal_kaldi_cmvn_scp(subset, kaldi_digits, tmp_path,
                                                        monkeypatch):
    monkeypatch.chdir(kaldi_digits)  # scp paths are relative to the experiment dir
    out = tmp_path / "cmvn"
    n = compute_cmvn_table(f"data/{subset}/feats.scp", f"ark,scp:{out}.ark,{out}.scp",
                           spk2utt=f"data/{subset}/spk2utt")
    ours = kaldiio.load_scp(f"{out}.scp")
    kaldi = kaldiio.load_scp(f"data/{subset}/cmvn.scp")
    assert list(ours) == list(kaldi) and n == len(kaldi) >= 3
    for spk in kaldi:
        assert ours[spk].dtype == np.float64 and ours[spk].shape == (2, 14)
        # Kaldi's decompression and float squares reproduced: equal to double rounding
        np.testing.assert_allclose(ours[spk], kaldi[spk], rtol=1e-9, atol=1e-9, err_msg=spk)


def test_exact_decompression_is_close_to_kaldiio(kaldi_digits, monkeypatch):
    monkeypatch.chdir(kaldi_digits)
    ref = kaldiio.load_scp("data/test/feats.scp")
    seen = 0
    for utt, mat in iter_feature_scp("data/test/feats.scp"):
        np.testing.assert_allclose(mat, ref[utt], atol=1e-4)
        seen += 1
    assert seen == 30


def test_fake_and_per_utterance_stats(kaldi_digits, tmp_path, monkeypatch):
    monkeypatch.chdir(kaldi_digits)
    out = tmp_path / "fake"
    compute_cmvn_table("data/test/feats.scp", f"ark,scp:{out}.ark,{out}.scp",
                       spk2utt="data/test/spk2utt", fake=True)
    fake = kaldiio.load_scp(f"{out}.scp")
    feats = kaldiio.load_mat(open("data/test/feats.scp").readline().split()[1])
    for stats in fake.values():
        np.testing.assert_array_equal(stats, fake_cmvn_stats(13))
        np.testing.assert_allclose(apply_cmvn(feats, stats, norm_vars=True), feats, atol=1e-6)
    out = tmp_path / "utt"
    n = compute_cmvn_table("data/test/feats.scp", f"ark,scp:{out}.ark,{out}.scp")
    per_utt = kaldiio.load_scp(f"{out}.scp")
    assert n == 30 and list(per_utt)[0] == "jackson_4_0"
    assert per_utt["jackson_4_0"][0, 13] == feats.shape[0]


def test_accumulate_matches_numpy_and_knf():
    rng = np.random.default_rng(0)
    a, b = rng.normal(3, 2, (50, 5)).astype(np.float32), rng.normal(size=(7, 5)).astype(np.float32)
    stats = accumulate_cmvn_stats(b, accumulate_cmvn_stats(a))
    both = np.concatenate([a, b]).astype(np.float64)
    np.testing.assert_allclose(stats[0, :5], both.sum(0), rtol=1e-12)
    np.testing.assert_allclose(stats[1, :5], (both ** 2).sum(0), rtol=1e-6)
    assert stats[0, 5] == 57 and stats[1, 5] == 0
    # knf squares in double, Kaldi (and we) in float: equal to float rounding
    np.testing.assert_allclose(stats, knf.compute_cmvn_stats(np.concatenate([a, b])), rtol=1e-7)
    with pytest.raises(FormatError, match="do not fit"):
        accumulate_cmvn_stats(np.zeros((3, 4)), stats)


def test_apply_cmvn_against_numpy_reference():
    rng = np.random.default_rng(1)
    feats = rng.normal(5, 3, (40, 6)).astype(np.float32)
    spk = rng.normal(4, 2, (200, 6))
    stats = accumulate_cmvn_stats(spk)
    mean = spk.mean(0)
    std = spk.std(0)
    np.testing.assert_allclose(apply_cmvn(feats, stats), feats - mean, atol=1e-4)
    np.testing.assert_allclose(apply_cmvn(feats, stats, norm_vars=True), (feats - mean) / std,
                               atol=1e-4)
    assert apply_cmvn(feats, stats).dtype == np.float32
    np.testing.assert_array_equal(apply_cmvn(feats, stats, norm_means=False), feats)
    with pytest.raises(ValueError):
        apply_cmvn(feats, stats, norm_means=False, norm_vars=True)
    with pytest.raises(FormatError, match="count"):
        apply_cmvn(feats, np.zeros((2, 7)))
    # a constant dimension: variance floored, not a division by zero
    const = np.ones((10, 6))
    out = apply_cmvn(np.ones((2, 6), np.float32), accumulate_cmvn_stats(const), norm_vars=True)
    assert np.isfinite(out).all()
    # fake dims keep their values (mean 0, variance 1)
    faked = fake_dims(stats, [2, 3])
    out = apply_cmvn(feats, faked, norm_vars=True)
    np.testing.assert_allclose(out[:, 2:4], feats[:, 2:4], atol=1e-5)
    np.testing.assert_allclose(out[:, 0], (feats[:, 0] - mean[0]) / std[0], atol=1e-4)


def test_add_deltas_hand_computed():
    # one dimension, frames 0, 1, 4, 9, 16 (x = t^2); window 2: d_t = sum_j j x_{t+j} / 10
    x = np.array([[0.0], [1.0], [4.0], [9.0], [16.0]], np.float32)
    out = add_deltas(x)
    assert out.shape == (5, 3)
    np.testing.assert_array_equal(out[:, 0], x[:, 0])
    # t=2: (-2*0 - 1*1 + 1*9 + 2*16)/10 = 4.0 ; t=0 (edges replicate): (-2*0 -1*0 +1*1 +2*4)/10
    np.testing.assert_allclose(out[2, 1], 4.0)
    np.testing.assert_allclose(out[0, 1], 0.9)
    np.testing.assert_allclose(out[4, 1], (-2 * 4 - 9 + 16 + 2 * 16) / 10.0)
    # second order of a long quadratic: the Kaldi scales give 2nd difference / 10 * (sum j^2)/10
    t = np.arange(30, dtype=np.float32)[:, None]
    acc = add_deltas(t ** 2)[10:20, 2]
    np.testing.assert_allclose(acc, np.full(10, 2.0), rtol=1e-5)
    np.testing.assert_allclose(add_deltas(t)[10:20, 1], np.ones(10), rtol=1e-6)


def test_add_deltas_and_splice_match_knf():
    rng = np.random.default_rng(2)
    feats = rng.normal(size=(23, 13)).astype(np.float32)
    np.testing.assert_allclose(add_deltas(feats), knf.compute_deltas(knf.DeltaOptions(), feats),
                               atol=1e-5)
    so = knf.SpliceOptions()
    so.left_context, so.right_context = 3, 2
    np.testing.assert_array_equal(splice_frames(feats, 3, 2), knf.splice_frames(feats, so))
    assert splice_frames(feats, 5).shape == (23, 13 * 11)
    assert add_deltas(np.zeros((0, 13), np.float32)).shape == (0, 39)


def test_compute_cmvn_stats_program(kaldi_digits, tmp_path, repo_dir, env_with_path):
    import subprocess
    import sys

    prog = [sys.executable, str(repo_dir / "pybin" / "compute_cmvn_stats.py")]
    out = tmp_path / "cmvn_test"
    r = subprocess.run(prog + ["--spk2utt=ark:data/test/spk2utt", "scp:data/test/feats.scp",
                               f"ark,scp:{out}.ark,{out}.scp"], cwd=kaldi_digits,
                       env=env_with_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [line.split()[0] for line in open(f"{out}.scp")] == ["jackson_4", "nicolas_2",
                                                               "theo_1"]
    r = subprocess.run(prog + ["--spk2utt=ark:data/test/spk2utt", "scp:data/test/nope.scp",
                               f"ark,scp:{out}2.ark,{out}2.scp"], cwd=kaldi_digits,
                       env=env_with_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "nope.scp" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists(f"{out}2.scp")


def test_cmvn_opts(kaldi_digits, tmp_path):
    from hybridasr.errors import ConfigError
    from hybridasr.features.cmvn import parse_cmvn_opts, read_cmvn_opts

    # Kaldi's own (empty) cmvn_opts: means only
    assert read_cmvn_opts(str(kaldi_digits / "exp/mono_ali/cmvn_opts")) == {
        "norm_means": True, "norm_vars": False}
    assert parse_cmvn_opts("--norm-vars=true") == {"norm_means": True, "norm_vars": True}
    assert parse_cmvn_opts("--norm-means=false --norm-vars=false")["norm_means"] is False
    assert parse_cmvn_opts("--norm-vars true")["norm_vars"] is True
    for bad in ("--reverse=true", "--norm-vars=maybe", "--norm-means=false --norm-vars=true"):
        with pytest.raises(ConfigError, match="cmvn_opts"):
            parse_cmvn_opts(bad)
    with pytest.raises(ConfigError, match="nope"):
        read_cmvn_opts(str(tmp_path / "nope"))
