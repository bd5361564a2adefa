"""Dataset, feature transform and loader on the real Kaldi digits experiment."""
from __future__ import annotations

import gzip
import json

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr.data.config import DataConfig
from hybridasr.data.dataset import UtteranceDataset
from hybridasr.data.lengths import read_lengths, read_scp_lengths
from hybridasr.data.loader import make_batch_iterator, num_batches
from hybridasr.data.transform import IGNORE_INDEX, FeatureTransform
from hybridasr.errors import FormatError
from hybridasr.features.cmvn import apply_cmvn
from hybridasr.features.context import add_deltas, splice_frames
from hybridasr.kaldi.table import ArkScpWriter


def absolute_scp(src, dst, base):
    with open(src) as f, open(dst, "w") as g:
        for line in f:
            key, rx = line.split(None, 1)
            g.write(f"{key} {base}/{rx.strip()}\n")
    return str(dst)


@pytest.fixture
def digits(kaldi_digits, tmp_path):
    """Absolute-path copies of train feats.scp/cmvn.scp, and targets.scp made from the mono
    alignment (transition ids stand in for pdf ids)."""
    d = kaldi_digits / "data" / "train"
    feats = absolute_scp(d / "feats.scp", tmp_path / "feats.scp", kaldi_digits)
    cmvn = absolute_scp(d / "cmvn.scp", tmp_path / "cmvn.scp", kaldi_digits)
    ali = {}
    with gzip.open(kaldi_digits / "exp" / "mono_ali" / "ali.1.gz", "rt") as f:
        for line in f:
            key, *ids = line.split()
            ali[key] = np.array([int(x) for x in ids], np.int32)
    with ArkScpWriter(str(tmp_path / "targets.ark"), str(tmp_path / "targets.scp")) as w:
        for key in sorted(ali):
            w.write(key, ali[key])
    return dict(feats_scp=feats, cmvn_scp=cmvn, utt2spk=str(d / "utt2spk"),
                targets_scp=str(tmp_path / "targets.scp"), ali=ali, tmp=tmp_path)


def test_lengths_from_headers_match_the_matrices(digits, tmp_path):
    lengths = read_scp_lengths(digits["feats_scp"])
    mats = kaldiio.load_scp(digits["feats_scp"])
    assert len(lengths) == 120
    assert all(mats[k].shape[0] == n for k, n in lengths.items())
    assert all(len(digits["ali"][k]) == n for k, n in lengths.items())
    u2n = tmp_path / "utt2num_frames"
    u2n.write_text("".join(f"{k} {n}\n" for k, n in lengths.items()))
    assert read_lengths(digits["feats_scp"], str(u2n)) == lengths
    u2n.write_text("jackson_0_0 3\n")
    with pytest.raises(FormatError, match="no entry for utterance"):
        read_lengths(digits["feats_scp"], str(u2n))


def test_dataset_applies_speaker_cmvn_and_reads_targets(digits):
    ds = UtteranceDataset(digits["feats_scp"], digits["targets_scp"], digits["utt2spk"],
                          digits["cmvn_scp"])
    assert len(ds) == 120 and ds.lengths["jackson_0_0"] == len(digits["ali"]["jackson_0_0"])
    feats, targets = ds["jackson_0_0"]
    raw = kaldiio.load_scp(digits["feats_scp"])["jackson_0_0"]
    stats = kaldiio.load_scp(digits["cmvn_scp"])["jackson_0"]
    assert feats.dtype == np.float32 and targets.dtype == np.int64
    np.testing.assert_allclose(feats, apply_cmvn(raw, stats), atol=1e-5)
    assert (targets == digits["ali"]["jackson_0_0"]).all()
    # per speaker, CMVN'd features have mean ~0
    spk = [u for u in ds.keys if u.startswith("jackson_0_")]
    allf = np.concatenate([ds[u][0] for u in spk])
    assert np.abs(allf.mean(0)).max() < 1e-3


