"""fMLLR features of a SAT Kaldi GMM (steps/nnet/make_fmllr_feats.sh, hybridasr/features/fmllr.py)
on kaldi_hindi_sat's real files: equal to Kaldi's pipeline computed by hand with numpy."""
from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import kaldiio
import numpy as np
import pytest

from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.features.context import add_deltas
from hybridasr.features.fmllr import (FmllrPipeline, apply_transform, choose_transform_dir,
                                      parse_delta_opts, parse_splice_opts)
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.kaldi.io.table import read_map


@pytest.fixture(scope="module")
def hindi(shared_dir) -> Path:
    return shared_dir / "data" / "kaldi_hindi_sat"


def data_copy(hindi: Path, name: str, dst: Path) -> Path:
    """data/<name> with absolute feats.scp/cmvn.scp paths and no split dirs."""
    dst.mkdir(parents=True)
    for f in (hindi / "data" / name).iterdir():
        if f.is_file():
            text = f.read_text()
            if f.name in ("feats.scp", "cmvn.scp"):
                text = text.replace(" mfcc/", f" {hindi}/mfcc/")
            (dst / f.name).write_text(text)
    return dst


def _by_hand(hindi: Path, data: Path, gmm: Path, trans_files, utt: str) -> np.ndarray:
    """Kaldi's apply-cmvn | splice-feats | transform-feats final.mat | transform-feats trans,
    written out with numpy for one utterance."""
    feats = dict(iter_feature_scp(str(data / "feats.scp")))[utt].astype(np.float64)
    spk = read_map(str(data / "utt2spk"))[utt]
    stats = kaldiio.load_mat(read_map(str(data / "cmvn.scp"))[spk])
    dim = feats.shape[1]
    x = feats - stats[0, :dim] / stats[0, dim]          # cmvn_opts empty: means only
    assert (gmm / "splice_opts").read_text().split() == ["--left-context=3", "--right-context=3"]
    T = x.shape[0]
    x = np.concatenate([x[np.clip(np.arange(T) + k, 0, T - 1)] for k in range(-3, 4)], axis=1)
    x = x @ kaldiio.load_mat(str(gmm / "final.mat")).astype(np.float64).T
    trans = {}
    for f in trans_files:
        trans.update(kaldiio.load_ark(str(f)))
    W = trans[spk].astype(np.float64)
    return x @ W[:, :-1].T + W[:, -1]


def _run(cmd, env, cwd):
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.mark.parametrize("name,transform_dir", [("test", "exp/tri3b/decode"),
                                                ("train", "exp/tri3b_ali")])
def test_step_equals_transform_feats_by_hand(hindi, tmp_path, env_with_path, repo_dir, name,
                                             transform_dir):
    src = data_copy(hindi, name, tmp_path / "src")
    gmm = hindi / "exp" / ("tri3b" if name == "test" else "tri3b_ali")
    tdir = hindi / transform_dir
    _run([str(repo_dir / "steps/nnet/make_fmllr_feats.sh"), "--nj", "2", "--transform-dir",
          str(tdir), "out", "src", str(gmm), "log", "fea"], env_with_path, tmp_path)
    out = dict(iter_feature_scp(str(tmp_path / "out" / "feats.scp")))
    assert sorted(out) == sorted(read_map(str(src / "utt2spk")))
    assert not (tmp_path / "out" / "cmvn.scp").exists()  # as Kaldi's: a new dir, no CMVN
    u2s = read_map(str(src / "utt2spk"))
    first_of = {}
    for utt, spk in u2s.items():
        first_of.setdefault(spk, utt)
    for utt in list(first_of.values())[:3]:
        want = _by_hand(hindi, src, gmm, sorted(tdir.glob("trans.*")), utt)
        assert out[utt].shape == want.shape == (want.shape[0], 40)
        np.testing.assert_allclose(out[utt], want, atol=1e-4, rtol=0)
        # the transform matters: features of the same utterance without it differ
        si = FmllrPipeline.from_gmm_dir(str(gmm))
        assert np.abs(out[utt] - si(dict(iter_feature_scp(str(src / "feats.scp")))[utt],
                                    kaldiio.load_mat(read_map(str(src / "cmvn.scp"))[u2s[utt]]),
                                    u2s[utt])).max() > 0.1


def test_speaker_without_transform_is_skipped_and_counted(hindi, tmp_path, caplog, monkeypatch):
    """transform-feats: no transform for an utterance's speaker: a warning, no output for it."""
    import importlib.util

    src = data_copy(hindi, "test", tmp_path / "src")
    only = dict(kaldiio.load_ark(str(hindi / "exp/tri3b/decode/trans.1")))
    assert list(only) == ["pramod"]
    tdir = tmp_path / "trans_dir"
    tdir.mkdir()
    kaldiio.save_ark(str(tdir / "trans.1"), only)
    spec = importlib.util.spec_from_file_location("mff", Path(__file__).parents[1] /
                                                  "pybin/make_fmllr_feats.py")
    mff = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mff)
    with caplog.at_level(logging.WARNING, logger="hybridasr.features"):
        assert mff.main([f"--transform-dir={tdir}", str(hindi / "exp/tri3b"),
                         str(src / "utt2spk"), str(src / "cmvn.scp"), str(src / "feats.scp"),
                         f"ark,scp:{tmp_path}/o.ark,{tmp_path}/o.scp"]) == 0
    written = list(read_map(str(tmp_path / "o.scp")))
    assert written and all(u.startswith("pramod_") for u in written) and len(written) == 10
    skipped = [r for r in caplog.records if "no fMLLR transform for speaker srihari" in r.message]
    assert len(skipped) == 10
    # no speaker covered at all: an error, not an empty table
    kaldiio.save_ark(str(tdir / "trans.1"), {"nobody": only["pramod"]})
    with pytest.raises(HybridAsrError, match="no fMLLR features written"):
        mff.main([f"--transform-dir={tdir}", str(hindi / "exp/tri3b"), str(src / "utt2spk"),
                  str(src / "cmvn.scp"), str(src / "feats.scp"), f"ark:{tmp_path}/o2.ark"])


