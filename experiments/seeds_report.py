"""``docs/results.md`` of ``experiments/seeds.py``: a table, a plot and generated sentences per
experiment, each next to the paper's figure it echoes.

The papers' lines are quoted from ``../shared/SEEDS.md`` as the run finds them; the papers'
values that the sentences compare orderings with are in ``PAPER`` below, and each of them must
appear in the quoted line (checked: a changed SEEDS.md fails the report rather than quoting one
thing and comparing with another). Every figure of ours comes from the run's records.
"""
from __future__ import annotations

import math
import os
from itertools import combinations
from typing import Dict, List, Optional, Sequence

# (SEEDS.md line prefix, {our label: paper value}) per experiment and metric
PAPER = {
    1: ("- Table 2 (full utterances)", {
        "utts_per_s": {"random": 7.0, "sorted": 10.2, "bucketing": 9.5, "laplace:8": 10.1,
                       "laplace:64": 10.0, "laplace:256": 8.8},
        "peak_rss_mb": {"random": 5.4, "sorted": 4.2, "bucketing": 6.3, "laplace:8": 4.8,
                        "laplace:64": 5.3, "laplace:256": 6.0},
        "wer": {"random": 8.9, "sorted": 10.2, "bucketing": 9.6, "laplace:8": 9.9,
                "laplace:64": 9.5, "laplace:256": 9.1}}),
    2: ("- Table 1 (sub-utterance chunks", {
        "utts_per_s": {"chunks of 10": 36.7, "chunks of 50": 31.1, "chunks of 100": 29.6,
                       "chunks of 500": 17.3, "full": 7.0},
        "wer": {"chunks of 10": 21.3, "chunks of 50": 10.1, "chunks of 100": 9.2,
                "chunks of 500": 9.0, "full": 8.9}}),
    3: ("- Training visits buckets short to long", {"speedup_q3": {"Q=3": 4.0}}),
    4: ("- Multi-GPU: data re-shuffled", {"loss_gain_pct": {"6 GPUs": 23.0}}),
    5: ("- Average padding ratio (APR)", {
        "apr_mean": {10: 20.6, 20: 15.6, 40: 17.6}, "apr_sd": {10: 19.2, 20: 10.0, 40: 7.4}}),
}
NAMES = {"utts_per_s": "utterances/s", "peak_rss_mb": "peak memory", "wer": "WER",
         "apr_mean": "mean APR", "apr_sd": "APR sd", "cv_fer_last": "CV FER"}
LOWER_BETTER = {"peak_rss_mb", "wer", "apr_mean", "apr_sd", "cv_fer_last"}


def seeds_quote(seeds_md: str, prefix: str, values: dict) -> str:
    """The SEEDS.md bullet starting with ``prefix`` (with its continuation lines); each of
    ``values``' numbers must occur in it."""
    with open(seeds_md, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(prefix):
            text = line
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                text += " " + more.strip()
            for metric in values.values():
                for v in metric.values():
                    if f"{v:g}" not in text and f"{v:.1f}" not in text:
                        raise SystemExit(f"{seeds_md}: the line {prefix!r} no longer holds the "
                                         f"figure {v} that experiments/seeds_report.py compares "
                                         "with")
            return text[2:]
    raise SystemExit(f"{seeds_md}: no line starting with {prefix!r}")


def fmt(v) -> str:
    """A figure for a table cell: 4 significant digits at most, n/a for none."""
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3f}"
    return str(v)


def table(cols: Sequence[str], rows: List[List]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in r) + " |"
            for r in rows]
    return "\n".join(out)


def compare_order(metric: str, paper: Dict, ours: Dict) -> str:
    """A sentence: on how many pairs of configurations our ordering by ``metric`` agrees with
    the paper's, and which pairs flip."""
    keys = [k for k in paper if k in ours and ours[k] is not None and
            not math.isnan(ours[k])]
    if len(keys) < 2:
        return ""
    agree, flips = 0, []
    pairs = list(combinations(keys, 2))
    for a, b in pairs:
        p, o = paper[a] - paper[b], ours[a] - ours[b]
        if p == 0 or o == 0 or (p > 0) == (o > 0):
            agree += 1
        else:
            flips.append(f"{a} vs {b} (paper {paper[a]:g} / {paper[b]:g}, ours "
                         f"{ours[a]:.3g} / {ours[b]:.3g})")
    best = lambda d: (min if metric in LOWER_BETTER else max)(keys, key=lambda k: d[k])  # noqa
    s = (f"{NAMES.get(metric, metric)}: our ordering agrees with the paper's on {agree} of "
         f"{len(pairs)} pairs of configurations; best: paper {best(paper)}, ours {best(ours)}")
    s += f"; the pairs in another order: {'; '.join(flips)}." if flips else "."
    return s