def test_transform_matches_kaldi_pipeline_and_windows_equal_slices(digits):
    t = FeatureTransform.from_dict(DataConfig(delta_order=2, splice=3, stack_frames=2,
                                              subsample=3, norm_vars=True).transform_dict())
    raw = kaldiio.load_scp(digits["feats_scp"])["nicolas_3_4"]
    stats = kaldiio.load_scp(digits["cmvn_scp"])["nicolas_3"]
    full = t(raw, stats)
    ref = splice_frames(add_deltas(apply_cmvn(raw, stats, norm_vars=True), 2), 3)
    T = len(raw)
    idx = np.minimum(np.arange(0, T, 3)[:, None] + np.arange(2), T - 1)
    np.testing.assert_allclose(full, ref[idx].reshape(len(idx), -1), atol=1e-5)
    assert full.shape == (t.output_length(T), t.output_dim(13)) == (-(-T // 3), 13 * 3 * 7 * 2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = int(rng.integers(0, len(full)))
        b = int(rng.integers(a, len(full) + 1))
        np.testing.assert_allclose(t(raw, stats, a, b), full[a:b], atol=1e-6)
    t2 = FeatureTransform.from_dict(json.loads(json.dumps(t.to_dict())))
    np.testing.assert_array_equal(t2(raw, stats), full)


def test_targets_subsample_and_label_delay():
    t = FeatureTransform(subsample=2, label_delay=2)
    y = t.targets(np.arange(10))
    assert y.tolist() == [IGNORE_INDEX, IGNORE_INDEX, 0, 2, 4]
    assert t.targets(np.arange(10), 1, 4).tolist() == [IGNORE_INDEX, 0, 2]
    out = np.arange(5)[:, None]
    assert t.undo_label_delay(out)[:, 0].tolist() == [2, 3, 4, 4, 4]


def test_from_data_dir_relative_paths(kaldi_digits, monkeypatch):
    monkeypatch.chdir(kaldi_digits)
    ds = UtteranceDataset.from_data_dir("data/test")
    assert len(ds) == 30 and ds.cmvn is not None
    x, y = ds[ds.keys[0]]
    assert y is None and x.shape == (ds.lengths[ds.keys[0]], 13)
    with pytest.raises(FormatError, match="no feats.scp"):
        UtteranceDataset.from_data_dir("data/lang")


def test_global_norm_fit_and_cache(digits):
    t = FeatureTransform(global_norm=True, delta_order=1)
    ds = UtteranceDataset(digits["feats_scp"], utt2spk=digits["utt2spk"],
                          cmvn_scp=digits["cmvn_scp"], transform=t)
    path = str(digits["tmp"] / "global_norm.json")
    ds.fit_transform(path)
    allf = np.concatenate([ds[u][0] for u in ds.keys])
    np.testing.assert_allclose(allf.mean(0), 0, atol=1e-3)
    np.testing.assert_allclose(allf.std(0), 1, atol=1e-3)
    t3 = FeatureTransform(global_norm=True, delta_order=1)
    UtteranceDataset(digits["feats_scp"], transform=t3).fit_transform(path)  # read back
    assert t3.global_mean == t.global_mean
    assert FeatureTransform.from_dict(t.to_dict()).global_std == t.global_std


def test_missing_and_mismatched_targets(digits, tmp_path):
    ali = digits["ali"]
    with ArkScpWriter(str(tmp_path / "t2.ark"), str(tmp_path / "t2.scp")) as w:
        w.write("jackson_0_0", ali["jackson_0_0"][:-1])
        w.write("jackson_0_1", ali["jackson_0_1"])
    ds = UtteranceDataset(digits["feats_scp"], str(tmp_path / "t2.scp"))
    assert ds.keys == ["jackson_0_0", "jackson_0_1"]
    with pytest.raises(FormatError, match="jackson_0_0"):
        ds["jackson_0_0"]


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_batches_cover_every_utterance(digits, workers):
    c = DataConfig(seq_ordering="laplace:4", max_frames=600, splice=2, num_workers=workers)
    ds = UtteranceDataset(digits["feats_scp"], digits["targets_scp"], digits["utt2spk"],
                          digits["cmvn_scp"], FeatureTransform.from_config(c))
    it = make_batch_iterator(ds, c, epoch=3)
    batches = list(it)
    assert len(batches) == len(it) == num_batches(ds, c, 3)
    keys = [k for b in batches for k in b.keys]
    assert sorted(keys) == sorted(ds.keys)
    for b in batches:
        B, T, D = b.feats.shape
        assert D == 65 and b.num_padded_frames == B * T <= 600
        assert b.targets.shape == (B, T) and b.targets.dtype == torch.int64
        for i, (k, n) in enumerate(zip(b.keys, b.lengths.tolist())):
            assert n == ds.lengths[k]
            assert (b.targets[i, n:] == IGNORE_INDEX).all() and (b.feats[i, n:] == 0).all()
            assert (b.targets[i, :n].numpy() == digits["ali"][k]).all()
    k0 = batches[0].keys[0]
    np.testing.assert_array_equal(batches[0].feats[0, :ds.lengths[k0]].numpy(), ds[k0][0])
    s = it.stats()
    assert s["num_batches"] == len(batches) and s["padding_ratio"] >= 1.0
    assert s["padded_frames"] == sum(b.num_padded_frames for b in batches)
    assert s["real_frames"] == sum(b.num_real_frames for b in batches)
    assert [b.keys for b in make_batch_iterator(ds, c, epoch=3)] == [b.keys for b in batches]


def test_loader_tbptt_and_frame_shuffle(digits):
    c = DataConfig(tbptt="4:16", max_frames=64, num_workers=0)
    ds = UtteranceDataset(digits["feats_scp"], digits["targets_scp"], digits["utt2spk"],
                          digits["cmvn_scp"])
    full = {}
    for b in make_batch_iterator(ds, c, epoch=0):
        assert b.carry_state and b.reset.dtype == torch.bool and b.feats.shape[0] == 4
        for i, (k, (s, e)) in enumerate(zip(b.keys, b.spans)):
            if k:
                assert bool(b.reset[i]) == (s == 0)
                full.setdefault(k, []).append((s, b.feats[i, :e - s].numpy()))
    assert set(full) == set(ds.keys)
    for k, parts in list(full.items())[:10]:
        np.testing.assert_allclose(np.concatenate([p for _, p in sorted(parts, key=lambda x: x[0])]),
                                   ds[k][0], atol=1e-6)
    c = DataConfig(seq_ordering="frame_shuffle", max_frames=100, randomizer_size=2000,
                   num_workers=0)
    total = 0
    for b in make_batch_iterator(ds, c, epoch=0):
        assert b.feats.shape[1:] == (1, 13) and b.targets.shape == (len(b.keys), 1)
        assert (b.lengths == 1).all() and len(b.keys) <= 100
        k, (s, _) = b.keys[0], b.spans[0]
        np.testing.assert_array_equal(b.feats[0, 0].numpy(), ds[k][0][s])
        assert int(b.targets[0, 0]) == digits["ali"][k][s]
        total += len(b.keys)
    assert total == sum(ds.lengths.values())