def test_test_set_transform_dir_choice_and_fallback(hindi, tmp_path):
    """The decode dir whose trans.* cover the test speakers is chosen; dirs without (decode.si,
    or one speaker short) are passed over with a note naming why; none: None and the notes."""
    spk = list(read_map(str(hindi / "data/test/spk2utt")))
    chosen, notes = choose_transform_dir(spk, [str(hindi / "exp/tri3b/decode.si"),
                                               str(hindi / "exp/tri3b/decode")])
    assert chosen == str(hindi / "exp/tri3b/decode")
    assert len(notes) == 1 and "decode.si: no trans.*" in notes[0]
    half = tmp_path / "decode_half"
    half.mkdir()
    shutil.copy(hindi / "exp/tri3b/decode/trans.1", half / "trans.1")  # pramod only
    chosen, notes = choose_transform_dir(spk, [str(half), str(hindi / "exp/tri3b/decode.si")])
    assert chosen is None
    assert "no transform for 1 of 2 speakers (e.g. srihari)" in notes[0]


def test_without_transforms_the_lda_mllt_features(hindi, tmp_path, env_with_path, repo_dir):
    """make_fmllr_feats.sh without --transform-dir: the speaker-independent LDA+MLLT features
    (what estimate_fmllr.py's first pass reads where a test set has no transforms)."""
    src = data_copy(hindi, "test", tmp_path / "src")
    _run([str(repo_dir / "steps/nnet/make_fmllr_feats.sh"), "--nj", "1", "out", "src",
          str(hindi / "exp/tri3b"), "log", "fea"], env_with_path, tmp_path)
    out = dict(iter_feature_scp(str(tmp_path / "out" / "feats.scp")))
    utt = "pramod_2_3_0"
    identity = tmp_path / "id"
    identity.mkdir()
    kaldiio.save_ark(str(identity / "trans.1"),
                     {s: np.hstack([np.eye(40), np.zeros((40, 1))]).astype(np.float32)
                      for s in ("pramod", "srihari")})
    want = _by_hand(hindi, src, hindi / "exp/tri3b", [identity / "trans.1"], utt)
    np.testing.assert_allclose(out[utt], want, atol=1e-4, rtol=0)


def test_transform_feats_shapes_and_options():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    A = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(apply_transform(x, A), x @ A.T)
    Ab = np.hstack([A, [[1.0], [-2.0]]]).astype(np.float32)
    np.testing.assert_allclose(apply_transform(x, Ab), x @ A.T + [1.0, -2.0])
    with pytest.raises(Exception, match="features of dimension 3 need 3 .* or 4"):
        apply_transform(x, np.ones((2, 5), np.float32), "final.mat")
    assert parse_splice_opts("--left-context=3 --right-context=3") == (3, 3)
    assert parse_splice_opts("") == (4, 4)  # splice-feats' defaults
    assert parse_splice_opts("--left-context 2") == (2, 4)
    with pytest.raises(ConfigError, match="splice_opts: unsupported"):
        parse_splice_opts("--frames=3")


def test_delta_opts_of_a_gmm_dir(tmp_path):
    """A delta system's ``delta_opts`` (Kaldi's train_deltas.sh records its --delta-opts there;
    decode.sh and align_si.sh read it): the pipeline's add-deltas takes its order and window;
    without the file, add-deltas' defaults (2, 2)."""
    assert parse_delta_opts("") == (2, 2)
    assert parse_delta_opts("--delta-order=3 --delta-window 1") == (3, 1)
    with pytest.raises(ConfigError, match="delta_opts: unsupported add-deltas option"):
        parse_delta_opts("--order=3")
    with pytest.raises(ConfigError, match="--delta-window must be >= 1"):
        parse_delta_opts("--delta-window=0")
    x = np.random.default_rng(0).normal(size=(50, 13)).astype(np.float32)
    stats = np.zeros((2, 14))
    stats[0, -1] = stats[1, -1] = 1.0  # one frame of zeros: CMVN leaves x as it is
    assert FmllrPipeline.from_gmm_dir(str(tmp_path)).deltas == (2, 2)
    (tmp_path / "delta_opts").write_text("--delta-order=3\n")
    pipe = FmllrPipeline.from_gmm_dir(str(tmp_path))
    y = pipe(x, stats, "spk")
    assert y.shape == (50, 52)
    np.testing.assert_allclose(y, add_deltas(x, 3, 2), atol=1e-5)
