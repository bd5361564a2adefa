"""LVCSR scale: seconds and peak RSS of every stage at growing corpus sizes.

For each size a synthetic corpus shaped like an LVCSR one is written with the toolkit's own
writers: log-normal lengths (mean 700 frames, sd 300), 40-dim features compressed as
``copy-feats --compress=true`` writes them (``MatrixWriter`` bytes, compression method 1; one
random matrix per distinct length, its compressed bytes reused for every utterance of that
length), a data dir (``feats.scp``, ``utt2num_frames``, ``utt2spk``, ``spk2utt``, ``text``), a
context-dependent TransitionModel (3-state HMMs, ``--pdfs`` pdfs spread over ``--phones``
phones, each phone with context variants that are chains of three pdfs) written by
``kaldi.transition_model.write_transition_model``, and alignments consistent with it (phones
of >= 3 frames, each state's frames self-loops then the forward transition) split into
``ali.1.gz`` .. ``ali.<nj>.gz`` through ``ark:| gzip -c > ali.JOB.gz`` pipes, as Kaldi's align
scripts write them. Then each stage runs in a fresh process (``--in-process``: all in this one),
so that its peak RSS belongs to it and to this size:

- ``import``: ``import_alignments`` (the ali dir and the data dir -> targets, counts);
- ``first_batch``: dataset start-up to the first batch (``UtteranceDataset`` over the data dir
  and the imported targets, ``laplace:8`` batches of ``--max-frames``, 2 loader workers);
- ``plan <strategy>``: ``plan_epoch`` of one epoch, for each strategy (one process for all;
  the best of ``--plan-repeats`` runs);
- ``loader_w0``, ``loader_w2``: one whole epoch of ``make_batch_iterator`` (dataset built
  first, not timed), with 0 and 2 workers: frames per second;
- ``train``: the training process: the real ``Trainer`` set up on the whole corpus (training
  set) and the fixed test set (cross-validation set), then ``--train-batches`` training steps
  of ``run_epoch`` on its loader (2 workers) with a small MLP (2x256, ``--pdfs`` outputs):
  ``seconds`` is set-up plus the wait for the first batch (``startup_seconds`` and
  ``first_batch_seconds``; torch's imports, the first optimizer's included, come before and
  are not counted), ``steps_seconds`` the steps after it; ``peak_rss_mb`` is the
  training process's (workers apart, as ``peak_rss_children_mb``);
- ``forward``: a small MLP (2x256) forwarded over a fixed test set of ``--decode-utts``
  utterances spread over the corpus (their ``feats.scp`` lines point into the big ark), priors
  from the import's counts, written as a log-likelihood ark with ``MatrixWriter``;
- ``decode``: the embedded decoder (``decode_table``, ``MappedDecoder``) on that ark, with a
  phone-loop graph over the model's context variants built with kaldifst (words = phones).
  The network is untrained: this times the search, its output means nothing;
- ``gpu`` (with CUDA): our whole training epoch against a bare cuDNN loop on the same batches
  (fp32, bf16) and the loader's frames/s with a GPU machine's workers: ``scale_gpu``.

One JSON line per (size, stage): ``seconds``, ``peak_rss_mb`` (the stage process's
``ru_maxrss``; ``peak_rss_children_mb`` with workers), and, from the second size on,
``exponent`` = log(t / t_prev) / log(n / n_prev) against the previous size of this run and
``ratio_vs_linear`` = t / (t_prev * n / n_prev): the baseline is the same stage at the previous
size, scaled linearly. forward and decode handle a fixed number of utterances (their exponent
should be ~0). Generation time is reported as stage ``generate`` (not part of the toolkit).
``--write-doc docs/performance.md`` writes a markdown table of the run, naming the machine.

Usage (from the repository root):
       python -m experiments.scale [--sizes 1000,3000,10000] [--pdfs 4000] [--work-dir DIR --keep]
e.g.: python -m experiments.scale --sizes 1000,10000,100000 --write-doc docs/performance.md
      python -m experiments.scale --sizes 10000 --stages import,gpu   # the GPU section alone
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from experiments.scale_corpus import generate, make_transition_model, phone_loop_graph
from experiments.scale_gpu import add_arguments as add_gpu_arguments, gpu_rows
from experiments.scale_report import write_doc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STAGES = ("import", "first_batch", "plan", "loader_w0", "loader_w2", "train", "forward",
          "decode", "gpu")
# (label, DataConfig values): every registered strategy, as bench/batching.py runs them
STRATEGIES = [
    ("random", {}), ("sorted", {}), ("sorted_reverse", {}),
    ("bucketing", {"bucket_width": 250}), ("laplace:8", {}), ("optimal_buckets:6", {}),
    ("random chunking=500:250", {"seq_ordering": "random", "chunking": "500:250"}),
    ("tbptt=64:20", {"seq_ordering": "tbptt:64:20", "max_frames": 0}),
    ("frame_shuffle", {"max_frames": 256}),
]


def _rss_mb(who=resource.RUSAGE_SELF) -> float:
    """Peak RSS in MB: this process's VmHWM (ru_maxrss of a child started by fork+exec keeps
    the parent's peak at the fork), or the largest child's ru_maxrss."""
    if who == resource.RUSAGE_SELF:
        try:
            with open("/proc/self/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return round(int(line.split()[1]) / 1024.0, 1)
        except OSError:
            pass
    return round(resource.getrusage(who).ru_maxrss / 1024.0, 1)  # kB on Linux


# ---------------------------------------------------------------- the synthetic corpus
# ---------------------------------------------------------------- the stages
def _paths(d):
    return (os.path.join(d, "data"), os.path.join(d, "ali"), os.path.join(d, "import"))


def _dataset(d, **kw):
    from hybridasr.data.config import DataConfig
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.features.transform import FeatureTransform

    data, _, imp = _paths(d)
    cfg = DataConfig.from_dict(kw)
    ds = UtteranceDataset.from_data_dir(data, os.path.join(imp, "targets.scp"),
                                        transform=FeatureTransform.from_options(cfg.transform),
                                        use_cmvn=False,
                                        target_lengths=os.path.join(imp, "target_lengths"))
    return ds, cfg


def _train_stage(d, a) -> dict:
    """The training process at this size: set-up, first batch, ``--train-batches`` steps."""
    import itertools

    import torch

    from hybridasr.data.config import DataConfig
    from hybridasr.data.loader import make_batch_iterator
    from hybridasr.models import build_model
    from hybridasr.train.loop import run_epoch
    from hybridasr.train.options import TrainConfig
    from hybridasr.train.optimizer import make_optimizer
    from hybridasr.train.trainer import Trainer, TrainInputs

    data, _, imp = _paths(d)
    torch.set_num_threads(1)
    t_import = time.perf_counter()
    make_optimizer(torch.nn.Linear(1, 1), TrainConfig(device="cpu"), 1e-3)  # imports dynamo
    t0 = time.perf_counter()
    t_import = t0 - t_import
    dcfg = DataConfig.from_dict(dict(seq_ordering="laplace:8", max_frames=a.max_frames,
                                     num_workers=2, seed=a.seed, norm_means=False))
    mcfg = {"model": "mlp", "num_layers": 2, "hidden_size": 256, "activation": "relu"}
    inputs = TrainInputs(data, os.path.join(data, "test"), imp, imp, os.path.join(d, "exp"))
    trainer = Trainer(inputs, dcfg, mcfg, TrainConfig(device="cpu"), schedule=None)
    model = build_model(mcfg, trainer.input_dim, trainer.num_pdfs)
    optimizer = make_optimizer(model, trainer.tcfg, 1e-3)
    t_setup = time.perf_counter() - t0
    it = iter(make_batch_iterator(trainer.tr, dcfg, epoch=1))
    first = next(it)
    t_first = time.perf_counter() - t0 - t_setup
    t1 = time.perf_counter()
    s = run_epoch(model, itertools.islice(itertools.chain([first], it), a.train_batches),
                  trainer.info, optimizer=optimizer, progress_every=0)
    return {"stage": "train", "seconds": t_setup + t_first, "startup_seconds": t_setup,
            "optimizer_import_seconds": t_import,
            "first_batch_seconds": t_first, "steps_seconds": time.perf_counter() - t1,
            "steps": s.batches, "frames": int(s.frames), "train_utts": len(trainer.tr),
            "cv_utts": len(trainer.cv), "model": "mlp 2x256"}


def run_stage(stage: str, d: str, a) -> list:
    """Runs one stage on corpus dir d; returns result dicts (without size/exponent)."""
    data, ali, imp = _paths(d)
    out = []
    if stage == "import":
        from hybridasr.align.importer import import_alignments

        t0 = time.perf_counter()
        rep = import_alignments(ali, data, imp)
        out.append({"stage": stage, "seconds": time.perf_counter() - t0,
                    "frames": rep.frames_imported})
    elif stage == "first_batch":
        from hybridasr.data.loader import make_batch_iterator

        t0 = time.perf_counter()
        ds, cfg = _dataset(d, seq_ordering="laplace:8", max_frames=a.max_frames, num_workers=2,
                           seed=a.seed)
        t_ds = time.perf_counter() - t0
        it = iter(make_batch_iterator(ds, cfg, epoch=1))
        b = next(it)
        secs = time.perf_counter() - t0
        out.append({"stage": stage, "seconds": secs, "dataset_seconds": t_ds,
                    "num_workers": 2, "batch_frames": int(b.num_real_frames)})
        del it
    elif stage == "plan":
        from hybridasr.data.config import DataConfig
        from hybridasr.data.epoch import plan_epoch, plan_stats
        from hybridasr.kaldi.io.table import read_int_map

        lengths = read_int_map(os.path.join(imp, "target_lengths"))
        for label, extra in STRATEGIES:
            kw = {"seq_ordering": label.split()[0], "max_frames": a.max_frames, "seed": a.seed}
            kw.update(extra)
            if "chunking" not in kw and kw["seq_ordering"].split(":")[0] not in (
                    "tbptt", "frame_shuffle"):
                kw.update(max_seq_length=a.max_frames, max_seq_length_mode="split")
            cfg = DataConfig.from_dict(kw)
            secs = float("inf")
            for _ in range(a.plan_repeats):  # the best of a few: these take under a second
                t0 = time.perf_counter()
                plans = plan_epoch(lengths, cfg, epoch=1)
                secs = min(secs, time.perf_counter() - t0)
            out.append({"stage": f"plan {label}", "seconds": secs,
                        "num_batches": int(plan_stats(plans)["num_batches"]),
                        "peak_rss_mb": _rss_mb()})
    elif stage in ("loader_w0", "loader_w2"):
        from hybridasr.data.loader import make_batch_iterator

        workers = int(stage[-1])
        ds, cfg = _dataset(d, seq_ordering="laplace:8", max_frames=a.max_frames,
                           num_workers=workers, seed=a.seed)
        frames = batches = 0
        t0 = time.perf_counter()
        for b in make_batch_iterator(ds, cfg, epoch=1):
            frames += int(b.num_real_frames)
            batches += 1
        secs = time.perf_counter() - t0
        out.append({"stage": stage, "seconds": secs, "frames": frames, "batches": batches,
                    "frames_per_second": round(frames / secs)})
    elif stage == "train":
        out.append(_train_stage(d, a))
    elif stage == "gpu":  # nothing without CUDA (see experiments/scale_gpu.py)
        out.extend(gpu_rows(d, a, _dataset))
    elif stage == "forward":
        import torch

        from hybridasr.data.dataset import UtteranceDataset
        from hybridasr.decode.forward import forward_dataset
        from hybridasr.decode.loglikes import load_log_priors
        from hybridasr.kaldi.io.table_writer import MatrixWriter
        from hybridasr.models.mlp import Mlp

        torch.manual_seed(a.seed)
        t0 = time.perf_counter()
        ds = UtteranceDataset.from_data_dir(os.path.join(data, "test"), use_cmvn=False)
        model = Mlp(a.dim, a.pdfs, 2, 256, "relu", 0.0)
        priors = load_log_priors(os.path.join(imp, "pdf_counts"), a.pdfs)
        with torch.no_grad(), MatrixWriter(f"ark:{os.path.join(d, 'loglikes.ark')}") as w:
            s = forward_dataset(model, ds, torch.device("cpu"), w.write, a.pdfs, priors)
        out.append({"stage": stage, "seconds": time.perf_counter() - t0, "utts": s.num_utts,
                    "frames": s.num_frames, "model": "mlp 2x256",
                    "ark_mb": round(os.path.getsize(os.path.join(d, "loglikes.ark")) / 2**20)})
    elif stage == "decode":
        from hybridasr.decode.decode_table import decode_table
        from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
        from hybridasr.kaldi.io.matrix_reader import read_matrices
        from hybridasr.kaldi.io.table_writer import IntVectorWriter
        from hybridasr.kaldi.transition_model import read_transition_model

        t0 = time.perf_counter()
        tm = read_transition_model(os.path.join(ali, "final.mdl"))
        _, chains, chain_phone = make_transition_model(a.pdfs, a.phones)
        fst = phone_loop_graph(tm, chains, chain_phone)
        t_graph = time.perf_counter() - t0
        opts = DecodeOptions(beam=a.beam, max_active=a.max_active, min_active=20)
        dec = MappedDecoder(fst, tm.tid2pdf, tm.num_pdfs, opts, tm.num_transition_ids)
        t1 = time.perf_counter()
        with IntVectorWriter(f"ark:{os.path.join(d, 'hyp.tra')}") as w:
            s = decode_table(dec, read_matrices(f"ark:{os.path.join(d, 'loglikes.ark')}"),
                             0.1, w)
        out.append({"stage": stage, "seconds": time.perf_counter() - t1,
                    "graph_seconds": t_graph, "utts": s.num_done, "frames": s.num_frames,
                    "graph": f"phone loop over {len(chains)} context variants "
                             f"({fst.num_states} states)",
                    "beam": a.beam, "max_active": a.max_active})
    else:
        raise SystemExit(f"unknown stage {stage!r} (one of {', '.join(STAGES)})")
    for r in out:
        r.setdefault("peak_rss_mb", _rss_mb())
        if stage in ("loader_w2", "train"):
            r["peak_rss_children_mb"] = _rss_mb(resource.RUSAGE_CHILDREN)
    return out


def _stage_in_subprocess(stage: str, d: str, argv: list) -> list:
    # this module again, in a fresh process, from the checkout whose package it is
    cmd = [sys.executable, "-m", "experiments.scale", "--run-stage", stage,
           "--corpus", os.path.abspath(d)] + argv
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO)
    if p.returncode:
        raise SystemExit(f"stage {stage} failed (exit {p.returncode}): {' '.join(cmd)}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


# ---------------------------------------------------------------- the report
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(prog="python -m experiments.scale",
                                description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000,3000,10000", help="comma list of utterance counts")
    p.add_argument("--stages", default=",".join(STAGES), help="comma list of " + ", ".join(STAGES))
    p.add_argument("--pdfs", type=int, default=4000)
    p.add_argument("--phones", type=int, default=40)
    p.add_argument("--nj", type=int, default=4, help="alignment jobs (ali.1.gz .. ali.N.gz)")
    p.add_argument("--dim", type=int, default=40)
    p.add_argument("--mean", type=float, default=700.0)
    p.add_argument("--sd", type=float, default=300.0)
    p.add_argument("--utts-per-spk", type=int, default=100)
    p.add_argument("--max-frames", type=int, default=5000, help="batch budget (padded frames)")
    p.add_argument("--decode-utts", type=int, default=100, help="utterances forwarded and decoded")
    p.add_argument("--train-batches", type=int, default=10, help="training steps of stage train")
    p.add_argument("--plan-repeats", type=int, default=3, help="stage plan: the best of N runs")
    p.add_argument("--beam", type=float, default=10.0)
    p.add_argument("--max-active", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    add_gpu_arguments(p)
    p.add_argument("--work-dir", default="", help="where the corpora go (default: a temporary "
                                                   "dir, removed at the end unless --keep)")
    p.add_argument("--keep", action="store_true", help="keep the corpora")
    p.add_argument("--in-process", action="store_true",
                   help="run the stages in this process (faster; peak RSS then accumulates)")
    p.add_argument("--write-doc", default="", help="write a markdown report here")
    p.add_argument("--run-stage", help=argparse.SUPPRESS)
    p.add_argument("--corpus", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.phones * 3 > a.pdfs:
        a.phones = max(1, a.pdfs // 3)
    if a.run_stage:  # the child process of one stage
        for r in run_stage(a.run_stage, a.corpus, a):
            print(json.dumps(r), flush=True)
        return 0
    sizes = [int(s) for s in a.sizes.split(",") if s]
    stages = [s for s in a.stages.split(",") if s]
    for s in stages:
        if s not in STAGES:
            p.error(f"unknown stage {s!r} (one of {', '.join(STAGES)})")
    parent_only = ("--sizes", "--stages", "--work-dir", "--keep", "--write-doc", "--in-process")
    child_argv = [x for i, x in enumerate(argv)  # the stage options, without the parent's
                  if not x.startswith(parent_only) and not (i and argv[i - 1] in parent_only)]
    work = a.work_dir or tempfile.mkdtemp(prefix="hybridasr_scale.")
    os.makedirs(work, exist_ok=True)
    results, prev = [], {}
    try:
        for n in sizes:
            d = os.path.join(work, str(n))
            shutil.rmtree(d, ignore_errors=True)
            t0 = time.perf_counter()
            info = generate(d, n, a)
            rows = [{"stage": "generate", "seconds": time.perf_counter() - t0,
                     "peak_rss_mb": _rss_mb(), **info}]
            for stage in stages:
                rows += run_stage(stage, d, a) if a.in_process else \
                    _stage_in_subprocess(stage, d, child_argv)
            for r in rows:
                r = {"bench": "scale", "size": n, **r}
                r["seconds"] = round(r["seconds"], 4)  # the exponent is of the printed figures
                before = prev.get(r["stage"])
                if before and before["size"] != n:
                    growth = n / before["size"]
                    ratio = r["seconds"] / max(before["seconds"], 1e-9)
                    r["exponent"] = round(math.log(max(ratio, 1e-9)) / math.log(growth), 3)
                    r["exponent_from"] = before["size"]
                    r["ratio_vs_linear"] = round(ratio / growth, 3)
                for k in ("dataset_seconds", "graph_seconds", "startup_seconds",
                          "first_batch_seconds", "steps_seconds", "optimizer_import_seconds"):
                    if k in r:
                        r[k] = round(r[k], 4)
                prev[r["stage"]] = r
                results.append(r)
                print(json.dumps(r), flush=True)
            if not a.keep:
                shutil.rmtree(d, ignore_errors=True)
    finally:
        if not a.keep and not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    if a.write_doc:
        write_doc(a.write_doc, results, "python -m experiments.scale " + " ".join(argv),
                  sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
