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
from hybridasr.kaldi.io.matrix_lengths import read_lengths, read_scp_lengths
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.data.loader import make_batch_iterator, num_batches
from hybridasr.features.transform import IGNORE_INDEX, FeatureTransform
from hybridasr.errors import ConfigError, FormatError
from hybridasr.features.cmvn import apply_cmvn
from hybridasr.features.context import add_deltas, splice_frames
from hybridasr.kaldi.io.table_writer import ArkScpWriter


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
    # the reference reads with Kaldi's decompression arithmetic, as the dataset does (kaldiio
    # differs by an ulp, which CMVN turns into ~1e-5)
    raw = dict(iter_feature_scp(digits["feats_scp"]))["jackson_0_0"]
    stats = dict(iter_feature_scp(digits["cmvn_scp"]))["jackson_0"]
    np.testing.assert_allclose(raw, kaldiio.load_scp(digits["feats_scp"])["jackson_0_0"],
                               atol=1e-4)
    assert feats.dtype == np.float32 and targets.dtype == np.int64
    np.testing.assert_allclose(feats, apply_cmvn(raw, stats), atol=1e-5)
    assert (targets == digits["ali"]["jackson_0_0"]).all()
    # per speaker, CMVN'd features have mean ~0
    spk = [u for u in ds.keys if u.startswith("jackson_0_")]
    allf = np.concatenate([ds[u][0] for u in spk])
    assert np.abs(allf.mean(0)).max() < 1e-3


def test_transform_matches_kaldi_pipeline_and_windows_equal_slices(digits):
    c = DataConfig.from_dict(dict(delta_order=2, splice=3, stack_frames=2, subsample=3,
                                  norm_vars=True))
    t = FeatureTransform.from_options(c.transform)
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


def test_a_saved_transform_dict_still_loads():
    """A model's ``meta["transform"]`` as train.py has written it since global statistics
    were stored with the model: the nine settings, then the statistics."""
    saved = {"norm_means": True, "norm_vars": False, "global_norm": True, "delta_order": 1,
             "delta_window": 2, "splice": 1, "stack_frames": 1, "subsample": 1,
             "label_delay": 2, "global_mean": [0.5] * 26, "global_std": [2.0] * 26,
             "var_floor": 1e-10}
    t = FeatureTransform.from_dict(saved)
    assert t.to_dict() == saved and list(t.to_dict()) == list(saved)
    assert (t.label_delay, t.output_dim(13), t.output_length(10)) == (2, 78, 12)
    with pytest.raises(ConfigError, match="--norm-vars=true needs --norm-means=true"):
        FeatureTransform.from_dict(dict(saved, norm_means=False, norm_vars=True))


def test_targets_subsample_and_label_delay():
    t = FeatureTransform(subsample=2, label_delay=2, norm_means=False)
    y = t.targets(np.arange(10))
    assert y.tolist() == [IGNORE_INDEX, IGNORE_INDEX, 0, 2, 4, 6, 8]  # every label, 2 late
    assert t.targets(np.arange(10), 1, 4).tolist() == [IGNORE_INDEX, 0, 2]
    # the input gets delay x subsample copies of its last frame (Kaldi's time shift): two more
    # outputs, the others as without a delay
    feats = np.arange(10, dtype=np.float32)[:, None]
    x = t(feats)
    assert x.shape == (t.output_length(10), 1) == (7, 1)
    assert x[:, 0].tolist() == [0, 2, 4, 6, 8, 9, 9]
    np.testing.assert_array_equal(x[:5], FeatureTransform(subsample=2, norm_means=False)(feats))
    np.testing.assert_array_equal(t(feats, None, 4, 7), x[4:])
    assert t.output_length(0) == 0 and t(feats[:0]).shape == (0, 1)
    # decode time: the first `delay` outputs (trained on no label) are dropped
    out = np.arange(7)[:, None]
    assert t.undo_label_delay(out)[:, 0].tolist() == [2, 3, 4, 5, 6]


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


def test_global_norm_from_a_seeded_subset(digits):
    """--global-norm-utts: the statistics of a random subset drawn with the seed (nnet1's
    10k), the same for the same seed, equal to the subset's own mean and deviation."""
    def fitted(n, seed):
        t = FeatureTransform(global_norm=True)
        ds = UtteranceDataset(digits["feats_scp"], utt2spk=digits["utt2spk"],
                              cmvn_scp=digits["cmvn_scp"], transform=t)
        ds.fit_transform(None, max_utts=n, seed=seed)
        return ds, t

    ds, t = fitted(30, 5)
    assert fitted(30, 5)[1].global_mean == t.global_mean
    assert fitted(30, 6)[1].global_mean != t.global_mean
    assert fitted(0, 5)[1].global_mean == fitted(None, 5)[1].global_mean  # 0: all
    used = list(ds.raw_pairs(30, 5))
    assert len(used) == 30
    plain = FeatureTransform()  # the same CMVN, no global statistics
    x = np.concatenate([plain(f, c) for f, c in used]).astype(np.float64)
    np.testing.assert_allclose(t.global_mean, x.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t.global_std, x.std(0), rtol=1e-4)
    assert len(list(ds.raw_pairs(500, 5))) == len(ds)  # more than there are: all


