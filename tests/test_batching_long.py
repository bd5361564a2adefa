"""Utterances of any length are trained on. One longer than --max-frames gets a batch
of its own under every strategy and in the cross-validation pass; only an explicit
--max-seq-length (filter) leaves utterances out."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch

from hybridasr.data.batching import BatchPlan
from hybridasr.data.batching.frame_shuffle import FrameBufferPlan
from hybridasr.data.config import DataConfig
from hybridasr.data.dataset import UtteranceDataset
from hybridasr.data.epoch import plan_epoch
from hybridasr.data.loader import make_batch_iterator
from hybridasr.features.transform import FeatureTransform
from hybridasr.train.trainer import cv_config

MAX_FRAMES = 2000


def read_sentence_lengths(n=200, seed=5):
    """Read sentences of 1.8 to 27 s (100 frames/s): a fifth of them over MAX_FRAMES, five of
    2071 frames as in the corpus that first hit --max-frames, and one of 90 s."""
    rng = np.random.default_rng(seed)
    lens = {f"s{i:04d}": int(x) for i, x in enumerate(rng.uniform(180, 2700, n))}
    lens.update({f"long{i}": 2071 for i in range(5)})
    lens["very_long"] = 9000
    return lens


LENGTHS = read_sentence_lengths()
assert sum(n > MAX_FRAMES for n in LENGTHS.values()) > 20

STRATEGIES = {
    "random": dict(seq_ordering="random"),
    "sorted": dict(seq_ordering="sorted"),
    "sorted_reverse": dict(seq_ordering="sorted_reverse"),
    "bucketing": dict(seq_ordering="bucketing", bucket_width=250),
    "laplace": dict(seq_ordering="laplace:8"),
    "optimal_buckets": dict(seq_ordering="optimal_buckets:4", bucket_order="curriculum"),
    "frame_shuffle": dict(seq_ordering="frame_shuffle", max_frames=256),
    "chunking": dict(seq_ordering="random", chunking="500:250"),
    "chunking_over_max_frames": dict(seq_ordering="laplace:4", chunking="2500:2000"),
    "tbptt": dict(seq_ordering="tbptt:16:20", max_frames=320),
    "split": dict(seq_ordering="laplace:8", max_seq_length=2500, max_seq_length_mode="split"),
    "max_seqs": dict(seq_ordering="random", max_seqs=4),
}


def cfg(**kw):
    kw.setdefault("max_frames", MAX_FRAMES)
    return DataConfig.from_dict(kw)


def frames_seen(plans):
    """Per utterance, how often each frame is in a batch."""
    cover = {u: np.zeros(n, int) for u, n in LENGTHS.items()}
    for p in plans:
        if isinstance(p, FrameBufferPlan):
            for idx in p.frame_batches():
                which, t = p.locate(idx)
                for i, j in zip(which.tolist(), t.tolist()):
                    cover[p.items[i].utt][p.items[i].start + j] += 1
        else:
            for it in p.items:
                if it is not None:
                    cover[it.utt][it.start:it.end] += 1
    return cover


@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_holds_utterances_over_max_frames(name, world_size):
    c = cfg(**STRATEGIES[name])
    shares = [plan_epoch(LENGTHS, c, 1, r, world_size) for r in range(world_size)]
    assert len({sum(p.num_batches for p in s) for s in shares}) == 1
    plans = [p for s in shares for p in s]
    cover = frames_seen(plans)
    if c.chunking:  # every frame, overlaps more than once
        assert all((v >= 1).all() for v in cover.values())
    else:  # every frame of every utterance exactly once: none left out
        assert all((v == 1).all() for v in cover.values()), name
    for p in plans:
        if isinstance(p, FrameBufferPlan):
            assert all(1 <= len(b) <= c.max_frames for b in p.frame_batches())
            continue
        assert isinstance(p, BatchPlan) and p.items
        lens = [it.length for it in p.items if it is not None]
        if c.strategy.needs_stateful_model:  # TBPTT
            assert max(lens, default=0) <= 20 and len(p.items) == 16  # this rank's streams
        elif max(lens) > c.max_frames:
            assert len(lens) == 1  # a batch of its own
        else:
            assert len(lens) * max(lens) <= c.max_frames
        assert not c.max_seqs or len(lens) <= c.max_seqs
        assert not c.max_seq_length or max(lens) <= c.max_seq_length
    if name in ("random", "sorted", "laplace", "bucketing", "optimal_buckets", "max_seqs"):
        alone = {p.items[0].utt for p in plans if len(p.items) == 1}
        assert {u for u, n in LENGTHS.items() if n > c.max_frames} <= alone


@pytest.mark.parametrize("ordering", ["laplace:64", "frame_shuffle", "random"])
def test_cross_validation_takes_utterances_of_any_length(ordering):
    lengths = dict(LENGTHS, hour=360000, minute=27000)
    c = cv_config(cfg(seq_ordering=ordering, chunking="100:50" if ordering == "random" else "",
                      max_seq_length=3000, max_seq_length_mode="filter"))
    plans = plan_epoch(lengths, c, 0)
    items = [it for p in plans for it in p.items]
    assert Counter(it.utt for it in items) == Counter(list(lengths))  # whole, none dropped
    assert all(it.start == 0 and it.end == lengths[it.utt] for it in items)
    longest = [it.length for p in plans for it in p.items]
    assert longest == sorted(longest)  # sorted by length
    assert [[it.utt for it in p.items] for p in plans[-2:]] == [["minute"], ["hour"]]


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    from train_helpers import make_tr_cv

    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_long"))


@pytest.mark.parametrize("ordering", ["random", "sorted", "optimal_buckets:3"])
def test_real_features_over_max_frames_load_whole(digits, ordering):
    tr, _, ali = digits
    c = cfg(seq_ordering=ordering, max_frames=40, num_workers=0, splice=1)
    ds = UtteranceDataset.from_data_dir(str(tr), str(ali / "targets.scp"),
                                        FeatureTransform.from_options(c.transform))
    over = {u for u, n in ds.lengths.items() if n > 40}
    assert 10 < len(over) < len(ds)  # kaldi_digits: 17 to 85 frames
    keys = []
    for b in make_batch_iterator(ds, c, epoch=1):
        keys += b.keys
        if any(k in over for k in b.keys):
            assert len(b.keys) == 1 and b.num_real_frames == ds.lengths[b.keys[0]]
            x, y = ds.load(b.keys[0])
            assert torch.equal(b.feats[0], torch.from_numpy(x))
            assert torch.equal(b.targets[0], torch.from_numpy(y))
        else:
            assert b.num_padded_frames <= 40
    assert sorted(keys) == sorted(ds.keys)


def test_training_with_max_frames_below_the_longest_utterance(digits, tmp_path):
    """The stop that corpus met ("has 2071 frames, more than --max-frames=2000") at the scale of
    kaldi_digits: --max-frames=50 is below a tenth of its utterances; training runs."""
    from train_helpers import load_pybin

    mod = load_pybin("train")
    tr, cv, ali = digits
    exp = tmp_path / "exp"
    assert mod.main(["--model=blstm", "--num-layers=1", "--hidden-size=16", "--dropout=0",
                     "--seq-ordering=laplace:4", "--max-frames=50", "--num-workers=0",
                     "--max-iters=1", "--progress-every=0", "--num-threads=1",
                     str(tr), str(cv), str(ali), str(ali), str(exp)]) == 0
    h = [json.loads(line) for line in open(exp / "metrics.jsonl")]
    total = sum(UtteranceDataset.from_data_dir(str(tr)).lengths.values())
    assert h[-1]["epoch"] == 1 and h[-1]["train_frames"] == total
