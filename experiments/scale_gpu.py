"""The GPU section of ``experiments/scale.py`` (stage ``gpu``): does the toolkit keep a GPU busy?

On the corpus of the size being run (its first ``--gpu-utts`` utterances), one whole epoch:

- ``gpu ours <dtype>``: our training loop (``train.loop.run_epoch``) on our loader
  (``laplace:8`` batches of ``--gpu-max-frames`` padded frames, ``--gpu-workers`` workers,
  pinned memory) with our exact BLSTM (``--gpu-layers`` x ``--gpu-hidden``), fused Adam;
- ``gpu bare <dtype>``: a bare cuDNN loop on the same batches (taken from our loader once,
  untimed, and moved to the device before timing): one bidirectional ``nn.LSTM`` of the same
  size and a ``Linear``, cross-entropy, backward, fused Adam. Nothing else happens in it, so it
  is the upper bound for the model size; ``ratio`` = ours / bare (the target is >= 0.9);
- ``gpu loader w<N>``: our loader alone over the epoch with N workers (a GPU machine's cores
  less one): the frames per second it can feed.

``<dtype>`` is fp32, and bf16 (``torch.autocast``) where the device supports it. Real (not
padded) frames per second, peak device memory (``torch.cuda.max_memory_allocated``). Without
CUDA the stage prints nothing (``--gpu-device cpu`` runs it on the CPU, for the smoke test).

The GPU section alone, from the repository root (the corpus is generated and imported first):
``python -m experiments.scale --sizes 10000 --stages import,gpu``.
"""
from __future__ import annotations

import os
import time


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _adam(params):
    import torch

    try:
        return torch.optim.Adam(params, lr=1e-4, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=1e-4)


def _peak_mb(device):
    import torch

    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def _reset_peak(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


class BareBlstm:
    """One bidirectional cuDNN ``nn.LSTM`` and a ``Linear``: the bare loop's model."""

    def __init__(self, dim, num_pdfs, layers, hidden, device):
        from torch import nn

        self.lstm = nn.LSTM(dim, hidden, num_layers=layers, bidirectional=True,
                            batch_first=True).to(device)
        self.out = nn.Linear(2 * hidden, num_pdfs).to(device)

    def parameters(self):
        return list(self.lstm.parameters()) + list(self.out.parameters())

    def __call__(self, x):
        return self.out(self.lstm(x)[0])


def _bare_epoch(batches, a, dim, num_pdfs, device, amp: bool) -> dict:
    import torch
    import torch.nn.functional as F

    from hybridasr.features.transform import IGNORE_INDEX

    torch.manual_seed(a.seed)
    model = BareBlstm(dim, num_pdfs, a.gpu_layers, a.gpu_hidden, device)
    opt = _adam(model.parameters())
    ctx = torch.autocast(device.type, dtype=torch.bfloat16) if amp else None
    frames = 0
    _reset_peak(device)
    _sync(device)
    t0 = time.perf_counter()
    for x, y, n in batches:
        if ctx is not None:
            with ctx:
                logits = model(x)
        else:
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, num_pdfs), y.reshape(-1),
                               ignore_index=IGNORE_INDEX, reduction="sum") / n
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        frames += n
    _sync(device)
    secs = time.perf_counter() - t0
    return {"seconds": secs, "frames": frames, "frames_per_second": round(frames / secs),
            "peak_device_mb": _peak_mb(device)}


def _our_epoch(ds, cfg, a, dim, num_pdfs, device, amp: bool) -> dict:
    import torch

    from hybridasr.data.loader import make_batch_iterator
    from hybridasr.models import build_model
    from hybridasr.train.distributed import DistInfo
    from hybridasr.train.loop import run_epoch

    torch.manual_seed(a.seed)
    mcfg = {"model": "blstm", "num_layers": a.gpu_layers, "hidden_size": a.gpu_hidden,
            "proj_size": 0, "dropout": 0.0}
    model = build_model(mcfg, dim, num_pdfs).to(device)
    opt = _adam(model.parameters())
    info = DistInfo(device=device)
    _reset_peak(device)
    _sync(device)
    t0 = time.perf_counter()
    it = make_batch_iterator(ds, cfg, epoch=1, pin_memory=device.type == "cuda")
    s = run_epoch(model, it, info, optimizer=opt, amp="bf16" if amp else "none",
                  progress_every=0)
    _sync(device)
    secs = time.perf_counter() - t0
    return {"seconds": secs, "frames": int(s.frames), "frames_per_second": round(s.frames / secs),
            "batches": s.batches, "peak_device_mb": _peak_mb(device)}


def gpu_rows(d: str, a, dataset) -> list:
    """The stage's rows (empty without CUDA unless ``--gpu-device cpu``)."""
    import torch

    from hybridasr.data.loader import make_batch_iterator

    if a.gpu_device == "cuda" and not torch.cuda.is_available():
        return []
    device = torch.device(a.gpu_device)
    workers = a.gpu_workers if a.gpu_workers >= 0 else max(0, (os.cpu_count() or 1) - 1)
    ds, cfg = dataset(d, seq_ordering="laplace:8", max_frames=a.gpu_max_frames,
                      num_workers=workers, seed=a.seed)
    keep = set(ds.keys[:a.gpu_utts])
    ds.keys = [k for k in ds.keys if k in keep]
    ds.lengths = {k: n for k, n in ds.lengths.items() if k in keep}
    dim = ds.feature_dim()
    num_pdfs = a.pdfs
    rows = []
    t0 = time.perf_counter()
    frames = 0
    batches = []
    for b in make_batch_iterator(ds, cfg, epoch=1):
        frames += int(b.num_real_frames)
        batches.append(b)
    secs = time.perf_counter() - t0
    rows.append({"stage": f"gpu loader w{workers}", "seconds": secs, "frames": frames,
                 "frames_per_second": round(frames / secs), "batches": len(batches)})
    on_device = [(b.feats.to(device), b.targets.to(device), int(b.num_real_frames))
                 for b in batches]
    del batches
    dtypes = ["fp32"]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():  # oneDNN: no bf16 LSTM
        dtypes.append("bf16")
    machine = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    for dt in dtypes:
        amp = dt == "bf16"
        ours = _our_epoch(ds, cfg, a, dim, num_pdfs, device, amp)
        bare = _bare_epoch(on_device, a, dim, num_pdfs, device, amp)
        model = f"blstm {a.gpu_layers}x{a.gpu_hidden}"
        rows.append({"stage": f"gpu ours {dt}", **ours, "model": model, "device": machine,
                     "utts": len(ds)})
        rows.append({"stage": f"gpu bare {dt}", **bare, "model": model, "device": machine,
                     "ratio": round(ours["frames_per_second"] / bare["frames_per_second"], 3)})
    return rows


def add_arguments(p) -> None:
    p.add_argument("--gpu-device", default="cuda", help="stage gpu's device (cpu: smoke test)")
    p.add_argument("--gpu-utts", type=int, default=5000, help="stage gpu: utterances (epoch)")
    p.add_argument("--gpu-max-frames", type=int, default=20000, help="stage gpu: batch budget")
    p.add_argument("--gpu-layers", type=int, default=3)
    p.add_argument("--gpu-hidden", type=int, default=512)
    p.add_argument("--gpu-workers", type=int, default=-1,
                   help="stage gpu: loader workers (-1: the machine's cores less one)")
