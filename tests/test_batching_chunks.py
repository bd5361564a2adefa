"""Chunking and long-utterance splitting read each utterance once per epoch,
give the same batches whatever the number of loader workers, and --chunking-loss=once counts
every frame once (on kaldi_digits' real features and alignments)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from hybridasr.data.batching import Item
from hybridasr.data.chunking import chunk
from hybridasr.data.config import DataConfig
from hybridasr.data.dataset import UtteranceDataset
from hybridasr.data.epoch import plan_epoch
from hybridasr.data.loader import make_batch_iterator, plan_units
from hybridasr.errors import ConfigError
from hybridasr.features.transform import IGNORE_INDEX, FeatureTransform


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    from train_helpers import make_tr_cv

    tr, _, ali = make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_chunks"))
    return tr, ali


def dataset(digits, c):
    tr, ali = digits
    return UtteranceDataset.from_data_dir(str(tr), str(ali / "targets.scp"),
                                          FeatureTransform.from_options(c.transform))


def cfg(**kw):
    kw = {"max_frames": 200, "num_workers": 0, "splice": 2, **kw}
    return DataConfig.from_dict(kw)


def count_reads(ds):
    reads = Counter()
    raw = ds.raw_feats

    def counting(utt):
        reads[utt] += 1
        return raw(utt)

    ds.raw_feats = counting
    return reads


@pytest.mark.parametrize("kw", [dict(chunking="20:10"),
                                dict(chunking="20:10", seq_ordering="laplace:4"),
                                dict(chunking="16:16", seq_ordering="sorted"),
                                dict(max_seq_length=20, max_seq_length_mode="split")],
                         ids=["chunking", "chunking-laplace", "chunking-sorted", "split"])
def test_one_epoch_reads_each_utterance_once(digits, kw):
    c = cfg(**kw)
    ds = dataset(digits, c)
    it = make_batch_iterator(ds, c, epoch=1)
    reads = count_reads(ds)
    batches = list(it)
    assert len(batches) == len(it) > 10
    pieces = Counter(k for b in batches for k in b.keys)
    assert sum(pieces.values()) > 1.5 * len(ds)  # several chunks (pieces) per utterance ...
    assert reads == Counter({u: 1 for u in ds.keys})  # ... and each utterance read once
    # batches of one unit are cut from the same utterances: no utterance in two units
    owner = {}
    for u, unit in enumerate(plan_units(it.plans)):
        for b in unit:
            for item in b.items:
                assert owner.setdefault(item.utt, u) == u


def test_chunks_are_identical_to_fresh_reads_whatever_the_workers(digits):
    c = cfg(chunking="20:10", seq_ordering="laplace:4", chunking_loss="once")
    ds = dataset(digits, c)
    b0 = list(make_batch_iterator(ds, c, epoch=2))
    c2 = cfg(chunking="20:10", seq_ordering="laplace:4", chunking_loss="once", num_workers=2)
    b2 = list(make_batch_iterator(ds, c2, epoch=2))
    assert [b.keys for b in b0] == [b.keys for b in b2]
    assert [b.spans for b in b0] == [b.spans for b in b2]
    fresh = dataset(digits, c)
    for x, y in zip(b0, b2):
        assert torch.equal(x.feats, y.feats) and torch.equal(x.targets, y.targets)
        for i, (k, (s, e)) in enumerate(zip(x.keys, x.spans)):
            f, t = fresh.load(k, s, e)
            assert torch.equal(x.feats[i, :e - s], torch.from_numpy(f))
            counted = x.targets[i, :e - s] != IGNORE_INDEX  # 'once': a middle part
            assert torch.equal(x.targets[i, :e - s][counted], torch.from_numpy(t)[counted.numpy()])


@pytest.mark.parametrize("world_size", [1, 2])
def test_chunking_loss_once_counts_every_frame_once(digits, world_size):
    c = cfg(chunking="20:10", seq_ordering="random", chunking_loss="once")
    ds = dataset(digits, c)
    total = sum(ds.lengths.values())
    seen = {u: np.zeros(n, int) for u, n in ds.lengths.items()}
    loss_frames = 0
    for rank in range(world_size):
        for b in make_batch_iterator(ds, c, epoch=1, rank=rank, world_size=world_size):
            counted = b.targets != IGNORE_INDEX
            loss_frames += int(counted.sum())
            for i, (k, (s, e)) in enumerate(zip(b.keys, b.spans)):
                seen[k][s:e] += counted[i, :e - s].numpy()
    assert loss_frames == total
    assert all((v == 1).all() for v in seen.values())
    # 'all' (RETURNN's default) counts the overlaps again
    c_all = cfg(chunking="20:10", seq_ordering="random")
    frames_all = sum(int((b.targets != IGNORE_INDEX).sum())
                     for b in make_batch_iterator(ds, c_all, epoch=1))
    chunk_frames = sum(ch.length for u, n in ds.lengths.items()
                       for ch in chunk(Item(u, 0, n), 20, 10))
    assert frames_all == chunk_frames > 1.5 * total


def test_training_loop_counts_each_frame_once(digits):
    """What the trainer's loss divides by (``EpochStats.frames``, counted alike in training
    and evaluation) over an epoch."""
    from hybridasr.models import build_model
    from hybridasr.train.distributed import DistInfo
    from hybridasr.train.loop import run_epoch

    c = cfg(chunking="20:10", seq_ordering="laplace:4", chunking_loss="once")
    ds = dataset(digits, c)
    torch.manual_seed(0)
    model = build_model({"model": "mlp", "num_layers": 1, "hidden_size": 8}, 65, 700)
    it = make_batch_iterator(ds, c, epoch=1)
    s = run_epoch(model, it, DistInfo(), progress_every=0)  # the frames the loss sums over
    assert s.frames == sum(ds.lengths.values()) and s.batches == len(it)


def test_once_splits_each_overlap_at_its_middle():
    for n, size, step in [(100, 20, 10), (105, 100, 10), (7, 20, 10), (50, 16, 16), (33, 10, 3)]:
        chunks = chunk(Item("u", 0, n), size, step, once=True)
        if len(chunks) == 1:
            assert chunks[0].counted is None
            continue
        spans = [ch.counted for ch in chunks]
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # a partition of [0, n)
        assert all(ch.start <= lo < hi <= ch.end for ch, (lo, hi) in zip(chunks, spans))
    assert [ch.counted for ch in chunk(Item("u", 0, 40), 20, 10, once=True)] == \
        [(0, 15), (15, 25), (25, 40)]
    with pytest.raises(ConfigError, match="--chunking-loss=once .*--chunking"):
        cfg(chunking_loss="once")


@pytest.mark.parametrize("world_size", [2, 3])
def test_chunk_groups_deal_to_ranks(world_size):
    rng = np.random.default_rng(1)
    lengths = {f"u{i:03d}": int(x) for i, x in enumerate(rng.lognormal(6.4, 0.4, 300))}
    lengths.update({f"short{i}": 60 for i in range(20)})  # one chunk: batched over the epoch
    c = cfg(chunking="100:50", max_frames=5000, randomizer_size=8000)
    most = max(sum(ch.length for ch in chunk(Item(u, 0, n), 100, 50)) for u, n in lengths.items())
    shares = [plan_epoch(lengths, c, 1, r, world_size) for r in range(world_size)]
    assert len({len(s) for s in shares}) == 1
    owner = {}
    for r, s in enumerate(shares):
        for u, unit in enumerate(plan_units(s)):
            if len(unit) > 1:  # a buffer: at most one utterance's chunks over 8000 frames
                assert sum(it.length for b in unit for it in b.items) < 8000 + most
            for b in unit:
                assert len(b.items) * max(it.length for it in b.items) <= 5000
                for it in b.items:
                    assert owner.setdefault(it.utt, (r, u)) == (r, u)
    assert set(owner) == set(lengths)
    assert shares == [plan_epoch(lengths, c, 1, r, world_size) for r in range(world_size)]
    assert shares[0] != plan_epoch(lengths, c, 2, 0, world_size)
