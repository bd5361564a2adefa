#!/usr/bin/env python3
"""Costs of sequence training, each against its baseline measured in the same run:

- ``denlats``: steps/nnet/make_denlats.sh on a data dir (unigram graph of its transcripts,
  lattices with nnet1's beams) against decoding the same audio with the same beams on the
  recipe's decoding graph (steps/nnet/decode.sh --skip-scoring true); the ratio should be at
  most 2;
- ``epoch``: one sMBR epoch (train.py --objective=smbr, the recipe's denominator lattices)
  against one cross-entropy epoch from the same network on the same data and batches; the
  ratio should be at most 3.

Run in a recipe dir where stage 4 made ``exp/<name>_ali`` and ``exp/<name>_denlats`` (e.g.
``./run.sh --seq-epochs 1``):

  python bench/sequence_training.py --recipe egs/digits/s5 --graph <graph-dir> \\
      --lang <lang-dir> [--data data/train] [--nnet-dir exp/blstm]

One JSON object per result line on stdout; the work goes to a temporary dir.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(cmd, cwd, log):
    t = time.perf_counter()
    with open(log, "w") as f:
        subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, check=True)
    return time.perf_counter() - t


def epoch_seconds(exp):
    with open(os.path.join(exp, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if r.get("epoch") == 1][0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recipe", required=True, help="recipe dir (egs/<corpus>/s5) after stage 4")
    p.add_argument("--graph", required=True, help="the decoding graph dir of the recipe")
    p.add_argument("--data", default="data/train")
    p.add_argument("--lang", required=True, help="the lang dir of the denominator graph")
    p.add_argument("--nnet-dir", default="exp/blstm")
    p.add_argument("--nj", type=int, default=2)
    p.add_argument("--skip", default="", help="comma list of parts to skip: denlats,epoch")
    a = p.parse_args(argv)
    rec = os.path.abspath(a.recipe)
    skip = set(a.skip.split(",")) - {""}
    tmp = tempfile.mkdtemp(prefix="bench_seq_", dir=os.path.join(rec, "exp"))
    src = a.nnet_dir
    beams = ["--beam", "13.0", "--lattice-beam", "7.0", "--max-active", "5000", "--acwt", "0.1"]
    if "denlats" not in skip:
        dec = os.path.join(tmp, "decode")
        os.makedirs(dec)
        # decoding writes into <decode-dir>; the network is <srcdir>'s
        t_dec = run(["steps/nnet/decode.sh", "--nj", str(a.nj), "--skip-scoring", "true",
                     "--srcdir", src, *beams, a.graph, a.data, dec], rec,
                    os.path.join(tmp, "decode.log"))
        t_den = run(["steps/nnet/make_denlats.sh", "--nj", str(a.nj), *beams, a.data, a.lang,
                     src, os.path.join(tmp, "denlats")], rec, os.path.join(tmp, "denlats.log"))
        print(json.dumps({"bench": "denlats", "data": a.data, "seconds": round(t_den, 1),
                          "baseline": "decode.sh, same beams, " + a.graph,
                          "baseline_seconds": round(t_dec, 1),
                          "ratio": round(t_den / t_dec, 3), "goal": "<= 2"}), flush=True)
    if "epoch" not in skip:
        common = [f"--config={src}/train.conf", f"--init-model={src}/final.nnet",
                  "--lr-schedule=constant", "--max-iters=1", "--min-batches-per-epoch=0",
                  "--max-frames=5000", "--learning-rate=0.0003", "--num-threads=1"]
        data = ["data/train_tr90", "data/train_cv10", f"{a.nnet_dir}_smbr/ali_tr",
                f"{a.nnet_dir}_smbr/ali_cv"]
        t = {}
        for name, extra in (("ce", []), ("smbr", [
                "--objective=smbr", f"--seq-denlats={a.nnet_dir}_denlats",
                f"--seq-class-frame-counts={src}/ali_train_pdf.counts"])):
            exp = os.path.join(tmp, name)
            run(["train.py", *common, *extra, *data, exp], rec, os.path.join(tmp, name + ".log"))
            t[name] = epoch_seconds(exp)
        print(json.dumps({"bench": "sequence_epoch", "data": "data/train_tr90",
                          "seconds": round(t["smbr"]["seconds"], 1),
                          "frames_per_s": round(t["smbr"]["frames_per_s"]),
                          "baseline": "one CE epoch, same network, data and batches",
                          "baseline_seconds": round(t["ce"]["seconds"], 1),
                          "ratio": round(t["smbr"]["seconds"] / t["ce"]["seconds"], 3),
                          "goal": "<= 3"}), flush=True)
    print(f"work in {tmp}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
