"""SpecAugment-style frequency and time masking in the training loader
(``hybridasr.data.spec_augment``), on kaldi_digits' real features and alignments: the masks
stay within their bounds and zero exactly what they name (after normalisation, in every delta
block); only training batches are masked (not cross-validation, and forward/alignment/decoding
scripts do not take the options); the masks are a function of (seed, epoch, unit, utterance)
(the same whatever the workers and after a resume; a training killed mid-epoch and resumed
ends with the model of an uninterrupted one); the options come from conf files."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from train_helpers import load_pybin, make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_PY = os.path.join(REPO, "pybin", "train.py")
MASKS = dict(freq_masks=2, freq_mask_width=3, time_masks=2, time_mask_width=15,
             time_mask_max_fraction=0.2)


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("specaug") / "digits")


def _config(**kw):
    from hybridasr.data.config import DataConfig
    from hybridasr.data.spec_augment import SpecAugmentOptions
    from hybridasr.features.transform import TransformOptions

    masks = kw.pop("masks", MASKS)
    return DataConfig(transform=TransformOptions(norm_vars=True, delta_order=1),
                      augment=SpecAugmentOptions(**masks), seq_ordering="laplace:2",
                      max_frames=800, num_workers=kw.pop("num_workers", 0), **kw)


def _dataset(digits, config, data=0):
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.features.transform import FeatureTransform

    ali = digits[2]
    return UtteranceDataset.from_data_dir(str(digits[data]), str(ali / "targets.scp"),
                                          FeatureTransform.from_options(config.transform))


def _batches(ds, config, epoch, **kw):
    from hybridasr.data.loader import make_batch_iterator

    return list(make_batch_iterator(ds, config, epoch, **kw))


def test_masks_zero_what_they_name_within_bounds(digits):
    from hybridasr.data.epoch import plan_epoch
    from hybridasr.data.loader import plan_units
    from hybridasr.data.spec_augment import SpecAugment, SpecAugmentOptions

    c = _config()
    plain = _config(masks={})
    ds = _dataset(digits, c)
    channels = ds.feature_dim()
    assert channels == 13 and ds.transform.output_dim(channels) == 26  # MFCC + deltas
    aug, ref = _batches(ds, c, 1), _batches(ds, plain, 1)
    units = plan_units(plan_epoch(ds.lengths, c, 1))
    assert len(units) == len(aug) == len(ref)  # one batch per unit with this strategy
    masking = SpecAugment(SpecAugmentOptions(**MASKS), c.seed, 1, channels)
    freq_widths, time_widths, changed = [], [], 0
    for u, (a, r) in enumerate(zip(aug, ref)):
        assert a.keys == r.keys and torch.equal(a.lengths, r.lengths)
        for i, (key, n) in enumerate(zip(a.keys, a.lengths.tolist())):
            freq, time = masking.masks(n, u, key, a.spans[i][0])
            assert len(freq) == 2 and len(time) == 2
            expected = r.feats[i, :n].numpy().copy()
            blocks = expected.reshape(n, 2, channels)
            for f0, f in freq:
                assert 0 <= f <= 3 and 0 <= f0 and f0 + f <= channels
                blocks[:, :, f0:f0 + f] = 0.0  # static and delta channels alike
                freq_widths.append(f)
            for t0, t in time:
                cap = min(15, int(0.2 * n))  # --time-mask-max-fraction of the sequence
                assert 0 <= t <= cap and 0 <= t0 and t0 + t <= n
                expected[t0:t0 + t] = 0.0
                time_widths.append((t, cap))
            got = a.feats[i, :n].numpy()
            np.testing.assert_array_equal(got, expected)
            assert (a.feats[i, n:] == 0).all()  # padding untouched
            changed += int((got != r.feats[i, :n].numpy()).any())
        assert torch.equal(a.targets, r.targets)  # labels are never masked
    # the widths cover their ranges; most sequences were changed
    assert set(freq_widths) == {0, 1, 2, 3}
    assert min(time_widths)[0] == 0 and any(t == cap > 5 for t, cap in time_widths)
    assert changed > 0.8 * sum(len(b.keys) for b in aug)
    # masked values are the mean (0 after per-speaker mean and variance normalisation)
    stacked = torch.cat([r.feats[i, :n] for r in ref for i, n in enumerate(r.lengths.tolist())])
    assert stacked.mean(0).abs().max() < 0.05


def test_masks_depend_on_seed_epoch_and_unit_only(digits):
    import dataclasses

    c = _config()
    ds = _dataset(digits, c)
    first = _batches(ds, c, 1)
    again = _batches(ds, c, 1)
    workers = _batches(ds, dataclasses.replace(c, num_workers=2), 1)
    for a, b, w in zip(first, again, workers):
        assert torch.equal(a.feats, b.feats) and torch.equal(a.feats, w.feats)
    # resumed at a batch: the rest of the epoch as in an uninterrupted one
    skip = len(first) // 2
    rest = _batches(ds, c, 1, skip_batches=skip)
    assert len(rest) == len(first) - skip
    for a, b in zip(rest, first[skip:]):
        assert a.keys == b.keys and torch.equal(a.feats, b.feats)
    # another epoch (another plan) or another seed: other masks for the same utterance
    other_seed = _batches(ds, dataclasses.replace(c, seed=c.seed + 1), 1)
    by_key = lambda bs: {k: b.feats[i, :n] for b in bs  # noqa: E731
                         for i, (k, n) in enumerate(zip(b.keys, b.lengths.tolist()))}
    one, two, seed2 = by_key(first), by_key(_batches(ds, c, 2)), by_key(other_seed)
    assert sum(not torch.equal(one[k], two[k]) for k in one) > 0.9 * len(one)
    assert sum(not torch.equal(one[k], seed2[k]) for k in one) > 0.9 * len(one)


def test_only_training_batches_are_masked(digits):
    from hybridasr.data.config import DataConfig
    from hybridasr.train.trainer import cv_config

    c = _config()
    ev = cv_config(c)
    assert c.augment.enabled and not ev.augment.enabled
    assert ev == DataConfig.from_dict(dict(c.for_evaluation().to_dict()))
    cv = _dataset(digits, c, data=1)
    plain = _config(masks={})
    for a, b in zip(_batches(cv, ev, 0), _batches(cv, cv_config(plain), 0)):
        assert torch.equal(a.feats, b.feats)
    # forward passes, alignment and decoding do not take the options at all
    for script in ("forward", "align_mapped", "frame_error_rate"):
        flags = load_pybin(script).get_parser()._option_string_actions
        assert "--freq-masks" not in flags and "--time-masks" not in flags, script
    assert "--freq-masks" in load_pybin("train").get_parser()._option_string_actions


def test_options_from_a_conf_file_and_bad_values(tmp_path):
    from hybridasr.data.config import DataConfig
    from hybridasr.data.options import data_config_from_args
    from hybridasr.data.spec_augment import SpecAugmentOptions
    from hybridasr.errors import ConfigError

    p = load_pybin("train").get_parser()
    pos = ["tr", "cv", "ali", "ali", "exp"]
    off = data_config_from_args(p.parse_args(pos))
    assert off.augment == SpecAugmentOptions() and not off.augment.enabled
    conf = tmp_path / "spec_augment.conf"
    conf.write_text("# SpecAugment\n--freq-masks=2\n--freq_mask_width=5\n--time-masks=3\n"
                    "--time-mask-width=12\n--time-mask-max-fraction=0.3\n")
    c = data_config_from_args(p.parse_args([f"--config={conf}", *pos]))
    assert c.augment == SpecAugmentOptions(2, 5, 3, 12, 0.3) and c.augment.enabled
    assert DataConfig.from_dict(c.to_dict()) == c  # what a model and config.json store
    c = data_config_from_args(p.parse_args([f"--batching-config={conf}", "--time-masks=0",
                                            *pos]))
    assert (c.augment.freq_masks, c.augment.time_masks) == (2, 0)  # command line wins
    # the recipe's and the toolkit's conf files read
    for path in ("conf/augment/spec_augment.conf", "egs/fsdd/s5/conf/spec_augment.conf"):
        c = data_config_from_args(p.parse_args([f"--config={os.path.join(REPO, path)}", *pos]))
        assert c.augment.enabled, path
    for argv, flag in ((["--freq-masks=-1"], "--freq-masks"),
                       (["--time-mask-max-fraction=1.5"], "--time-mask-max-fraction")):
        with pytest.raises(ConfigError, match=flag):
            data_config_from_args(p.parse_args([*argv, *pos]))
    with pytest.raises(ConfigError, match="--time-mask-width"):  # e.g. a saved config
        DataConfig.from_dict({"time_mask_width": "wide"})


KILL_AT = 4
KILLER = """
import os, runpy, signal, sys
import hybridasr.train.partial as partial
real = partial.save
def save(exp, epoch, stats, *a):
    path = real(exp, epoch, stats, *a)
    if epoch == 1 and stats.batches == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)
    return path
