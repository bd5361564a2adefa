"""The collector pause around epoch planning: paused inside, restored after (also on error),
and the plans are the same as with the collector running."""
import gc
from collections import OrderedDict

import pytest

from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch
from hybridasr.errors import ConfigError
from hybridasr.utils.gc_pause import gc_paused


def test_gc_paused_restores_the_collector_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gc_paused():
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_planning_pauses_the_collector_and_plans_the_same(monkeypatch):
    lengths = OrderedDict((f"u{i:03d}", 100 + 37 * i % 900) for i in range(300))
    cfg = DataConfig(seq_ordering="laplace:8", max_frames=3000, seed=3)
    seen = []
    import hybridasr.data.epoch as epoch_mod

    real = cfg.strategy.plan

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(cfg.strategy, "plan", spy)
    paused = plan_epoch(lengths, cfg, epoch=2)
    assert seen and not any(seen) and gc.isenabled()
    with_gc = epoch_mod._plan_epoch(lengths, cfg, 2, 0, 1)
    assert [p.items for p in paused] == [p.items for p in with_gc]
    with pytest.raises(ConfigError):
        plan_epoch(OrderedDict(), cfg, epoch=1)
    assert gc.isenabled()