def test_missing_and_mismatched_targets(digits, tmp_path):
    """Targets without target_lengths (an older import dir, other targets): trimmed with the
    features to the shorter when read if within the tolerance, a clear error otherwise."""
    ali = digits["ali"]
    with ArkScpWriter(str(tmp_path / "t2.ark"), str(tmp_path / "t2.scp")) as w:
        w.write("jackson_0_0", ali["jackson_0_0"][:-1])
        w.write("jackson_0_1", ali["jackson_0_1"][:-5])
        w.write("jackson_0_2", ali["jackson_0_2"])
    ds = UtteranceDataset(digits["feats_scp"], str(tmp_path / "t2.scp"))
    assert ds.keys == ["jackson_0_0", "jackson_0_1", "jackson_0_2"]
    n = len(ali["jackson_0_0"])
    assert ds.lengths["jackson_0_0"] == n  # not known before reading
    x, y = ds["jackson_0_0"]
    assert len(x) == len(y) == n - 1 and (y == ali["jackson_0_0"][:-1]).all()
    n1 = len(ali["jackson_0_1"])
    with pytest.raises(FormatError, match=rf"jackson_0_1: {n1 - 5} targets .* but {n1} feature "
                                          r"frames \(not within the length tolerance of 5"):
        ds["jackson_0_1"]
    assert len(ds["jackson_0_2"][0]) == len(ali["jackson_0_2"])


# ------------------------------------- Kaldi nnet1's length tolerance: trim both to the shorter
@pytest.fixture
def short_import(kaldi_digits, tmp_path):
    """kaldi_digits' mono alignments imported against train features where three utterances
    disagree in length: two alignments cut by 3 and 1 frames (targets shorter), and one
    feature matrix cut by 2 frames with a Kaldi row range (targets longer)."""
    from hybridasr.align.importer import import_alignments
    from tests.test_align import _write_ali_dir

    src = kaldi_digits / "data" / "train"
    alis = {}
    with gzip.open(kaldi_digits / "exp" / "mono_ali" / "ali.1.gz", "rt") as f:
        for line in f:
            key, *ids = line.split()
            alis[key] = np.array([int(x) for x in ids], np.int32)
    keys = sorted(alis)
    cut_ali = {keys[0]: 3, keys[1]: 1}
    cut_feats = {keys[2]: 2}
    short = {k: v[:len(v) - cut_ali.get(k, 0)] for k, v in alis.items()}
    ali_dir = _write_ali_dir(tmp_path / "ali", short, kaldi_digits / "exp/mono_ali/final.mdl")
    data = tmp_path / "data"
    data.mkdir()
    with open(src / "feats.scp") as f, open(data / "feats.scp", "w") as g:
        for line in f:
            key, rx = line.split()
            if key in cut_feats:  # rows 0 .. n-1-cut (Kaldi's inclusive row range)
                rx += f"[0:{len(alis[key]) - 1 - cut_feats[key]}]"
            g.write(f"{key} {kaldi_digits}/{rx}\n")
    absolute_scp(src / "cmvn.scp", data / "cmvn.scp", kaldi_digits)
    for name in ("utt2spk", "spk2utt"):
        (data / name).write_text((src / name).read_text())
    out = tmp_path / "imported"
    report = import_alignments(str(ali_dir), str(data), str(out))
    pdfs = {k: np.asarray(v) for k, v in kaldiio.load_scp(str(out / "targets.scp")).items()}
    usable = {k: len(v) - cut_ali.get(k, 0) - cut_feats.get(k, 0) for k, v in alis.items()}
    return dict(data=data, out=out, report=report, keys=keys, usable=usable, alis=alis,
                pdfs=pdfs, feats_scp=str(src / "feats.scp"))