def plot(path: str, title: str, panels: List[dict]) -> None:
    """One PNG: a panel per dict, ``bars`` ({label: value}) or ``curves`` ({label: (x, y)})."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    for ax, p in zip(axes[0], panels):
        if "bars" in p:
            labels = list(p["bars"])
            vals = [p["bars"][k] if p["bars"][k] is not None else float("nan") for k in labels]
            ax.bar(range(len(labels)), vals, yerr=p.get("err"), color="tab:blue")
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=40, ha="right", fontsize=8)
        else:
            for label, (x, y) in p["curves"].items():
                ax.plot(x, y, marker="o", label=label)
            ax.legend(fontsize=7)
            ax.set_xlabel(p.get("xlabel", ""))
        ax.set_title(p["title"], fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    os.replace(tmp, path)


def value_at(seconds: List[float], losses: List[float], t: float) -> Optional[float]:
    """The CV loss of the last epoch finished by ``t`` training seconds (losses[0]: initial)."""
    done, out = 0.0, losses[0]
    for s, loss in zip(seconds, losses[1:]):
        done += s
        if done > t + 1e-9:
            break
        out = loss
    return out


TITLES = {
    1: "Experiment 1: batch construction, full utterances (Doetsch et al., Table 2 in kind)",
    2: "Experiment 2: sub-utterance chunks (Doetsch et al., Table 1 in kind)",
    3: "Experiment 3: optimal buckets (Khomenko et al.)",
    4: "Experiment 4: parameter averaging, 2 gloo processes (RETURNN / Khomenko et al.)",
    5: "Experiment 5: truncated unrolling with an LSTM (Variani et al.)",
}


def _last(v: List[float]) -> float:
    return v[-1] if v else float("nan")


def section(exp: int, recs: List[dict], seeds_md: str, png: str, png_rel: str) -> str:
    """The markdown of one experiment: paper line, table, sentences, plot."""
    prefix, paper = PAPER[exp]
    quote = seeds_quote(seeds_md, prefix, paper)
    labels = [r["configuration"] for r in recs]
    E = max(r["epochs"] for r in recs)
    gpu = any(r.get("gpu_peak_mb") is not None for r in recs)
    said: List[str] = []
    if exp in (1, 2):
        cols = ["configuration", "utterances/s", "frames/s", "peak RSS (MB)"] + \
            (["GPU memory (MB)"] if gpu else []) + ["padding ratio", f"CV FER % (epoch {E})",
                                                    "test WER %"]
        rows = [[r["configuration"], r["utts_per_s"], r["frames_per_s"], r["peak_rss_mb"]] +
                ([r.get("gpu_peak_mb")] if gpu else []) +
                [round(r["padding_ratio"], 3), 100 * _last(r["cv_fer"]), r["wer"]]
                for r in recs]
        for metric in paper:
            key = "gpu_peak_mb" if metric == "peak_rss_mb" and gpu else metric
            said.append(compare_order(metric, paper[metric],
                                      {r["configuration"]: r.get(key) for r in recs}))
        panels = [{"title": "utterances/s", "bars": {r["configuration"]: r["utts_per_s"]
                                                     for r in recs}},
                  {"title": "peak RSS (MB)", "bars": {r["configuration"]: r["peak_rss_mb"]
                                                      for r in recs}},
                  {"title": "test WER %", "bars": {r["configuration"]: r["wer"] for r in recs}}]
    elif exp == 3:
        base = next((r for r in recs if r.get("Q") == 1 and r.get("order") == "random"), recs[0])
        cols = ["configuration", "Q", "bucket order", "epoch seconds", "relative to Q=1",
                "padding ratio"] + [f"CV loss e{e}" for e in range(E + 1)]
        rows = [[r["configuration"], r["Q"], r["order"], r["epoch_seconds"],
                 round(r["epoch_seconds"] / base["epoch_seconds"], 3),
                 round(r["padding_ratio"], 3)] +
                [round(x, 3) for x in r["cv_loss"]] + ["n/a"] * (E + 1 - len(r["cv_loss"]))
                for r in recs]
        q3 = next((r for r in recs if r.get("Q") == 3 and r.get("order") == "random"), None)
        if q3:
            speed = base["epoch_seconds"] / q3["epoch_seconds"]
            said.append(f"Epoch time: the paper's Q=3 is about {paper['speedup_q3']['Q=3']:g}x "
                        f"faster than no bucketing; ours is {speed:.2f}x as fast as Q=1 "
                        f"({'agrees' if speed > 1.5 else 'does not agree'} in direction"
                        f"{' and size' if speed > 3 else ''}).")
        fastest = min(recs, key=lambda r: r["epoch_seconds"])
        said.append(f"Fastest epochs: {fastest['configuration']}; lowest padding: "
                    f"{min(recs, key=lambda r: r['padding_ratio'])['configuration']}.")
        cur = [r for r in recs if r.get("order") == "curriculum"]
        same = [r for r in recs if cur and r.get("Q") == cur[0]["Q"] and r["order"] == "random"]
        if cur and same and len(cur[0]["cv_loss"]) > 1:
            a, b = cur[0]["cv_loss"][1], same[0]["cv_loss"][1]
            said.append(f"Curriculum (short to long) at Q={cur[0]['Q']}: CV loss after epoch 1 "
                        f"{a:.3f} against {b:.3f} in random bucket order, "
                        f"{'as' if a < b else 'unlike'} the paper's faster early convergence.")
        panels = [{"title": "epoch time relative to Q=1",
                   "bars": {r["configuration"]: r["epoch_seconds"] / base["epoch_seconds"]
                            for r in recs}},
                  {"title": "CV loss per epoch", "xlabel": "epoch",
                   "curves": {r["configuration"]: (list(range(len(r["cv_loss"]))), r["cv_loss"])
                              for r in recs}}]
    elif exp == 4:
        t_eq = min(sum(r["train_seconds"]) for r in recs)
        cols = ["configuration", "processes", "sync every K batches", "train seconds/epoch"] + \
            [f"CV loss e{e}" for e in range(E + 1)] + [f"CV loss at {t_eq:.1f} s"]
        at = {r["configuration"]: value_at(r["train_seconds"], r["cv_loss"], t_eq) for r in recs}
        rows = [[r["configuration"], r["processes"], str(r["sync_every"]), r["epoch_seconds"]] +
                [round(x, 3) for x in r["cv_loss"]] + ["n/a"] * (E + 1 - len(r["cv_loss"])) +
                [round(at[r["configuration"]], 3)] for r in recs]
        one = recs[0]
        for r in recs[1:]:
            gain = 100 * (at[one["configuration"]] - at[r["configuration"]]) / \
                at[one["configuration"]]
            said.append(f"{r['configuration']}: CV loss {abs(gain):.1f}% "
                        f"{'lower' if gain > 0 else 'higher'} than 1 process after {t_eq:.1f} s "
                        f"of training (paper: 6 GPUs {paper['loss_gain_pct']['6 GPUs']:g}% lower "
                        f"than 1); {'agrees' if gain > 0 else 'does not agree'} in direction.")
        panels = [{"title": "CV loss against training seconds", "xlabel": "seconds",
                   "curves": {r["configuration"]: (
                       [sum(r["train_seconds"][:i]) for i in range(len(r["cv_loss"]))],
                       r["cv_loss"]) for r in recs}}]
    else:
        cols = ["(streams, window)", "frames per step", "APR mean %", "APR sd %",
                "padding ratio (trainer)", "frames/s", f"CV FER % (epoch {E})"]
        rows = [[r["configuration"], r["streams"] * r["window"], r["apr_mean"], r["apr_sd"],
                 round(r["padding_ratio"], 3), r["frames_per_s"], 100 * _last(r["cv_fer"])]
                for r in recs]
        for metric in ("apr_mean", "apr_sd"):
            said.append(compare_order(metric, paper[metric],
                                      {r["window"]: r[metric] for r in recs}).replace(
                                          "configurations", "windows"))
        short = min(recs, key=lambda r: r["window"])
        worst = max(recs, key=lambda r: _last(r["cv_fer"]))
        said.append(f"The paper's shortest unroll lost accuracy; here the highest CV FER is "
                    f"{worst['configuration']}'s, "
                    f"{'as' if worst is short else 'not'} the shortest window's.")
        panels = [{"title": "APR % (mean, sd over steps)",
                   "bars": {r["configuration"]: r["apr_mean"] for r in recs},
                   "err": [r["apr_sd"] for r in recs]},
                  {"title": f"CV FER % (epoch {E})",
                   "bars": {r["configuration"]: 100 * _last(r["cv_fer"]) for r in recs}}]
    plot(png, TITLES[exp], panels)
    assert len(rows) == len(labels)
    return "\n".join([f"## {TITLES[exp]}", "", f"Paper ({os.path.basename(seeds_md)}): {quote}",
                      "", table(cols, rows), "", "Ours against the paper (generated from the "
                      "numbers above): " + " ".join(s for s in said if s), "",
                      f"![experiment {exp}]({png_rel})", ""])
