#!/usr/bin/env python3
"""One BLSTM training epoch on real padded batches: our trainer against RETURNN's PyTorch
backend, on the same data, ordering, batch size and model, in the same run.

Writes ``bench/pipeline.py``'s synthetic corpus (compressed features, log-normal lengths,
mean 700 frames, sd 300, 40 dims, random targets over 2,000 pdfs) as a Kaldi data dir that
is also an imported alignment dir, then

* **ours**: ``pybin/train.py`` for one epoch (``--lr-schedule=constant --max-iters=1``),
  3 x 512 BLSTM, Adam, ``--seq-ordering=laplace:.K --max-frames=5000``; the figure is the
  epoch's real frames/s from ``metrics.jsonl``;
* **returnn** (when ``returnn`` imports, or ``--returnn-path`` points at it): RETURNN's
  torch engine reading the same matrices from an ``HDFDataset`` (written before the timed
  epoch by RETURNN's ``SimpleHDFWriter``; read without its cache), ``seq_ordering=laplace:.K``,
  ``batch_size=5000`` (padded frames, as ours), fused Adam, and *our* BLSTM module as the
  model (``get_model``), the loss marked per frame with ``use_normalized_loss``; the figure
  is real frames over the wall time of ``Engine.train_epoch()``.

Prints one JSON line::

    {"model": "blstm-3x512", "ours_fps": ..., "returnn_fps": ..., "ratio": ours/returnn, ...}

(``returnn_fps`` and ``ratio`` are null, with ``returnn_error`` saying why, when RETURNN is
not there: it is not a dependency of hybridasr; ``pip install --target DIR --no-deps returnn
dm-tree h5py`` and pass ``--returnn-path DIR``.) The default size (60 utterances) runs in
about 2 minutes on 2 CPU cores; ``--utts 200`` is the larger setup of the throughput target.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from pipeline import write_corpus

DIM, NUM_PDFS = 40, 2000
MODEL = {"model": "blstm", "num_layers": 3, "hidden_size": 512, "proj_size": 0,
         "dropout": 0.0}

RETURNN_CONFIG = '''#!rnn.py
# written by hybridasr bench/train_epoch.py
import numpy as np
import torch
import torch.nn.functional as F

backend = "torch"
device = {device!r}
task = "train"
log = [{log!r}]
log_verbosity = 3
model = {model!r}
num_epochs = 1
learning_rate = 1e-4
optimizer = {{"class": "adam", "fused": True}}
batch_size = {batch_frames}
max_seqs = {max_seqs}
extern_data = {{"data": {{"dim": {dim}}}, "classes": {{"dim": {num_pdfs}, "sparse": True}}}}


# cache_byte_size=0: no CachedDataset cache, as RETURNN's maintainers advise for the torch
# engine (its default cache, 70% of free memory, failed one run here: "failed to get data
# for seq 41")
train = {{"class": "HDFDataset", "files": [{hdf!r}], "use_cache_manager": False,
          "cache_byte_size": 0, "seq_ordering": {seq_ordering!r}}}


def get_model(*, epoch, step, **_kwargs):
    from hybridasr.models import build_model
    torch.manual_seed(0)
    return build_model({model_config!r}, {dim}, {num_pdfs})


def train_step(*, model, extern_data, **_kwargs):
    import returnn.frontend as rf
    data = extern_data["data"]
    x = data.raw_tensor
    lengths = data.dims[1].dyn_size_ext.raw_tensor.cpu()
    y = extern_data["classes"].raw_tensor.long()
    logits = model(x, lengths)
    loss = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")  # [B, T]
    rf.get_run_ctx().mark_as_loss(loss, "ce", dims=data.dims[:2], use_normalized_loss=True)
'''

RETURNN_DRIVER = '''
import json, sys, time
import kaldiio
import numpy as np
import torch
torch.set_num_threads({threads})
from returnn.datasets.hdf import SimpleHDFWriter
feats = kaldiio.load_scp({feats!r})
targets = kaldiio.load_scp({targets!r})
frames = 0
writer = SimpleHDFWriter({hdf!r}, dim={dim}, extra_type={{"classes": ({num_pdfs}, 1, "int32")}})
for key in feats:
    x = np.asarray(feats[key], dtype=np.float32)
    y = np.asarray(targets[key], dtype=np.int32)
    writer.insert_batch(x[None], [len(x)], [key], extra={{"classes": y[None]}})
    frames += len(x)
writer.close()
import returnn.__main__ as rnn
rnn.init(config_filename={config!r}, command_line_options=[])
engine = rnn.engine
engine.init_train_from_config(rnn.config, rnn.train_data, None, None)
engine.set_epoch(1)
engine.init_train_epoch()
t0 = time.perf_counter()
engine.train_epoch()
seconds = time.perf_counter() - t0
with open({result!r}, "w") as f:
    json.dump({{"seconds": seconds, "frames": frames, "steps": engine.global_train_step}}, f)
'''


def make_dirs(d: str, num_utts: int, seed: int) -> str:
    """``bench/pipeline.py``'s corpus in ``d``, made a data dir (utt2spk, spk2utt: a speaker
    per utterance) and an imported alignment dir (targets.scp, num_pdfs) at once."""
    os.makedirs(d)
    feats_scp, _ = write_corpus(d, num_utts, DIM, NUM_PDFS, seed)
    with open(feats_scp, encoding="utf-8") as f:
        keys = [line.split(" ", 1)[0] for line in f]
    for name in ("utt2spk", "spk2utt"):
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.writelines(f"{k} {k}\n" for k in keys)
    with open(os.path.join(d, "num_pdfs"), "w", encoding="utf-8") as f:
        f.write(f"{NUM_PDFS}\n")
    return d


def run_ours(d: str, a, tr: str, cv: str) -> dict:
    exp = os.path.join(d, "exp_ours")
    model = [f"--{k.replace('_', '-')}={v}" for k, v in MODEL.items()]
    cmd = [sys.executable, os.path.join(REPO, "pybin", "train.py"), *model,
           f"--batching-config={REPO}/conf/batching/laplace.conf",
           f"--seq-ordering={a.seq_ordering}", f"--max-frames={a.batch_frames}",
           f"--max-seqs={a.max_seqs}", "--max-seq-length=0", f"--num-workers={a.num_workers}",
           "--norm-means=false", "--optimizer=adam", "--learning-rate=1e-4",
           "--lr-schedule=constant", "--max-iters=1", f"--num-threads={a.threads}",
           f"--device={a.device}", tr, cv, tr, cv, exp]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"our trainer failed (rc {res.returncode}):\n{res.stderr[-3000:]}")
    with open(os.path.join(exp, "metrics.jsonl"), encoding="utf-8") as f:
        epochs = [json.loads(line) for line in f if line.strip()]
    ep = [e for e in epochs if e.get("epoch") == 1][-1]
    return {"fps": ep["frames_per_s"], "seconds": ep["seconds"], "frames": ep["train_frames"],
            "batches": ep.get("batches"), "process_s": wall}


def run_returnn(d: str, a, tr: str) -> dict:
    rdir = os.path.join(d, "returnn")
    os.makedirs(rdir)
    config = os.path.join(rdir, "returnn.config")
    hdf = os.path.join(rdir, "train.hdf")
    with open(config, "w", encoding="utf-8") as f:
        f.write(RETURNN_CONFIG.format(
            device=a.device, log=os.path.join(rdir, "returnn.log"),
            model=os.path.join(rdir, "model"), batch_frames=a.batch_frames,
            max_seqs=a.max_seqs if a.max_seqs > 0 else -1, dim=DIM, num_pdfs=NUM_PDFS,
            hdf=hdf, seq_ordering=a.seq_ordering,
            model_config=MODEL))
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (a.returnn_path, REPO,
                                                    env.get("PYTHONPATH")) if p)
    result = os.path.join(rdir, "result.json")
    driver = RETURNN_DRIVER.format(threads=a.threads, config=config, hdf=hdf, dim=DIM,
                                   result=result,
                                   num_pdfs=NUM_PDFS, feats=os.path.join(tr, "feats.scp"),
                                   targets=os.path.join(tr, "targets.scp"))
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                         env=env, cwd=rdir)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        tail = ((res.stderr or res.stdout).strip().splitlines() or ["?"])[-1][:300]
        where = f"; its log is in {rdir}" if a.keep else " (--keep keeps its log)"
        return {"error": f"RETURNN failed (rc {res.returncode}): {tail}{where}"}
    with open(result, encoding="utf-8") as f:
        out = json.load(f)
    return {"fps": out["frames"] / out["seconds"], "seconds": out["seconds"],
            "frames": out["frames"], "batches": out["steps"], "process_s": wall}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--utts", type=int, default=60, help="training utterances")
    p.add_argument("--cv-utts", type=int, default=2)
    p.add_argument("--seq-ordering", default="laplace:.20",
                   help="the same string for both (RETURNN's syntax)")
    p.add_argument("--batch-frames", type=int, default=5000, help="padded frames per batch")
    p.add_argument("--max-seqs", type=int, default=0, help="0 = no limit")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--num-workers", type=int, default=1, help="our loader's workers")
    p.add_argument("--device", default="cpu")
    p.add_argument("--returnn-path", default="",
                   help="directory holding returnn, dm-tree and h5py "
                   "(pip install --target DIR --no-deps returnn dm-tree h5py)")
    p.add_argument("--skip-returnn", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the work dir (its path printed)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    d = tempfile.mkdtemp(prefix="bench_train_epoch.")
    try:
        tr = make_dirs(os.path.join(d, "train"), a.utts, a.seed)
        cv = make_dirs(os.path.join(d, "cv"), a.cv_utts, a.seed + 1)
        ours = run_ours(d, a, tr, cv)
        frames = ours["frames"]
        theirs = ({"error": "--skip-returnn"} if a.skip_returnn
                  else run_returnn(d, a, tr))
        rec = {"model": "blstm-3x512", "device": a.device, "utts": a.utts,
               "real_frames": frames, "seq_ordering": a.seq_ordering,
               "batch_frames": a.batch_frames,
               "ours_fps": round(ours["fps"], 1), "ours_epoch_s": round(ours["seconds"], 2),
               "ours_batches": ours["batches"], "ours_process_s": round(ours["process_s"], 1),
               "returnn_fps": None, "ratio": None}
        if "error" in theirs:
            rec["returnn_error"] = theirs["error"]
        else:
            rec.update(returnn_fps=round(theirs["fps"], 1),
                       returnn_epoch_s=round(theirs["seconds"], 2),
                       returnn_batches=theirs["batches"],
                       returnn_process_s=round(theirs["process_s"], 1),
                       ratio=round(ours["fps"] / theirs["fps"], 3))
            if theirs["frames"] != frames:  # our trainer's count against the HDF's
                rec["returnn_frames_mismatch"] = theirs["frames"]
        if a.keep:
            rec["work_dir"] = d
        print(json.dumps(rec), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
