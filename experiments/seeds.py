"""The seeds' experiments on real speech: batching, chunking, buckets, averaging,
unrolling, as real training runs on kaldi_polish, side by side with the papers' figures.

Preparation shared by every run, once and resumable (``experiments/seeds_prep.py``): a Kaldi dir cut
from kaldi_polish, the recipe's stages 0-2 (MFCC + CMVN, the tri1 alignments imported, the
tr/cv split). Then, each a ``steps/nnet/train.sh`` run with its options in a conf file
(``experiments/seeds_runs.py``), the same model, seed, learning rate and epochs within a table
(constant learning rate, every epoch kept):

1. Doetsch et al. Table 2 in kind: random, laplace:8, sorted, bucketing, laplace:64,
   laplace:256 at ``--max-frames`` padded frames per batch: utterances/s, peak memory,
   padding ratio, CV FER, test WER (``steps/nnet/decode.sh``, best ``wer_*``).
2. Doetsch et al. Table 1 in kind: full utterances and ``--chunking=C:C`` for ``--chunks``.
3. Khomenko et al.: ``optimal_buckets:Q`` for ``--quantities`` (random bucket order) and Q=3
   in curriculum order: epoch time relative to Q=1, padding ratio, CV loss per epoch.
4. Averaging: 1 process (``--threads`` threads) against 2 gloo processes (1 thread each,
   ``--parallel=average --sync-every=K`` for ``--sync``, 0 = once per epoch): CV loss per
   epoch and at equal training seconds.
5. Variani et al.: ``--model=lstm --label-delay=5 --seq-ordering=tbptt:S:W`` for ``--tbptt``
   (equal frames per step): APR per step (mean, sd, from the trainer's own plans), frames/s,
   CV FER.

Prints one JSON line per run; writes ``--out`` (a table, a PNG plot and generated sentences
per experiment, next to the paper's figure quoted from ../shared/SEEDS.md), naming the machine,
the command and its run time. Runs are cached in ``--work-dir`` (a finished run is read back).

Run from the repository root:
e.g.: python -m experiments.seeds --out docs/results.md   # the full tables (~2 hours, 2 cores)
      python -m experiments.seeds --smoke --out /tmp/r.md --work-dir /tmp/seeds_smoke
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from experiments.seeds_prep import DEFAULT_KALDI, REPO, prepare
from experiments.seeds_report import TITLES, section
from experiments.seeds_runs import (Setup, experiments, planned_apr, run_id, summarise,
                                    train_and_decode)

FULL = dict(epochs=3, model_size="2x64", utts=0, max_dur=0.0, test_utts=0, max_frames=5000,
            chunks="10,50,100,500", quantities="1,2,3,4,5,6,7,8", sync="1,16,128,0",
            tbptt="128:10,64:20,32:40", decode_opts="--beam 11 --max-active 3000", threads=2,
            jobs=1)
SMOKE = dict(epochs=1, model_size="1x16", utts=20, max_dur=3.5, test_utts=1, max_frames=1500,
             chunks="50", quantities="1,2", sync="1", tbptt="8:10,4:20",
             decode_opts="--beam 8 --max-active 500 --scoring-opts=--min-lmwt=10_--max-lmwt=10",
             threads=1, jobs=2)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.seeds", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true",
                   help="1 epoch, 2 configurations per table, a few utterances, a tiny model "
                   "(its defaults: %s)" % SMOKE)
    p.add_argument("--out", default="docs/results.md")
    p.add_argument("--work-dir", default="",
                   help="runs and preparation (default: runs/seeds or runs/seeds_smoke beside "
                   "the checkout)")
    p.add_argument("--kaldi-dir", default=DEFAULT_KALDI)
    p.add_argument("--experiments", default="1,2,3,4,5")
    p.add_argument("--epochs", type=int)
    p.add_argument("--model-size", help="LAYERSxCELLS of the BLSTM (and of exp. 5's LSTM)")
    p.add_argument("--utts", type=int, help="training utterances (0: all 550)")
    p.add_argument("--max-dur", type=float, help="only utterances up to this many s (0: all)")
    p.add_argument("--test-utts", type=int, help="test utterances, the shortest (0: all 10)")
    p.add_argument("--max-frames", type=int, help="padded frames per batch (exp. 1-4)")
    p.add_argument("--chunks", help="exp. 2 chunk sizes")
    p.add_argument("--quantities", help="exp. 3 bucket counts Q")
    p.add_argument("--sync", help="exp. 4 --sync-every values (0: once per epoch)")
    p.add_argument("--tbptt", help="exp. 5 streams:window pairs")
    p.add_argument("--decode-opts", help="steps/nnet/decode.sh options ('_' inside one "
                   "option's value stands for a space)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, help="torch threads of a 1-process run")
    p.add_argument("--seed", type=int, default=777)
    p.add_argument("--nj", type=int, default=2, help="jobs of the feature extraction")
    p.add_argument("--jobs", type=int,
                   help="runs at the same time (the smoke's default 2: its speeds are then no "
                   "timings; 1 for the tables)")
    return p


def machine(device: str) -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    s = f"{platform.node()}: {os.cpu_count()} CPU cores ({cpu}), {platform.system()}"
    if device == "cuda":
        import torch
        s += f", GPU {torch.cuda.get_device_name(0)}"
    return s


def main(argv=None) -> int:
    t0 = time.perf_counter()
    a = get_parser().parse_args(argv)
    base = SMOKE if a.smoke else FULL
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    ints = lambda s: [int(x) for x in s.split(",") if x.strip()]  # noqa: E731
    layers, hidden = (int(x) for x in a.model_size.lower().split("x"))
    work = os.path.abspath(a.work_dir or os.path.join(
        os.path.dirname(REPO), "runs", "seeds_smoke" if a.smoke else "seeds"))
    log = lambda msg: print(f"# {msg}", file=sys.stderr, flush=True)  # noqa: E731
    prep = prepare(work, a.kaldi_dir, a.utts, a.max_dur, a.test_utts, a.nj, log)
    setup = Setup(epochs=a.epochs, layers=layers, hidden=hidden, max_frames=a.max_frames,
                  seed=a.seed, threads=a.threads, device=a.device)
    tables = experiments(setup, a.smoke, a.tbptt.split(","), ints(a.quantities),
                         ints(a.chunks), ints(a.sync))
    decode_opts = [o.replace("_", " ") for o in a.decode_opts.split()]
    wanted = ints(a.experiments)
    tasks = [(exp, cfg, setup.common("lstm" if exp == 5 else "blstm"))
             for exp in wanted for cfg in tables[exp]]
    unique = {}
    for exp, cfg, common in tasks:  # a configuration two tables share is trained once
        unique.setdefault(run_id(common + cfg.opts, cfg.nproc), (cfg, common))
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = {k: pool.submit(train_and_decode, work, common, cfg, a.device, decode_opts)
                   for k, (cfg, common) in unique.items()}
        results = {k: f.result() for k, f in futures.items()}
    records = {exp: [] for exp in wanted}
    with open(os.path.join(work, "results.jsonl"), "a", encoding="utf-8") as jl:
        for exp, cfg, common in tasks:
            rec = summarise(cfg, results[run_id(common + cfg.opts, cfg.nproc)],
                            prep["tr_utts"])
            if exp == 5:
                rec.update(planned_apr(work, common + cfg.opts, a.epochs))
            records[exp].append(rec)
            line = json.dumps(rec)
            print(line, flush=True)
            jl.write(line + "\n")
    seeds_md = os.path.join(os.path.dirname(a.kaldi_dir.rstrip("/")), "..", "SEEDS.md")
    seeds_md = os.path.normpath(seeds_md)
    out = os.path.abspath(a.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    stem = os.path.splitext(os.path.basename(out))[0]
    parts = []
    for exp in wanted:
        png = os.path.join(os.path.dirname(out), f"{stem}_exp{exp}.png")
        parts.append(section(exp, records[exp], seeds_md, png, os.path.basename(png)))
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    cmd = "python -m experiments.seeds " + " ".join(
        shlex.quote(x) for x in (sys.argv[1:] if argv is None else argv))
    wall = time.perf_counter() - t0
    head = [
        "# The seeds' experiments on real speech (kaldi_polish)", "",
        "Generated by `python -m experiments.seeds`; every figure below comes from "
        "the run recorded here. Regenerate with (from the repository root):", "", f"    {cmd}", "",
        f"- machine: {machine(a.device)}",
        f"- run time of this command: {wall:.0f} s ({wall / 60:.1f} min; runs already finished "
        f"in {work} are read back, not run again), at {time.strftime('%Y-%m-%d %H:%M')}"
        f"{', commit ' + commit if commit else ''}",
        f"- data: {prep['tr_utts']} training and {prep['cv_utts']} cross-validation utterances "
        f"of kaldi_polish (MFCC, tri1 alignments, 1,192 pdfs), {prep['test_utts_used']} test "
        "utterances",
        f"- every run: {layers} x {hidden} BLSTM (experiment 5: an LSTM "
        f"of the same size, label delay 5), seed {a.seed}, Adam at a constant learning rate "
        f"{setup.lr:g}, {a.epochs} epoch(s), {a.threads} torch threads per 1-process run, "
        f"{a.max_frames} padded frames per batch (experiments 1-4), device {a.device}",
        f"- runs at a time: {a.jobs}" + (" (so the speeds and memory here are no timings: "
                                          "runs shared the cores)" if a.jobs > 1 else ""),
        f"- decoding: steps/nnet/decode.sh {' '.join(decode_opts)} with the tri1 graph",
        ""]
    text = "\n".join(head + parts)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)
    log(f"wrote {out} ({', '.join(TITLES[e].split(':')[0] for e in wanted)}) in {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