partial.save = save
sys.argv = [{train_py!r}] + sys.argv[1:]
runpy.run_path({train_py!r}, run_name="__main__")
"""


def test_a_masked_training_killed_mid_epoch_resumes_to_the_same_model(digits, tmp_path,
                                                                     env_with_path):
    from hybridasr.models import load_model

    tr, cv, ali = digits
    cfg = ["--model=blstm", "--num-layers=1", "--hidden-size=16", "--dropout=0.2",
           "--seq-ordering=laplace:2", "--max-frames=500", "--num-workers=0",
           "--lr-schedule=newbob", "--max-iters=1", "--progress-every=0", "--num-threads=1",
           "--freq-masks=2", "--freq-mask-width=3", "--time-masks=2", "--time-mask-width=10"]
    args = lambda exp, *x: [*cfg, *x, str(tr), str(cv), str(ali), str(ali), str(exp)]  # noqa
    train = load_pybin("train")
    assert train.main(args(tmp_path / "ref", "--checkpoint-every=0")) == 0
    killed = tmp_path / "killed"
    p = subprocess.run([sys.executable, "-c", KILLER.format(kill_at=KILL_AT,
                                                            train_py=TRAIN_PY),
                        *args(killed, "--checkpoint-every-batches=2")],
                       env=env_with_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == -9, p.stdout + p.stderr
    assert (killed / "nnet" / "epoch1.partial.json").exists()
    assert train.main(args(killed, "--checkpoint-every-batches=2")) == 0
    a, _ = load_model(str(tmp_path / "ref" / "final.nnet"))
    b, _ = load_model(str(killed / "final.nnet"))
    for (n, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), n
    # and masking changed the training: a model trained without it differs
    plain = [x for x in cfg if "mask" not in x]
    assert train.main([*plain, "--checkpoint-every=0", str(tr), str(cv), str(ali), str(ali),
                       str(tmp_path / "plain")]) == 0
    c, _ = load_model(str(tmp_path / "plain" / "final.nnet"))
    assert any(not torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                      c.state_dict().values()))
