#!/usr/bin/env python3
"""Data pipeline throughput against what a 3x512 BLSTM consumes, measured in the same run.

Writes a synthetic Kaldi feature archive (compressed like ``copy-feats --compress=true``;
log-normal lengths, mean 700 frames, sd 300, 40 dims) with frame targets, then times
(1) one epoch of ``make_batch_iterator`` (laplace:8 batches of 5,000 padded frames, in
process and with 2 background workers; also chunking, TBPTT and frame shuffling) and (2) forward + backward + Adam steps of a 3-layer 512-cell BLSTM (40 in, 2000 out;
backward direction by reversing each sequence within its length with ``torch.gather``) on
batches of the same pipeline. Prints JSON lines with frames per second of both and
``ratio_vs_blstm`` = pipeline / model (the goal: >= 10). Every other pipeline line also has
``ratio_vs_plain`` = its frames/s over plain batching's (``--seq-ordering``, the same 2
workers) in this run; the goal for chunking, which reads each utterance once and cuts its
chunks (frames counted as the model gets them, overlaps included): >= 1/1.5.
``utterance_frames_per_second`` counts every frame of the corpus once (chunks' overlaps not).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn

from hybridasr.data.config import DataConfig
from hybridasr.data.dataset import UtteranceDataset
from hybridasr.data.loader import make_batch_iterator
from hybridasr.features.transform import FeatureTransform
from hybridasr.kaldi.io.table_writer import ArkScpWriter


def write_corpus(d: str, num_utts: int, dim: int, num_targets: int, seed: int):
    rng = np.random.default_rng(seed)
    sigma2 = np.log(1 + (300 / 700) ** 2)
    lens = np.maximum(20, rng.lognormal(np.log(700) - sigma2 / 2, np.sqrt(sigma2), num_utts))
    feats, targets = os.path.join(d, "feats"), os.path.join(d, "targets")
    with ArkScpWriter(feats + ".ark", feats + ".scp", compression_method=2) as wf, \
            ArkScpWriter(targets + ".ark", targets + ".scp") as wt:
        for i, n in enumerate(lens.astype(int)):
            key = f"utt{i:05d}"
            wf.write(key, rng.normal(size=(n, dim)).astype(np.float32))
            wt.write(key, rng.integers(0, num_targets, n).astype(np.int32))
    return feats + ".scp", targets + ".scp"


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x [B, T, D]: each row's first lengths[b] frames reversed, padding left in place."""
    T = x.shape[1]
    t = torch.arange(T, device=x.device)[None, :]
    idx = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return x.gather(1, idx[:, :, None].expand_as(x))


class Blstm(nn.Module):
    def __init__(self, dim_in: int, hidden: int, layers: int, dim_out: int):
        super().__init__()
        self.fw = nn.ModuleList()
        self.bw = nn.ModuleList()
        d = dim_in
        for _ in range(layers):
            self.fw.append(nn.LSTM(d, hidden, batch_first=True))
            self.bw.append(nn.LSTM(d, hidden, batch_first=True))
            d = 2 * hidden
        self.out = nn.Linear(d, dim_out)

    def forward(self, x, lengths):
        for fw, bw in zip(self.fw, self.bw):
            f, _ = fw(x)
            b, _ = bw(reverse_within_length(x, lengths))
            x = torch.cat([f, reverse_within_length(b, lengths)], dim=-1)
        return self.out(x)


def time_pipeline(ds, cfg, epoch):
    t0 = time.perf_counter()
    frames = batches = 0
    for b in make_batch_iterator(ds, cfg, epoch):
        frames += b.num_real_frames
        batches += 1
    return frames, batches, time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-utts", type=int, default=300)
    p.add_argument("--dim", type=int, default=40)
    p.add_argument("--num-targets", type=int, default=2000)
    p.add_argument("--max-frames", type=int, default=5000)
    p.add_argument("--seq-ordering", default="laplace:8")
    p.add_argument("--splice", type=int, default=0)
    p.add_argument("--model-steps", type=int, default=2, help="timed BLSTM steps (+1 warm-up)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        feats, targets = write_corpus(d, a.num_utts, a.dim, a.num_targets, a.seed)
        results = []
        base = dict(max_frames=a.max_frames, splice=a.splice, seed=a.seed)
        variants = [(f"{a.seq_ordering} num_workers=0", dict(seq_ordering=a.seq_ordering,
                                                             num_workers=0)),
                    (f"{a.seq_ordering} num_workers=2", dict(seq_ordering=a.seq_ordering)),
                    ("chunking=100:50", dict(chunking="100:50")),
                    ("tbptt=64:20", dict(seq_ordering="tbptt:64:20", max_frames=1280)),
                    ("frame_shuffle 256", dict(seq_ordering="frame_shuffle", max_frames=256))]
        for label, kw in variants:
            cfg = DataConfig.from_dict({**base, **kw})
            ds = UtteranceDataset(feats, targets,
                                  transform=FeatureTransform.from_options(cfg.transform))
            frames, batches, secs = time_pipeline(ds, cfg, epoch=1)
            results.append({"what": f"pipeline {label}", "frames": frames,
                            "batches": batches, "seconds": round(secs, 3),
                            "frames_per_second": round(frames / secs),
                            "utterance_frames_per_second": round(
                                sum(ds.output_lengths.values()) / secs)})
        cfg = DataConfig.from_dict({**base, "seq_ordering": a.seq_ordering})
        ds = UtteranceDataset(feats, targets,
                              transform=FeatureTransform.from_options(cfg.transform))
        torch.manual_seed(a.seed)
        dim_in = ds.transform.output_dim(a.dim)
        model = Blstm(dim_in, 512, 3, a.num_targets)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
        it = iter(make_batch_iterator(ds, cfg, epoch=2))
        frames, secs = 0, 0.0
        for step in range(a.model_steps + 1):
            b = next(it)
            t0 = time.perf_counter()
            out = model(b.feats, b.lengths)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), b.targets.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step:  # the first step warms up
                secs += time.perf_counter() - t0
                frames += b.num_real_frames
        model_fps = frames / secs
        results.append({"what": "blstm 3x512 fwd+bwd+adam (cpu)", "frames": frames,
                        "seconds": round(secs, 3), "frames_per_second": round(model_fps),
                        "torch_threads": torch.get_num_threads()})
        plain = results[1]["frames_per_second"]  # --seq-ordering with 2 workers
        for r in results:
            if r["what"].startswith("pipeline"):
                r["ratio_vs_blstm"] = round(r["frames_per_second"] / model_fps, 1)
                if r is not results[1]:
                    r["ratio_vs_plain"] = round(r["frames_per_second"] / plain, 3)
            print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