def test_shorter_targets_trim_the_features(short_import, kaldi_digits, monkeypatch):
    s = short_import
    k0, k1, k2 = s["keys"][:3]
    r = s["report"]
    assert (r.shorter_within_tolerance, r.trimmed_within_tolerance, r.exact_length,
            r.utterances_imported) == (2, 1, 117, 120)
    assert {k: len(v) for k, v in s["pdfs"].items()} == s["usable"]  # no label made up
    ds = UtteranceDataset.from_data_dir(str(s["data"]), str(s["out"] / "targets.scp"),
                                        target_lengths=str(s["out"] / "target_lengths"))
    assert ds.lengths == s["usable"] and ds.lengths[k0] == len(s["alis"][k0]) - 3
    assert ds.raw_lengths[k0] == len(s["alis"][k0])  # the features are longer
    monkeypatch.chdir(kaldi_digits)
    full = dict(iter_feature_scp("data/train/feats.scp"))  # Kaldi's arithmetic, as the dataset
    cmvn = dict(iter_feature_scp("data/train/cmvn.scp"))
    utt2spk = dict(l.split() for l in open("data/train/utt2spk"))
    for k in (k0, k1, k2, s["keys"][3]):
        n = s["usable"][k]
        x, y = ds.load(k)
        assert len(x) == len(y) == n
        # the first n frames of the utterance, with its speaker's CMVN; its first n labels
        np.testing.assert_allclose(x, apply_cmvn(full[k], cmvn[utt2spk[k]])[:n], atol=1e-5)
        np.testing.assert_array_equal(y, s["pdfs"][k])
    # batches are planned with, and carry, the trimmed lengths; every real frame has a label
    c = DataConfig(seq_ordering="sorted", max_frames=800, num_workers=0)
    seen = 0
    for b in make_batch_iterator(ds, c, epoch=0):
        for i, (k, n) in enumerate(zip(b.keys, b.lengths.tolist())):
            assert n == s["usable"][k] and (b.targets[i, :n] >= 0).all()
            assert (b.targets[i, n:] == IGNORE_INDEX).all()
            seen += 1
    assert seen == 120


def test_target_lengths_absent_or_stale(short_import, tmp_path):
    s = short_import
    k0 = s["keys"][0]
    scp = str(s["out"] / "targets.scp")
    # an import dir without target_lengths: lengths are the features'; reading trims both
    ds = UtteranceDataset.from_data_dir(str(s["data"]), scp)
    assert ds.lengths[k0] == len(s["alis"][k0])
    x, y = ds.load(k0)
    assert len(x) == len(y) == s["usable"][k0]
    # target_lengths longer than the features: the features changed since the import
    stale = tmp_path / "stale_lengths"
    stale.write_text((s["out"] / "target_lengths").read_text().replace(
        f"{k0} {s['usable'][k0]}\n", f"{k0} {len(s['alis'][k0]) + 1}\n"))
    with pytest.raises(FormatError, match=f"utterance {k0}: .*import the alignments again"):
        UtteranceDataset.from_data_dir(str(s["data"]), scp, target_lengths=str(stale))
    # target_lengths disagreeing with targets.scp: caught when the utterance is read
    stale.write_text((s["out"] / "target_lengths").read_text().replace(
        f"{k0} {s['usable'][k0]}\n", f"{k0} {s['usable'][k0] - 1}\n"))
    ds = UtteranceDataset.from_data_dir(str(s["data"]), scp, target_lengths=str(stale))
    with pytest.raises(FormatError, match=f"utterance {k0}: .* targets in .* but .* in "):
        ds.load(k0)


def test_trainer_datasets_use_the_imports_target_lengths(short_import, tmp_path):
    from hybridasr.models.factory import normalize_config
    from hybridasr.train.options import TrainConfig
    from hybridasr.train.trainer import Trainer, TrainInputs

    s = short_import
    inp = TrainInputs(str(s["data"]), str(s["data"]), str(s["out"]), str(s["out"]),
                      str(tmp_path / "exp"))
    t = Trainer(inp, DataConfig(num_workers=0), normalize_config({"model": "mlp"}),
                TrainConfig(), schedule=None)
    assert t.tr.lengths == t.cv.lengths == s["usable"]


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_batches_cover_every_utterance(digits, workers):
    c = DataConfig.from_dict(dict(seq_ordering="laplace:4", max_frames=600, splice=2,
                                  num_workers=workers))
    ds = UtteranceDataset(digits["feats_scp"], digits["targets_scp"], digits["utt2spk"],
                          digits["cmvn_scp"], FeatureTransform.from_options(c.transform))
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
    c = DataConfig(seq_ordering="tbptt:4:16", max_frames=64, num_workers=0)
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


def test_targets_are_checked_against_num_classes_as_they_are_read(digits):
    """No pass over all targets at start-up: each vector is checked when read, and a target
    outside the network's outputs names its utterance."""
    top = max(int(v.max()) for v in digits["ali"].values())
    bad = sorted(k for k, v in digits["ali"].items() if int(v.max()) == top)
    good = next(k for k in sorted(digits["ali"]) if k not in bad)
    ds = UtteranceDataset(digits["feats_scp"], digits["targets_scp"], num_classes=top)
    assert len(ds) == 120  # built without reading a target
    x, y = ds.load(good)
    assert int(y.max()) < top
    with pytest.raises(FormatError, match=rf"utterance {bad[0]} has target {top} .*"
                                          rf"outside the network's {top} outputs"):
        ds.load(bad[0])
    assert UtteranceDataset(digits["feats_scp"], digits["targets_scp"],
                            num_classes=top + 1).load(bad[0])[1].max() == top
