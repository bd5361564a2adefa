#!/usr/bin/env python3
"""Training speed of batching strategies for CTC (Khomenko et al.'s LSTM+CTC setting) and,
in the same run, for frame cross-entropy: the optimal-bucket speed-up against random batching.

Writes ``bench/pipeline.py``'s synthetic corpus (compressed 40-dim features, log-normal
lengths, mean 700 frames, sd 300) and trains one epoch over it per (objective, strategy) with
the toolkit's loop (``hybridasr.train.loop.run_epoch``), the same BLSTM from the same seed,
``--stack-frames=3 --subsample=3``, Adam, ``--max-frames`` padded frames a batch:

* ``ce``: frame cross-entropy against random targets over 500 pdfs;
* ``ctc``: ``hybridasr.train.ctc.CtcObjective`` against random unit sequences over 100 units,
  one unit per 4 output frames (blank 0 never a target).

Prints one JSON line per (objective, strategy)::

    {"objective": "ctc", "strategy": "optimal_buckets:6", "seconds": ..., "frames_per_s": ...,
     "padding_ratio": ..., "num_batches": ..., "speedup_vs_random": seconds(random) / seconds}

the baseline, ``random`` batching of the same objective, measured first in the same run.
Defaults (200 utterances, 2 x 128 BLSTM) take a few minutes on one CPU core; ``--device=cuda
--utts 2000 --hidden 512 --layers 3`` on a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import numpy as np
import torch

from pipeline import write_corpus  # bench/ is the script's dir: on sys.path  # noqa: E402

from hybridasr.data.config import DataConfig  # noqa: E402
from hybridasr.data.dataset import UtteranceDataset  # noqa: E402
from hybridasr.data.loader import make_batch_iterator  # noqa: E402
from hybridasr.features.transform import FeatureTransform  # noqa: E402
from hybridasr.models.factory import build_model  # noqa: E402
from hybridasr.train.ctc import CtcObjective  # noqa: E402
from hybridasr.train.distributed import init_distributed  # noqa: E402
from hybridasr.train.loop import run_epoch  # noqa: E402

DIM, NUM_PDFS, NUM_UNITS = 40, 500, 100
STRATEGIES = ("random", "sorted", "laplace:8", "optimal_buckets:6")


def one_epoch(ds, strategy, objective, args, num_outputs, info) -> dict:
    cfg = DataConfig.from_dict(dict(seq_ordering=strategy, max_frames=args.max_frames,
                                    seed=1, stack_frames=3, subsample=3, num_workers=0))
    torch.manual_seed(1)
    model = build_model({"model": "blstm", "num_layers": args.layers,
                         "hidden_size": args.hidden, "dropout": 0.0},
                        ds.transform.output_dim(DIM), num_outputs).to(info.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    it = make_batch_iterator(ds, cfg, epoch=1)
    plan = it.stats()
    t0 = time.perf_counter()
    s = run_epoch(model, it, info, optimizer=opt, total_batches=len(it), progress_every=0,
                  objective=objective)
    sec = time.perf_counter() - t0
    return {"seconds": round(sec, 3), "frames_per_s": round(s.frames / sec, 1),
            "padding_ratio": round(plan.get("padding_ratio") or 0.0, 4),
            "num_batches": s.batches, "loss": round(s.loss, 4)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--objective", default="both", choices=("ce", "ctc", "both"))
    p.add_argument("--utts", type=int, default=200)
    p.add_argument("--max-frames", type=int, default=5000, help="padded input frames a batch")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    info = init_distributed(a.device, "none")
    objectives = ("ce", "ctc") if a.objective == "both" else (a.objective,)
    with tempfile.TemporaryDirectory() as d:
        feats, targets = write_corpus(d, a.utts, DIM, NUM_PDFS, seed=1)
        t = FeatureTransform(norm_means=False, stack_frames=3, subsample=3)
        for obj_name in objectives:
            if obj_name == "ce":
                ds, objective, n_out = UtteranceDataset(feats, targets, transform=t), None, \
                    NUM_PDFS
            else:
                ds = UtteranceDataset(feats, None, transform=t)
                rng = np.random.default_rng(2)
                units = {k: rng.integers(1, NUM_UNITS, max(1, n // 4)).astype(np.int64)
                         for k, n in ds.output_lengths.items()}
                objective, n_out = CtcObjective(units), NUM_UNITS
            base = None
            for strategy in a.strategies.split(","):
                r = one_epoch(ds, strategy, objective, a, n_out, info)
                base = base or r["seconds"]
                print(json.dumps({"objective": obj_name, "strategy": strategy, **r,
                                  "speedup_vs_random": round(base / r["seconds"], 3),
                                  "utts": a.utts, "model": f"blstm-{a.layers}x{a.hidden}",
                                  "device": a.device}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
