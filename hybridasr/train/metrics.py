"""Per-epoch metrics: ``metrics.jsonl`` (one JSON object per epoch, rewritten whole and
atomically from the training state) and ``curves.png`` (loss, frame error rate and learning
rate per epoch)."""
from __future__ import annotations

import json
import logging
import math
import os
from typing import List

from hybridasr.utils.atomic import atomic_open, atomic_path

log = logging.getLogger(__name__)


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_metrics(path: str, history: List[dict]) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        for h in history:
            f.write(json.dumps({k: _clean(v) for k, v in h.items()}, sort_keys=True) + "\n")


def plot_curves(path: str, history: List[dict]) -> bool:
    """Loss, FER and learning rate per epoch; rejected epochs marked with a cross."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        log.warning("matplotlib is missing: no %s", path)
        return False
    ep = [h["epoch"] for h in history]

    def series(key):
        return [_clean(h.get(key)) for h in history]

    fig, axes = plt.subplots(3, 1, figsize=(6, 8), sharex=True)
    for ax, keys, label in ((axes[0], ("train_loss", "cv_loss"), "cross-entropy"),
                            (axes[1], ("train_fer", "cv_fer"), "frame error rate")):
        for k in keys:
            ys = series(k)
            xs = [x for x, y in zip(ep, ys) if y is not None]
            ax.plot(xs, [y for y in ys if y is not None], marker="o", label=k.split("_")[0])
        rej = [(h["epoch"], _clean(h.get(keys[1]))) for h in history
               if h.get("accepted") is False and _clean(h.get(keys[1])) is not None]
        if rej:
            ax.scatter([r[0] for r in rej], [r[1] for r in rej], marker="x", color="red",
                       zorder=3, label="rejected")
        ax.set_ylabel(label)
        ax.legend()
        ax.grid(alpha=0.3)
    axes[2].plot(ep, series("lr"), marker="o")
    axes[2].set_yscale("log")
    axes[2].set_ylabel("learning rate")
    axes[2].set_xlabel("epoch")
    axes[2].grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)
    return True
