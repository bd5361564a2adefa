#!/usr/bin/env python3
"""Alignment speed against the forward pass alone, measured in the same run.

For a trained network (an exp dir of steps/nnet/train.sh: final.nnet, final.mdl, tree,
ali_train_pdf.counts) and a data dir with ``text``: the forward pass alone (forward.py's work:
features, network, priors, written to an in-memory-free temporary ark) and the alignment of its
output (align_mapped.py's work: training graphs compiled per utterance, then Viterbi with beam
10 / retry-beam 40), each the best of ``--repeats``. Prints one JSON object per line:
``forward`` (seconds, frames/s), ``align`` (seconds, frames/s, the graph and Viterbi parts,
``ratio_to_forward`` = align seconds / forward seconds, failed and retried utterances) and
``total`` (forward + align: what steps/nnet/align.sh pays per job, ``ratio_to_forward``).
The machine is shared: only ratios from the same run mean anything.

Usage: bench/align.py --nnet-dir exp/blstm --data-dir data/train --lang <kaldi-dir>/data/lang
       [--repeats R] [--max-utts N] [--num-threads T]
e.g. in a recipe run dir: bench/align.py --nnet-dir exp/blstm --data-dir data/train \\
       --lang ../shared/data/kaldi_digits/data/lang
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def _subset(data_dir: str, n: int, tmp: str) -> str:
    """The first ``n`` utterances of ``data_dir`` (the library's subset tool)."""
    if n <= 0:
        return data_dir
    from hybridasr.datadir.subset import subset_data_dir

    out = os.path.join(tmp, "data")
    subset_data_dir(data_dir, out, "first", n)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nnet-dir", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--lang", required=True)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--max-utts", type=int, default=0, help="0: all")
    p.add_argument("--num-threads", type=int, default=1,
                   help="torch CPU threads (align.sh's jobs use 1 each)")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.num_threads)

    from hybridasr.align.align_mapped import align_mapped
    from hybridasr.decode.forward import device_for, forward_dataset, load_model_and_data
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.kaldi.io.table_writer import MatrixWriter

    nnet = os.path.join(args.nnet_dir, "final.nnet")
    tmp = tempfile.mkdtemp(prefix="bench_align_")
    try:
        data = args.data_dir if args.max_utts <= 0 else _subset(args.data_dir, args.max_utts, tmp)
        device = device_for("cpu")
        ark = os.path.join(tmp, "loglikes.ark")
        best_fwd, frames = None, 0
        for _ in range(args.repeats):
            t = time.perf_counter()
            model, meta, ds = load_model_and_data(nnet, data, device)
            num_pdfs = int(meta["num_pdfs"])
            priors = load_log_priors(os.path.join(args.nnet_dir, "ali_train_pdf.counts"), num_pdfs)
            with MatrixWriter(f"ark:{ark}") as w:
                s = forward_dataset(model, ds, device, w.write, num_pdfs, priors)
            dt = time.perf_counter() - t
            frames = s.num_frames
            best_fwd = dt if best_fwd is None else min(best_fwd, dt)
        print(json.dumps({"what": "forward", "utterances": s.num_utts, "frames": frames,
                          "seconds": round(best_fwd, 3),
                          "frames_per_s": round(frames / best_fwd, 1)}), flush=True)
        best, rep = None, None
        for _ in range(args.repeats):
            t = time.perf_counter()
            r = align_mapped(os.path.join(args.nnet_dir, "tree"),
                             os.path.join(args.nnet_dir, "final.mdl"), args.lang, f"ark:{ark}",
                             os.path.join(data, "text"), f"ark:{os.path.join(tmp, 'ali.ark')}")
            dt = time.perf_counter() - t
            if best is None or dt < best:
                best, rep = dt, r
        print(json.dumps({"what": "align", "utterances": rep.utterances, "aligned": rep.aligned,
                          "failed": len(rep.failed), "retried": rep.retried,
                          "frames": rep.frames, "seconds": round(best, 3),
                          "frames_per_s": round(rep.frames / best, 1),
                          "graph_seconds": round(rep.graph_seconds, 3),
                          "viterbi_seconds": round(rep.search_seconds, 3),
                          "ratio_to_forward": round(best / best_fwd, 3)}), flush=True)
        print(json.dumps({"what": "total", "frames": frames,
                          "seconds": round(best + best_fwd, 3),
                          "frames_per_s": round(frames / (best + best_fwd), 1),
                          "ratio_to_forward": round((best + best_fwd) / best_fwd, 3)}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
