"""The recipe's closing summary: best WER next to the GMM system's, training figures, paths."""
from __future__ import annotations

import glob
import json
import os
import re
from typing import Optional, Sequence, Tuple

_WER_RE = re.compile(r"^%WER\s+([0-9.]+)\s+\[\s*(\d+)\s*/\s*(\d+)")


def best_wer(decode_dir: str) -> Optional[Tuple[float, str, str]]:
    """(wer, the %WER line, file) of the best ``wer_*`` in a decode dir, or None."""
    best = None
    for path in sorted(glob.glob(os.path.join(decode_dir, "wer_*"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = _WER_RE.match(line.strip())
                if m:
                    wer = float(m.group(1))
                    if best is None or wer < best[0]:
                        best = (wer, line.strip(), path)
                    break
    return best


def read_metrics(exp_dir: str) -> list:
    path = os.path.join(exp_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summarize(exp_dir: str, decode_dir: str, gmm_decode_dir: Optional[str] = None,
              more_decode_dirs: Sequence[str] = (), model_name: str = "") -> dict:
    """``more_decode_dirs``: other data sets' decode dirs, each listed under ``other_sets``
    with its best WER (``wer``, ``wer_line``, ``wer_file``), or None when it has no ``wer_*``."""
    out: dict = {"exp_dir": exp_dir, "decode_dir": decode_dir}
    if model_name:
        out["model"] = model_name
    b = best_wer(decode_dir)
    if b:
        out["wer"], out["wer_line"], out["wer_file"] = b
    if more_decode_dirs:
        out["other_sets"] = {}
        for d in more_decode_dirs:
            o = best_wer(d)
            out["other_sets"][d] = dict(zip(("wer", "wer_line", "wer_file"), o)) if o else None
    if gmm_decode_dir:
        g = best_wer(gmm_decode_dir)
        if g:
            out["gmm_wer"], out["gmm_wer_line"], out["gmm_wer_file"] = g
    epochs = [m for m in read_metrics(exp_dir) if m.get("epoch", 0) > 0]
    if epochs:
        out["epochs"] = len(epochs)
        secs = [m.get("train_seconds", m.get("seconds", 0.0)) or 0.0 for m in epochs]
        out["train_seconds"] = round(float(sum(secs)), 1)
        frames = sum(m.get("train_frames") or 0 for m in epochs)
        if frames and out["train_seconds"] > 0:  # real (unpadded) training frames per second
            out["frames_per_second"] = round(frames / float(sum(secs)), 1)
        pad = [m["padding_ratio"] for m in epochs if m.get("padding_ratio")]
        if pad:
            out["padding_ratio"] = round(sum(pad) / len(pad), 3)
        accepted = [m for m in epochs if m.get("cv_fer") is not None and m.get("accepted")]
        if accepted:
            out["cv_fer"] = round(100.0 * accepted[-1]["cv_fer"], 2)
    members = sorted(d for d in os.listdir(exp_dir) if re.fullmatch(r"member[0-9]+", d)
                     and os.path.isdir(os.path.join(exp_dir, d))) if os.path.isdir(exp_dir) else []
    final = os.path.join(exp_dir, "final.nnet")
    if members and os.path.islink(final) and os.readlink(final) == "ensemble.nnet":
        out["num_models"] = 1 + len(members)  # (the training figures are the first member's)
    for name in ("curves.png", "metrics.jsonl", "log"):
        p = os.path.join(exp_dir, name)
        if os.path.exists(p):
            out[name.replace(".", "_")] = p
    return out


def format_summary(s: dict) -> str:
    lines = [f"model:         {s['model']} ({s['exp_dir']})"] if s.get("model") else []
    label = f"{s.get('label', 'hybrid model')}:"
    lines.append(f"{label:<15}{s.get('wer_line', 'no wer_* found in ' + s['decode_dir'])}"
                 + (f"  ({s['wer_file']})" if "wer_file" in s else ""))
    if "gmm_wer_line" in s:
        lines.append(f"GMM system:    {s['gmm_wer_line']}  ({s['gmm_wer_file']})")
    for d, o in s.get("other_sets", {}).items():
        lines.append(f"{os.path.basename(os.path.normpath(d))}:" + (
            f"  {o['wer_line']}  ({o['wer_file']})" if o else f"  no wer_* found in {d}"))
    if "epochs" in s:
        lines.append(f"training:      {s['epochs']} epochs, {s.get('train_seconds', 0)} s, "
                     f"{s.get('frames_per_second', '?')} frames/s, padding ratio "
                     f"{s.get('padding_ratio', '?')}, CV FER of the final model {s.get('cv_fer', '?')}%"
                     + (f" (the first of {s['num_models']} networks; final.nnet averages their "
                        f"log-posteriors)" if s.get("num_models") else ""))
    for key in ("curves_png", "metrics_jsonl", "log"):
        if key in s:
            lines.append(f"{key.replace('_', '.', 1) if key != 'log' else 'logs'}: {s[key]}")
    return "\n".join(lines)
