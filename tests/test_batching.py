"""Batching strategies: coverage, limits, determinism, rank shares (synthetic lengths)."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from hybridasr.data.batching.frame_shuffle import FrameBufferPlan
from hybridasr.data.batching.optimal_buckets import optimal_bucket_ends
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats
from hybridasr.errors import ConfigError


def lognormal_lengths(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return {f"u{i:04d}": int(max(1, x)) for i, x in enumerate(rng.lognormal(5.0, 0.5, n))}


LENGTHS = lognormal_lengths()

SEQUENCE_CONFIGS = {
    "random": dict(seq_ordering="random"),
    "sorted": dict(seq_ordering="sorted"),
    "sorted_reverse": dict(seq_ordering="sorted_reverse"),
    "bucketing_width": dict(seq_ordering="bucketing", bucket_width=50),
    "bucketing_bounds": dict(seq_ordering="bucketing", bucket_boundaries="100,150,250",
                             bucket_order="curriculum"),
    "laplace4": dict(seq_ordering="laplace:4"),
    "laplace_k": dict(seq_ordering="laplace:.20"),
    "optimal3": dict(seq_ordering="optimal_buckets:3"),
    "optimal3_curriculum": dict(seq_ordering="optimal_buckets:3", bucket_order="curriculum"),
    "max_seqs": dict(seq_ordering="laplace:8", max_seqs=3),
    "split_long": dict(seq_ordering="random", max_seq_length=150, max_seq_length_mode="split"),
}
FIXED_ORDER = {"sorted", "sorted_reverse"}  # same compositions every epoch by design


def cfg(**kw):
    kw.setdefault("max_frames", 2000)
    return DataConfig.from_dict(kw)


def items_of(plans):
    return [it for p in plans for it in p.items if it is not None]


def check_limits(plans, c):
    for p in plans:
        lens = [it.length for it in p.items]
        assert c.max_frames == 0 or len(lens) * max(lens) <= c.max_frames
        assert c.max_seqs == 0 or len(lens) <= c.max_seqs
        assert c.max_seq_length == 0 or max(lens) <= c.max_seq_length


def frame_cover(items, lengths):
    """Per utterance, how many times each frame is covered."""
    cover = {u: np.zeros(n, int) for u, n in lengths.items()}
    for it in items:
        cover[it.utt][it.start:it.end] += 1
    return cover


@pytest.mark.parametrize("name", sorted(SEQUENCE_CONFIGS))
def test_sequence_strategy_covers_limits_and_determinism(name):
    c = cfg(**SEQUENCE_CONFIGS[name])
    e1 = plan_epoch(LENGTHS, c, epoch=1)
    items = items_of(e1)
    # every frame of every utterance exactly once (whole utterances, or split pieces)
    assert all((v == 1).all() for v in frame_cover(items, LENGTHS).values())
    if not c.max_seq_length:
        assert Counter(it.utt for it in items) == Counter(list(LENGTHS))
    check_limits(e1, c)
    assert all(p.items for p in e1)
    # reproducible per (seed, epoch), different across epochs
    assert plan_epoch(LENGTHS, c, epoch=1) == e1
    e2 = plan_epoch(LENGTHS, c, epoch=2)
    if name not in FIXED_ORDER:
        assert e2 != e1
        assert [p.items for p in e2][:5] != [p.items for p in e1][:5]
    c2 = cfg(**SEQUENCE_CONFIGS[name], seed=c.seed + 1)
    if name not in FIXED_ORDER:
        assert plan_epoch(LENGTHS, c2, epoch=1) != e1


@pytest.mark.parametrize("name", ["random", "laplace4", "optimal3_curriculum", "sorted"])
@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_get_disjoint_equal_shares(name, world_size):
    c = cfg(**SEQUENCE_CONFIGS[name])
    shares = [plan_epoch(LENGTHS, c, 4, r, world_size) for r in range(world_size)]
    assert len({len(s) for s in shares}) == 1
    all_items = [it for s in shares for it in items_of(s)]
    assert sorted(all_items) == sorted(items_of(plan_epoch(LENGTHS, c, 4)))
    assert len(set(all_items)) == len(all_items) == len(LENGTHS)
    for s in shares:
        check_limits(s, c)


def test_ranks_equal_even_when_batches_do_not_divide():
    lengths = {f"u{i}": 10 for i in range(7)}
    c = cfg(seq_ordering="random", max_seqs=2)  # 4 batches for 3 ranks
    shares = [plan_epoch(lengths, c, 0, r, 3) for r in range(3)]
    assert [len(s) for s in shares] == [2, 2, 2]
    assert sorted(it.utt for s in shares for it in items_of(s)) == sorted(lengths)
    with pytest.raises(ConfigError):
        plan_epoch({"a": 5}, c, 0, 0, 2)


def test_sorted_orders_and_laplace_alternates():
    c = cfg(seq_ordering="sorted", max_seqs=1)
    lens = [p.items[0].length for p in plan_epoch(LENGTHS, c, 0)]
    assert lens == sorted(lens)
    c = cfg(seq_ordering="sorted_reverse", max_seqs=1)
    lens = [p.items[0].length for p in plan_epoch(LENGTHS, c, 0)]
    assert lens == sorted(lens, reverse=True)
    c = cfg(seq_ordering="laplace:4", max_seqs=1)
    lens = [p.items[0].length for p in plan_epoch(LENGTHS, c, 0)]
    bins = np.array_split(np.array(lens), 4)
    for i, b in enumerate(bins):
        assert list(b) == sorted(b, reverse=i % 2 == 1)
    # consecutive bins meet at similar lengths: less padding than random
    pr = lambda s: plan_stats(plan_epoch(LENGTHS, cfg(seq_ordering=s), 0))["padding_ratio"]  # noqa
    assert pr("sorted") <= pr("laplace:4") < pr("random")


def test_bucketing_keeps_batches_inside_buckets():
    c = cfg(seq_ordering="bucketing", bucket_boundaries="100,150,250")
    bounds = [0, 100, 150, 250, 10 ** 9]
    for p in plan_epoch(LENGTHS, c, 0):
        b = {next(i for i in range(4) if bounds[i] < it.length <= bounds[i + 1])
             for it in p.items}
        assert len(b) == 1
    with pytest.raises(ConfigError):
        cfg(seq_ordering="bucketing")


def brute_force_cost(lengths, q):
    vals = sorted(set(lengths))
    best = None
    for ends in itertools.combinations(vals[:-1], q - 1):
        ends = list(ends) + [vals[-1]]
        cost = sum(ends[int(np.searchsorted(ends, x))] for x in lengths)
        best = cost if best is None else min(best, cost)
    return best


def test_optimal_bucket_ends_match_brute_force():
    rng = np.random.default_rng(3)
    for q in (1, 2, 3):
        lengths = rng.integers(1, 30, 40).tolist()
        ends = optimal_bucket_ends(lengths, q)
        assert len(ends) == min(q, len(set(lengths))) and ends[-1] == max(lengths)
        cost = sum(ends[int(np.searchsorted(ends, x))] for x in lengths)
        assert cost == brute_force_cost(lengths, q)


def test_optimal_buckets_curriculum_goes_short_to_long():
    c = cfg(seq_ordering="optimal_buckets:3", bucket_order="curriculum")
    ends = optimal_bucket_ends(list(LENGTHS.values()), 3)
    bucket = [int(np.searchsorted(ends, max(it.length for it in p.items)))
              for p in plan_epoch(LENGTHS, c, 0)]
    assert bucket == sorted(bucket) and len(set(bucket)) == 3


@pytest.mark.parametrize("ordering", ["random", "laplace:4"])
def test_chunking_covers_every_frame_with_the_overlap(ordering):
    size, step = 50, 30
    c = cfg(seq_ordering=ordering, chunking=f"{size}:{step}")
    items = items_of(plan_epoch(LENGTHS, c, 1))
    assert all(it.length <= size for it in items)
    cover = frame_cover(items, LENGTHS)
    for utt, n in LENGTHS.items():
        chunks = sorted(it for it in items if it.utt == utt)
        assert chunks[0].start == 0 and chunks[-1].end == n
        assert [b.start - a.start for a, b in zip(chunks, chunks[1:])] == [step] * (len(chunks) - 1)
        assert (cover[utt] >= 1).all()
        # overlap: frames covered twice are exactly those in consecutive chunks' shared span
        expect = np.zeros(n, int)
        for ch in chunks:
            expect[ch.start:ch.end] += 1
        assert (cover[utt] == expect).all() and cover[utt].max() <= -(-size // step)
    assert plan_epoch(LENGTHS, c, 1) != plan_epoch(LENGTHS, c, 2)


def test_max_seq_length_filter_counts_and_over_long_get_a_batch_of_their_own(caplog,
                                                                             monkeypatch):
    import hybridasr.data.epoch as epoch_mod

    monkeypatch.setattr(epoch_mod, "_logged", set())
    c = cfg(seq_ordering="random", max_seq_length=150)
    with caplog.at_level("WARNING"):
        items = items_of(plan_epoch(LENGTHS, c, 0))
    kept = {u for u, n in LENGTHS.items() if n <= 150}
    assert {it.utt for it in items} == kept
    # the log says how many were left out and which option keeps them
    msg = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert msg and f"{len(LENGTHS) - len(kept)} of {len(LENGTHS)}" in msg[0]
    assert "--max-seq-length-mode=split" in msg[0] and "--max-seq-length=0" in msg[0]
    # nothing else refuses an utterance for its length: longer than --max-frames, alone
    c = cfg(seq_ordering="random", max_frames=100)
    plans = plan_epoch(LENGTHS, c, 0)
    assert Counter(it.utt for it in items_of(plans)) == Counter(list(LENGTHS))
    for p in plans:
        if max(it.length for it in p.items) > 100:
            assert len(p.items) == 1
        else:
            assert len(p.items) * max(it.length for it in p.items) <= 100
    with pytest.raises(ConfigError, match=r"longer than --max-seq-length=5.*mode=split"):
        plan_epoch(LENGTHS, cfg(seq_ordering="random", max_seq_length=5), 0)


@pytest.mark.parametrize("world_size", [1, 2])
def test_tbptt_streams_carry_state_only_inside_utterances(world_size):
    S, W = 8, 20
    c = cfg(seq_ordering=f"tbptt:{S}:{W}", max_frames=S * W)
    shares = [plan_epoch(LENGTHS, c, 1, r, world_size) for r in range(world_size)]
    assert len({len(s) for s in shares}) == 1
    seen = []
    for plans in shares:
        for s in range(S):
            prev = None
            for p in plans:
                assert len(p.items) == S and p.carry_state
                it, reset = p.items[s], p.reset[s]
                if it is not None:
                    assert it.length <= W
                    continued = prev is not None and prev.utt == it.utt and prev.end == it.start
                    assert reset == (not continued)
                    assert reset == (it.start == 0)  # state only carried inside an utterance
                    seen.append(it)
                else:
                    assert reset
                prev = it
    assert all((v == 1).all() for v in frame_cover(seen, LENGTHS).values())
    assert plan_epoch(LENGTHS, c, 1) == shares[0] if world_size == 1 else True
    assert plan_epoch(LENGTHS, c, 2, 0, world_size) != shares[0]
    with pytest.raises(ConfigError):
        cfg(seq_ordering="tbptt:64:20", max_frames=100)


@pytest.mark.parametrize("world_size", [1, 3])
def test_frame_shuffle_every_frame_once_equal_counts(world_size):
    c = cfg(seq_ordering="frame_shuffle", max_frames=64, randomizer_size=5000)
    shares = [plan_epoch(LENGTHS, c, 1, r, world_size) for r in range(world_size)]
    counts = [sum(b.num_batches for b in s) for s in shares]
    assert len(set(counts)) == 1
    frames = Counter()
    for s in shares:
        for buf in s:
            assert isinstance(buf, FrameBufferPlan)
            for idx in buf.frame_batches():
                assert 1 <= len(idx) <= 64
                which, t = buf.locate(idx)
                frames.update((buf.items[i].utt, int(j)) for i, j in zip(which, t))
    assert sum(frames.values()) == sum(LENGTHS.values()) and set(frames.values()) == {1}
    b1 = shares[0][0].frame_batches()[0]
    again = plan_epoch(LENGTHS, c, 1, 0, world_size)[0].frame_batches()[0]
    other = plan_epoch(LENGTHS, c, 2, 0, world_size)[0]
    assert (b1 == again).all()
    assert other.items != shares[0][0].items


def test_unknown_strategy_and_bad_values_are_config_errors():
    for bad in (dict(seq_ordering="nope"), dict(seq_ordering="laplace:x"), dict(seq_ordering="random:3"),
                dict(chunking="10"), dict(chunking="10:20"), dict(seq_ordering="tbptt:a:b"),
                dict(seq_ordering="tbptt:4"), dict(seq_ordering="tbptt"),
                dict(bucket_order="up"), dict(seq_ordering="tbptt:4:5", chunking="20:10")):
        with pytest.raises(ConfigError):
            cfg(**bad)
    assert DataConfig.from_dict(cfg(seq_ordering="laplace:8").to_dict()).seq_ordering == "laplace:8"


def test_a_saved_flat_data_config_still_loads():
    # a model's "data_config" as saved before strategies declared their own options (and
    # before TBPTT was chosen by --seq-ordering=tbptt:S:W rather than by --tbptt=S:W)
    saved = {"norm_means": True, "norm_vars": False, "global_norm": False, "delta_order": 0,
             "delta_window": 2, "splice": 5, "stack_frames": 1, "subsample": 1,
             "label_delay": 0, "seq_ordering": "bucketing", "bucket_boundaries": "",
             "bucket_width": 250, "bucket_order": "curriculum", "chunking": "",
             "chunking_loss": "all", "tbptt": "", "max_frames": 5000, "max_seqs": 0,
             "max_seq_length": 5000, "max_seq_length_mode": "split",
             "randomizer_size": 32768, "min_batches_per_epoch": 0, "seed": 777,
             "num_workers": 2, "prefetch": 2}
    c = DataConfig.from_dict(saved)
    d = c.to_dict()  # every saved value kept; options added since get their defaults
    kept = {k: v for k, v in saved.items() if k != "tbptt"}  # empty: not TBPTT
    assert {k: d[k] for k in kept} == kept
    assert (c.strategy_options.bucket_width, c.transform.splice) == (250, 5)
    from hybridasr.data.spec_augment import SpecAugmentOptions
    from hybridasr.options import defaults

    assert {k: d[k] for k in set(d) - set(saved)} == {"global_norm_utts": 10000,
                                                      **defaults(SpecAugmentOptions)}
    assert not c.augment.enabled  # added since: off
    assert plan_epoch(LENGTHS, c, 1) == plan_epoch(LENGTHS, cfg(**saved), 1)
    with pytest.raises(ConfigError, match="unknown data config keys: bucket_size"):
        DataConfig.from_dict({**saved, "bucket_size": 3})
    tbptt = DataConfig.from_dict({**saved, "seq_ordering": "random", "tbptt": "8:20",
                                  "max_seq_length": 0, "max_frames": 160})
    assert tbptt.seq_ordering == "tbptt:8:20" and "tbptt" not in tbptt.to_dict()
    assert tbptt.strategy.needs_stateful_model
