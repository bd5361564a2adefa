#!/usr/bin/env python3
"""Embedded decoder speed (real-time factor) on kaldi_digits' real graph, one run.

Input: with ``--nnet`` (and ``--counts``), a trained model forwarded over data/test; without,
pseudo log-likelihoods from Kaldi's alignments of data/train (exp/mono_ali/ali.1.gz: 0 for the
aligned pdf, -10 for the others) plus Gaussian noise (``--noise``, default 2.0) so the search
has real competition. Prints one JSON object per line:
- ``read``: reading the log-likelihood archive back (the baseline: the least any decoder pays);
- ``decode`` for each setting (Kaldi nnet1's beam 13 / max-active 7000 at acoustic scale 0.1,
  and a narrow beam 6 / max-active 200): seconds, real-time factor (decode time / audio time at
  100 frames/s), frames per second, WER, and ``ratio_to_read`` = decode time / read time;
- ``lmwt_sweep``: decoding once per LM weight 7..17 (what steps/score.sh does for the embedded
  decoder), with ``ratio_to_one_decode``.
The machine is shared: only ratios from the same run mean anything.

Usage: bench/decode.py [--repeats R] [--noise S] [--nnet final.nnet --counts pdf.counts]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DIGITS = REPO.parent / "shared" / "data" / "kaldi_digits"


def _best(fn, repeats):
    best, out = None, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def _pseudo(tm, noise, seed=0):
    import kaldiio
    import numpy as np

    from hybridasr.decode.pseudo_loglikes import pseudo_loglikes

    rng = np.random.default_rng(seed)
    out = {}
    with kaldiio.ReadHelper(f"ark:gunzip -c {DIGITS}/exp/mono_ali/ali.1.gz |") as r:
        for key, ali in r:
            m = pseudo_loglikes(ali, tm.tid2pdf, tm.num_pdfs)
            out[key] = (m + rng.normal(0, noise, m.shape)).astype(np.float32)
    return out, "data/train"


def _forwarded(nnet, counts):
    import torch

    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.data.transform import FeatureTransform
    from hybridasr.decode.forward import forward_dataset
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.models import load_model

    model, meta = load_model(nnet, torch.device("cpu"))
    t = FeatureTransform.from_dict(meta["transform"])
    os.chdir(DIGITS)
    ds = UtteranceDataset.from_data_dir("data/test", transform=t, use_cmvn=t.norm_means)
    out = {}
    priors = load_log_priors(counts, int(meta["num_pdfs"])) if counts else None
    forward_dataset(model, ds, torch.device("cpu"), out.__setitem__, int(meta["num_pdfs"]),
                    priors)
    return out, "data/test"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--noise", type=float, default=2.0)
    ap.add_argument("--nnet", default="")
    ap.add_argument("--counts", default="")
    args = ap.parse_args()
    if not DIGITS.exists():
        sys.exit(f"needs {DIGITS}")
    import kaldiio

    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.decode.text_archive import read_text_archive
    from hybridasr.decode.wer import compute_wer
    from hybridasr.kaldi.table import ArkScpWriter
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(str(DIGITS / "exp/mono_ali/final.mdl"))
    graph = load_graph_dir(str(DIGITS / "exp/mono/graph"))
    mats, data = _forwarded(args.nnet, args.counts) if args.nnet else _pseudo(tm, args.noise)
    refs = read_text_archive(str(DIGITS / data / "text"))
    frames = sum(len(m) for m in mats.values())
    audio_s = frames / 100.0
    common = {"bench": "decode", "data": data, "utts": len(mats), "frames": frames,
              "input": "model" if args.nnet else f"pseudo-loglikes noise {args.noise}"}

    with tempfile.TemporaryDirectory() as tmp:
        with ArkScpWriter(f"{tmp}/ll.ark", f"{tmp}/ll.scp") as w:
            for k, m in mats.items():
                w.write(k, m)
        t_read, _ = _best(lambda: [m for _, m in kaldiio.load_ark(f"{tmp}/ll.ark")],
                          args.repeats)
    print(json.dumps({**common, "name": "read", "seconds": round(t_read, 4),
                      "rtf": round(t_read / audio_s, 5)}), flush=True)

    def run(dec, scale):
        return {k: [graph.words[w] for w in dec.decode(m, scale, k).words]
                for k, m in mats.items()}

    settings = [("kaldi_nnet1_beam13", DecodeOptions(beam=13, max_active=7000, min_active=200)),
                ("narrow_beam6", DecodeOptions(beam=6, max_active=200, min_active=20))]
    t_wide = None
    for name, opts in settings:
        dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, opts, graph.max_ilabel)
        t, hyps = _best(lambda: run(dec, 0.1), args.repeats)
        t_wide = t if t_wide is None else t_wide
        s = compute_wer(refs, hyps)
        print(json.dumps({**common, "name": "decode", "setting": name, "beam": opts.beam,
                          "max_active": opts.max_active, "seconds": round(t, 4),
                          "rtf": round(t / audio_s, 5), "frames_per_s": round(frames / t),
                          "wer": round(s.wer, 2), "ratio_to_read": round(t / t_read, 2)}),
              flush=True)

    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, settings[0][1], graph.max_ilabel)
    t_sweep, _ = _best(lambda: [run(dec, 1.0 / lmwt) for lmwt in range(7, 18)], 1)
    print(json.dumps({**common, "name": "lmwt_sweep", "lmwts": "7..17",
                      "seconds": round(t_sweep, 4), "rtf": round(t_sweep / audio_s, 5),
                      "ratio_to_one_decode": round(t_sweep / t_wide, 2)}), flush=True)


if __name__ == "__main__":
    main()
