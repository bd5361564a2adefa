"""Utterance lengths in batch order, one panel per strategy (Fig. 1 of Doetsch et al.)."""
from __future__ import annotations

from typing import List, Mapping

from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats


def plot_batch_orders(lengths: Mapping[str, int], configs: List[DataConfig], labels: List[str],
                      png: str, epoch: int = 1) -> List[dict]:
    """Draws each config's epoch to ``png``; returns each one's ``plan_stats``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hybridasr.utils.atomic import atomic_path

    fig, axes = plt.subplots(len(configs), 1, figsize=(10, 1.8 * len(configs)), sharex=True,
                             squeeze=False)
    stats = []
    for ax, cfg, label in zip(axes[:, 0], configs, labels):
        plans = plan_epoch(lengths, cfg, epoch)
        xs, ys, colours, x = [], [], [], 0
        for b, p in enumerate(plans):
            items = [it for it in getattr(p, "items", []) if it is not None]
            for it in items:
                xs.append(x)
                ys.append(it.length)
                colours.append("tab:blue" if b % 2 == 0 else "tab:orange")
                x += 1
        ax.bar(xs, ys, width=1.0, color=colours, linewidth=0)
        s = plan_stats(plans)
        stats.append(s)
        ax.set_title(f"{label}: padding {s['padding_ratio']:.2f}, {s['num_batches']} batches",
                     fontsize=9)
        ax.set_ylabel("frames")
    axes[-1, 0].set_xlabel("sequence position in the epoch (colours alternate per batch)")
    fig.tight_layout()
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    return stats
