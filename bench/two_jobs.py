#!/usr/bin/env python3
"""Two trainings started together on the machine's cores: frames/s of each against one alone.

On kaldi_digits' real features and monophone alignments (all 120 training utterances, also
the CV set), ``pybin/train.py`` trains a 2 x 64 BLSTM (the training tests' model, Adam,
``--lr-schedule=constant``) for ``--epochs`` epochs, first alone, then two of them started
at the same moment, for each thread setting of ``--settings``:

* ``default``: no ``--num-threads``, no ``OMP_NUM_THREADS`` (``hybridasr.utils.threads``
  decides: one thread unless told);
* ``N``: ``--num-threads=N`` (``--num-threads=<cores>`` is torch's own default, a thread per
  core in every process, which the trainer used before).

A training's figure is its real frames over its epochs' training seconds (``metrics.jsonl``);
with ``--rounds`` R, each setting runs alone-then-pair R times and each figure is its best
of the R (other users' load only ever lowers a figure); prints one JSON line per setting::

    {"setting": "default", "threads": 1, "alone_fps": ..., "pair_fps": [..., ...],
     "ratio": min(pair_fps) / alone_fps, "cores": 2}

The machine is shared: only ratios from the same run mean anything (each setting's alone
run comes right before its pair). About 1 minute per setting and round on 2 idle cores.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO.parent / "shared" / "data" / "kaldi_digits"
MODEL = ["--model=blstm", "--num-layers=2", "--hidden-size=64", "--dropout=0",
         "--seq-ordering=laplace:4", "--max-frames=2000", "--num-workers=0",
         "--optimizer=adam", "--learning-rate=0.004", "--lr-schedule=constant",
         "--progress-every=0", "--checkpoint-every=0"]


def make_inputs(kaldi_dir: Path, out: Path):
    """A data dir (absolute feats/cmvn paths) and its imported alignment dir."""
    from hybridasr.align.importer import import_alignments

    src, data = kaldi_dir / "data" / "train", out / "data"
    data.mkdir(parents=True)
    for name in ("feats.scp", "cmvn.scp"):
        with open(src / name, encoding="utf-8") as f, open(data / name, "w") as o:
            for line in f:
                key, rest = line.rstrip("\n").split(" ", 1)
                o.write(f"{key} {kaldi_dir / rest}\n")
    for name in ("utt2spk", "spk2utt", "text"):
        (data / name).write_text((src / name).read_text())
    cwd = os.getcwd()
    try:
        import_alignments(str(kaldi_dir / "exp" / "mono_ali"), str(data), str(out / "ali"))
    finally:
        os.chdir(cwd)
    return data, out / "ali"


def training_fps(exp: Path) -> float:
    """Real frames over training seconds, over the epochs that trained."""
    frames = seconds = 0.0
    with open(exp / "metrics.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("train_frames") and rec.get("frames_per_s"):
                frames += rec["train_frames"]
                seconds += rec["train_frames"] / rec["frames_per_s"]
    if not seconds:
        raise RuntimeError(f"{exp}/metrics.jsonl: no trained epoch")
    return frames / seconds


def start(data: Path, ali: Path, exp: Path, setting: str, epochs: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "HYBRIDASR_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    opts = [] if setting == "default" else [f"--num-threads={setting}"]
    cmd = [sys.executable, str(REPO / "pybin" / "train.py"), *MODEL, *opts,
           f"--max-iters={epochs}", str(data), str(data), str(ali), str(ali), str(exp)]
    log = open(exp.parent / f"{exp.name}.log", "w")
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def run(data, ali, work: Path, name: str, setting: str, epochs: int, count: int):
    exps = [work / f"{name}_{i}" for i in range(count)]
    procs = [start(data, ali, e, setting, epochs) for e in exps]
    for p, e in zip(procs, exps):
        if p.wait() != 0:
            raise RuntimeError(f"training failed, see {e.parent / (e.name + '.log')}")
    return [training_fps(e) for e in exps]


def threads_used(work: Path, name: str) -> int:
    """What the trainer logged: 'using N CPU threads (...)'."""
    for line in (work / f"{name}_0.log").read_text().splitlines():
        if "using " in line and "CPU thread" in line:
            return int(line.split("using ", 1)[1].split()[0])
    return -1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", default="default,2",
                   help="comma-separated: default (no --num-threads) or a thread count")
    p.add_argument("--epochs", type=int, default=3, help="training epochs per run")
    p.add_argument("--rounds", type=int, default=2, help="alone + pair rounds; best of each")
    p.add_argument("--kaldi-dir", default=str(DIGITS))
    args = p.parse_args(argv)
    from hybridasr.utils.threads import available_cores

    with tempfile.TemporaryDirectory(prefix="two_jobs.") as tmp:
        work = Path(tmp)
        data, ali = make_inputs(Path(args.kaldi_dir), work / "inputs")
        for setting in args.settings.split(","):
            t0 = time.time()
            alone, pair = 0.0, [0.0, 0.0]
            for r in range(args.rounds):
                a = run(data, ali, work, f"alone_{setting}_{r}", setting, args.epochs, 1)[0]
                b = run(data, ali, work, f"pair_{setting}_{r}", setting, args.epochs, 2)
                alone, pair = max(alone, a), [max(x, y) for x, y in zip(pair, sorted(b))]
            print(json.dumps({
                "setting": setting, "threads": threads_used(work, f"alone_{setting}_0"),
                "alone_fps": round(alone, 1), "pair_fps": [round(x, 1) for x in pair],
                "ratio": round(min(pair) / alone, 3), "cores": available_cores(),
                "epochs": args.epochs, "rounds": args.rounds,
                "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
