#!/usr/bin/env python3
"""Training throughput (frames/s): our models in our training loop vs a bare PyTorch loop.

Prints one JSON line per model::

    {"model": "blstm", "ours_fps": ..., "bare_fps": ..., "ratio": ...}

``bare_fps``: forward + frame cross-entropy + backward + Adam step on fixed padded tensors with
plain torch modules (``nn.LSTM(bidirectional=True)`` 3 x 512, 40 -> 2000, which is *not* exact
on padded batches; ``nn.Sequential`` MLP 440 -> 3 x 1024 sigmoid -> 2000), fused Adam where
the build has it. ``ours_fps``: the same tensors through ``ours_fps()`` (see there); ``ratio``
= ours / bare (null when ours is). ``model_fps`` is our model in the bare loop, separating the
model's cost (the exact BLSTM) from the training loop's.

``--variants`` also times the BLSTM layouts that are exact on padded batches against the
inexact bare one: a separate forward/backward ``nn.LSTM`` pair per layer with the backward
input reversed within each length (ours), and one bidirectional ``nn.LSTM`` per layer fed
left- and right-aligned copies stacked on the batch axis (2B rows).

Defaults are small (a few steps) so that it runs in a few minutes on 2 CPU cores; use
``--device=cuda --steps=50 --batch=32 --frames=800`` on a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

NUM_PDFS = 2000
SETUPS = {  # model config, input dim, (rows, frames) of one batch: frame-shuffled for the mlp
    "blstm": ({"model": "blstm", "num_layers": 3, "hidden_size": 512, "proj_size": 0,
               "dropout": 0.0}, 40),
    "mlp": ({"model": "mlp", "num_layers": 3, "hidden_size": 1024, "activation": "sigmoid",
             "dropout": 0.0}, 440),
}


def adam(params, lr=1e-4):
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=lr)


def fixed_batch(name, args, device):
    """(x [B, T, D], lengths [B] on the CPU, targets [B, T] with -100 in the padding)."""
    g = torch.Generator().manual_seed(0)
    dim = SETUPS[name][1]
    if name == "mlp":
        B, T = args.mlp_batch, 1
        lengths = torch.ones(B, dtype=torch.int64)
    else:
        B, T = args.batch, args.frames
        lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
        lengths[0] = T
    x = torch.randn(B, T, dim, generator=g)
    y = torch.randint(0, NUM_PDFS, (B, T), generator=g)
    pad = torch.arange(T).unsqueeze(0) >= lengths.unsqueeze(1)
    x[pad] = 0.0
    y[pad] = -100
    return x.to(device), lengths, y.to(device)


class BareBlstm(nn.Module):
    def __init__(self, dim, layers=3, hidden=512):
        super().__init__()
        self.lstm = nn.LSTM(dim, hidden, num_layers=layers, batch_first=True,
                            bidirectional=True)
        self.output = nn.Linear(2 * hidden, NUM_PDFS)

    def forward(self, x, lengths=None):
        return self.output(self.lstm(x)[0])


class DoubledBlstm(nn.Module):
    """Exact BLSTM from one bidirectional nn.LSTM per layer: rows 0..B-1 left-aligned (its
    forward direction), rows B..2B-1 right-aligned (its backward direction)."""

    def __init__(self, dim, layers=3, hidden=512):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.LSTM(dim if i == 0 else 2 * hidden, hidden, batch_first=True, bidirectional=True)
            for i in range(layers))
        self.hidden = hidden
        self.output = nn.Linear(2 * hidden, NUM_PDFS)

    def forward(self, x, lengths):
        B, T = x.shape[:2]
        t = torch.arange(T).unsqueeze(0)
        shift = (T - lengths).unsqueeze(1)
        right = ((t - shift) % T).to(x.device)
        left = ((t + shift) % T).to(x.device)

        def gather(a, idx):
            return torch.gather(a, 1, idx.unsqueeze(-1).expand(-1, -1, a.shape[-1]))

        H = self.hidden
        for lstm in self.layers:
            out, _ = lstm(torch.cat([x, gather(x, right)], 0))
            x = torch.cat([out[:B, :, :H], gather(out[B:, :, H:], left)], -1)
        return self.output(x)


def bare_model(name, device):
    dim = SETUPS[name][1]
    if name == "blstm":
        return BareBlstm(dim).to(device)
    layers, d = [], dim
    for _ in range(3):
        layers += [nn.Linear(d, 1024), nn.Sigmoid()]
        d = 1024
    layers.append(nn.Linear(d, NUM_PDFS))
    return nn.Sequential(*layers).to(device)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bare_loop_fps(model, batch, steps: int, warmup: int, device) -> float:
    """Frames/s of forward + CE (summed over real frames / frames) + backward + Adam step."""
    x, lengths, y = batch
    opt = adam(model.parameters())
    frames = int(lengths.sum())
    takes_lengths = not isinstance(model, nn.Sequential)

    def step():
        out = model(x, lengths) if takes_lengths else model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1),
                               ignore_index=-100, reduction="sum") / frames
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    model.train()
    for _ in range(warmup):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    return frames * steps / (time.perf_counter() - t0)


def ours_fps(model_name: str, batch, steps: int, warmup: int, device):
    """Frames/s of our model trained by our training loop (``run_epoch``, the trainer's
    inner loop: device transfer, autocast, loss over real frames, clipping, on-device
    accumulation of the epoch's statistics) on the same fixed batch; None when the trainer
    is not there. The whole trainer (loader workers, batching, CV pass, checkpoints) on real
    padded batches is timed by ``bench/train_epoch.py``.
    """
    try:
        import hybridasr.train.trainer  # noqa: F401
        from hybridasr.data.batch import Batch
        from hybridasr.train.distributed import DistInfo
        from hybridasr.train.loop import run_epoch
    except ImportError:
        return None
    from hybridasr.models import build_model

    config, dim = SETUPS[model_name]
    torch.manual_seed(0)
    model = build_model(config, dim, NUM_PDFS).to(device)
    opt = adam(model.parameters())
    x, lengths, y = batch
    b = Batch(x.cpu(), y.cpu(), lengths, [f"u{i}" for i in range(len(lengths))])
    if device.type == "cuda":  # as the trainer's loader delivers batches for a GPU
        b = b.pin_memory()
    info = DistInfo(0, 1, 0, device)
    run_epoch(model, [b] * warmup, info, optimizer=opt, progress_every=0)
    stats = run_epoch(model, [b] * steps, info, optimizer=opt, progress_every=0)
    return stats.frames_per_second


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="blstm,mlp")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=8, help="BLSTM rows per batch")
    p.add_argument("--frames", type=int, default=200, help="BLSTM longest row (frames)")
    p.add_argument("--mlp-batch", type=int, default=1024, help="MLP frames per batch")
    p.add_argument("--mlp-steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds; best of each")
    p.add_argument("--variants", action="store_true", help="also time exact BLSTM layouts")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    from hybridasr.models import build_model

    for name in args.models.split(","):
        steps = args.mlp_steps if name == "mlp" else args.steps
        batch = fixed_batch(name, args, device)
        torch.manual_seed(0)
        # rounds alternate the loops and keep each one's best, so that a noisy machine
        # (other processes on 2 cores) does not favour whichever ran in a quiet moment
        bare = ours = None
        config, dim = SETUPS[name]
        torch.manual_seed(0)
        mine = build_model(config, dim, NUM_PDFS).to(device)
        model_fps = 0.0
        for _ in range(args.rounds):
            torch.manual_seed(0)
            b = bare_loop_fps(bare_model(name, device), batch, steps, args.warmup, device)
            o = ours_fps(name, batch, steps, args.warmup, device)
            m = bare_loop_fps(mine, batch, steps, args.warmup, device)
            bare = b if bare is None else max(bare, b)
            ours = o if o is None or ours is None else max(ours, o)
            model_fps = max(model_fps, m)
        rec = {"model": name, "ours_fps": None if ours is None else round(ours, 1),
               "bare_fps": round(bare, 1), "ratio": None if ours is None else
               round(ours / bare, 3), "model_fps": round(model_fps, 1),
               "device": str(device), "steps": steps,
               "batch": list(batch[0].shape[:2]), "real_frames": int(batch[1].sum())}
        print(json.dumps(rec), flush=True)
        if name == "blstm" and args.variants:
            torch.manual_seed(0)
            dbl = bare_loop_fps(DoubledBlstm(dim).to(device), batch, steps, args.warmup,
                                device)
            rec = {"model": "blstm-variants", "separate_pair_exact_fps": round(model_fps, 1),
                   "bidir_doubled_exact_fps": round(dbl, 1),
                   "bidir_padded_inexact_fps": round(bare, 1), "device": str(device)}
            print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
