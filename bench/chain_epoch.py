#!/usr/bin/env python3
"""The cost of one LF-MMI training epoch against one cross-entropy epoch of the same network
on the same data, machine and batches, in the same run; JSON lines on stdout.

On a copy of a Kaldi dir with a GMM alignment (default ``../shared/data/kaldi_digits`` and its
``exp/mono_ali``): the chain lang dir, tree (frame subsampling 3) and den.fst
(``steps/nnet/chain/``), then ``pybin/train.py`` for one epoch twice with the TDNN-F of
``--model-config`` (default ``conf/model/tdnnf_small.conf``):

* **ce**: frame cross-entropy on the imported GMM alignment, the network at the input frame
  rate (``--tdnnf-subsampling-factor=1``: a TDNN trained with frame targets, as Kaldi's nnet3
  cross-entropy recipes);
* **lfmmi**: ``--objective=lfmmi`` on the same alignment, the network at every 3rd frame.

Both: ``--lr-schedule=constant --max-iters=1``, the same ``--seq-ordering`` and
``--max-frames``, one thread. The figure is each epoch's training seconds from
``metrics.jsonl`` (cv passes not counted); the last line has ``lfmmi_over_ce`` (the goal: at
most 1.0). The den forward-backward's own frames/s beside a network's: ``bench/chain_den.py``.

usage: bench/chain_epoch.py [--kaldi-dir DIR] [--ali exp/mono_ali] [--model-config F]
       [--work-dir DIR] [--min-batches N] [--chunking SIZE:STEP]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kaldi-dir", default=str(REPO.parent / "shared/data/kaldi_digits"))
    p.add_argument("--ali", default="exp/mono_ali", help="the GMM's alignment dir, inside it")
    p.add_argument("--model-config", default=str(REPO / "conf/model/tdnnf_small.conf"))
    p.add_argument("--work-dir", default="", help="default: a temporary dir, removed after")
    p.add_argument("--min-batches", type=int, default=20,
                   help="--min-batches-per-epoch of both trainings")
    p.add_argument("--cv-utts", type=int, default=12, help="utterances of the cv subset")
    p.add_argument("--chunking", default="", help="train.py --chunking of both (e.g. 150:150, "
                   "Kaldi's chunks)")
    return p


def _run(cwd: Path, *cmd) -> None:
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{REPO / 'pybin'}:"
               f"{REPO / 'utils'}:{os.environ['PATH']}", PYTHONPATH=str(REPO),
               OMP_NUM_THREADS="1")  # (this Python's bin dir first: the steps' python3)
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def _cv_subset(d: Path, n: int) -> None:
    """data/cv: the first ``n`` utterances of data/train (their speakers' cmvn)."""
    src, dst = d / "data/train", d / "data/cv"
    dst.mkdir(parents=True, exist_ok=True)
    utts = [ln.split()[0] for ln in (src / "feats.scp").read_text().splitlines()[:n]]
    keep = set(utts)
    u2s = dict(ln.split()[:2] for ln in (src / "utt2spk").read_text().splitlines())
    spks = {u2s[u] for u in utts}
    for name, keys in (("feats.scp", keep), ("text", keep), ("utt2spk", keep),
                       ("cmvn.scp", spks)):
        lines = [ln for ln in (src / name).read_text().splitlines()
                 if ln.split(" ", 1)[0] in keys]
        (dst / name).write_text("".join(x + "\n" for x in lines))
    (dst / "spk2utt").write_text("".join(
        f"{s} {' '.join(u for u in utts if u2s[u] == s)}\n" for s in sorted(spks)))


def _epoch(exp: Path) -> dict:
    rows = [json.loads(x) for x in (exp / "metrics.jsonl").read_text().splitlines()]
    e = next(r for r in rows if r["epoch"] == 1)
    return {"seconds": e["seconds"], "train_frames": e["train_frames"],
            "frames_per_s": e["frames_per_s"], "batches": e["batches"]}


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="chain_epoch."))
    d = work / "kaldi"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(args.kaldi_dir, d, symlinks=True)
    ali = d / args.ali
    _run(d, sys.executable, REPO / "pybin/chain_gen_topo.py", "--lang-in=data/lang",
         "--lang-out=data/lang_chain")
    _run(d, REPO / "steps/nnet/chain/build_tree.sh", "--frame-subsampling-factor", "3", "auto",
         "data/train", "data/lang_chain", ali, "exp/chain/tree")
    _run(d, REPO / "steps/nnet/chain/make_den_fst.sh", "exp/chain/tree", ali, "exp/chain/den")
    _cv_subset(d, args.cv_utts)
    _run(d, REPO / "steps/import_ali.sh", ali, "data/train", "exp/ali_imported")
    common = [f"--model-config={args.model_config}", "--seq-ordering=laplace:4",
              "--max-frames=2000", "--num-workers=0", "--learning-rate=0.001",
              "--lr-schedule=constant", "--max-iters=1", "--progress-every=0",
              "--num-threads=1", f"--min-batches-per-epoch={args.min_batches}"] + (
                  [f"--chunking={args.chunking}"] if args.chunking else [])
    runs = {"ce": common + ["--tdnnf-subsampling-factor=1", "data/train", "data/cv",
                            "exp/ali_imported", "exp/ali_imported", "exp/ce"],
            "lfmmi": common + ["--objective=lfmmi", "--lfmmi-den-fst=exp/chain/den",
                               "data/train", "data/cv", ali, ali, "exp/lfmmi"]}
    figures = {}
    for name, argv_ in runs.items():
        _run(d, sys.executable, REPO / "pybin/train.py", *argv_)
        figures[name] = _epoch(d / f"exp/{name}")
        print(json.dumps({"objective": name, "model_config": args.model_config,
                          "chunking": args.chunking, **figures[name]}), flush=True)
    print(json.dumps({"lfmmi_over_ce": figures["lfmmi"]["seconds"] / figures["ce"]["seconds"],
                      "goal": "<= 1.0"}), flush=True)
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
