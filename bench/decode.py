#!/usr/bin/env python3
"""Embedded decoder speed (real-time factor) and accuracy on kaldi_digits' test set, one run.

Inputs (log-likelihood matrices of data/test, 30 utterances, 1073 frames):
- ``gmm``: the alignment model's own GMM (exp/mono_ali/final.mdl) on apply-cmvn + add-deltas
  features: real acoustic scores, what Kaldi's gmm-latgen-faster decoded (0% WER);
- ``pseudo``: pseudo log-likelihoods (0 for the pdf of a frame's transition-id, -10 for the
  others, plus Gaussian noise ``--noise``) from the best-path alignment of the ``gmm`` decode;
- ``model`` (with ``--nnet`` and ``--counts``): a trained network forwarded over data/test.
Prints one JSON object per line, per input:
- ``read``: reading the log-likelihood archive back (the baseline, measured in the same run:
  the least any decoder pays to see its input);
- ``decode`` for each setting (Kaldi nnet1's beam 13 / max-active 7000 at the acoustic scale
  of Kaldi's GMM decode, and a narrow beam 6 / max-active 200): seconds (best of
  ``--repeats``), real-time factor (decode time / audio time at 100 frames/s), frames per
  second, WER, and ``ratio_to_read``;
- ``lmwt_sweep``: decoding once per LM weight 7..17 (what steps/score.sh does for the embedded
  decoder), with ``ratio_to_one_decode``.
Also ``gmm_likes`` (the GMM scoring time) and ``kaldi_logged``: the real-time factor Kaldi's
gmm-latgen-faster logged for the same test set (exp/mono/decode/log/decode.1.log, another
machine, GMM scoring included: for orientation only). The machine is shared: only ratios from
the same run mean anything.

Usage: bench/decode.py [--repeats R] [--noise S] [--inputs gmm,pseudo] [--nnet N --counts C]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO.parent / "shared" / "data" / "kaldi_digits"
ACWT = 0.083333  # exp/mono/decode's acoustic scale


def _best(fn, repeats):
    best, out = None, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def _test_set(transform):
    from hybridasr.data.dataset import UtteranceDataset

    os.chdir(DIGITS)  # the scp paths are relative to the experiment dir
    return UtteranceDataset.from_data_dir("data/test", transform=transform,
                                          use_cmvn=transform.norm_means)


def _gmm(repeats):
    from hybridasr.data.transform import FeatureTransform
    from hybridasr.kaldi.gmm_model import read_gmm_model

    _, gmm = read_gmm_model(str(DIGITS / "exp/mono_ali/final.mdl"))
    ds = _test_set(FeatureTransform(norm_means=True, delta_order=2))
    feats = {u: ds.load(u)[0] for u in ds}
    t, out = _best(lambda: {u: gmm.log_likelihoods(x) for u, x in feats.items()}, repeats)
    return out, t


def _pseudo(tm, dec, gmm_lls, noise, seed=0):
    import numpy as np

    from hybridasr.decode.pseudo_loglikes import pseudo_loglikes

    rng = np.random.default_rng(seed)
    out = {}
    for u, ll in gmm_lls.items():
        ali = np.asarray(dec.decode(ll, ACWT, u).alignment)
        m = pseudo_loglikes(ali, tm.tid2pdf, tm.num_pdfs)
        out[u] = (m + rng.normal(0, noise, m.shape)).astype(np.float32)
    return out


def _forwarded(nnet, counts):
    import torch

    from hybridasr.data.transform import FeatureTransform
    from hybridasr.decode.forward import forward_dataset
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.models import load_model

    model, meta = load_model(nnet, torch.device("cpu"))
    ds = _test_set(FeatureTransform.from_dict(meta["transform"]))
    out = {}
    priors = load_log_priors(counts, int(meta["num_pdfs"])) if counts else None
    forward_dataset(model, ds, torch.device("cpu"), out.__setitem__, int(meta["num_pdfs"]),
                    priors)
    return out


def _kaldi_logged():
    log = DIGITS / "exp/mono/decode/log/decode.1.log"
    m = re.search(r"Time taken (\S+)s: real-time factor assuming 100 frames/sec is (\S+)",
                  log.read_text()) if log.exists() else None
    return (float(m.group(1)), float(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--noise", type=float, default=2.0)
    ap.add_argument("--inputs", default="gmm,pseudo", help="comma list of gmm, pseudo")
    ap.add_argument("--nnet", default="", help="also decode this trained model's outputs")
    ap.add_argument("--counts", default="", help="pdf counts for --nnet's priors")
    args = ap.parse_args()
    if not DIGITS.exists():
        sys.exit(f"needs {DIGITS}")
    import kaldiio

    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.decode.wer import compute_wer
    from hybridasr.kaldi.io.table_writer import ArkScpWriter
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(str(DIGITS / "exp/mono_ali/final.mdl"))
    graph = load_graph_dir(str(DIGITS / "exp/mono/graph"))
    refs = read_text_archive(str(DIGITS / "data/test/text"))
    settings = [("kaldi_nnet1_beam13", DecodeOptions(beam=13, max_active=7000, min_active=200)),
                ("narrow_beam6", DecodeOptions(beam=6, max_active=200, min_active=20))]
    wide = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, settings[0][1], graph.max_ilabel)

    gmm_lls, t_gmm = _gmm(args.repeats)
    frames = sum(len(m) for m in gmm_lls.values())
    audio_s = frames / 100.0
    print(json.dumps({"bench": "decode", "name": "gmm_likes", "data": "data/test",
                      "utts": len(gmm_lls), "frames": frames, "seconds": round(t_gmm, 4),
                      "rtf": round(t_gmm / audio_s, 5)}), flush=True)
    logged = _kaldi_logged()
    if logged:
        print(json.dumps({"bench": "decode", "name": "kaldi_logged",
                          "program": "gmm-latgen-faster (GMM scoring included)",
                          "seconds": logged[0], "rtf": logged[1],
                          "note": "another machine, from exp/mono/decode/log/decode.1.log"}),
              flush=True)

    inputs = [name for name in args.inputs.split(",") if name] + (["model"] if args.nnet else [])
    for name in inputs:
        if name == "gmm":
            mats, label = gmm_lls, "gmm (exp/mono_ali/final.mdl)"
        elif name == "pseudo":
            mats, label = _pseudo(tm, wide, gmm_lls, args.noise), f"pseudo, noise {args.noise}"
        elif name == "model":
            mats, label = _forwarded(args.nnet, args.counts), f"model {args.nnet}"
        else:
            sys.exit(f"unknown input {name!r} (gmm, pseudo)")
        common = {"bench": "decode", "input": label, "data": "data/test", "utts": len(mats),
                  "frames": frames}
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

        t_wide = None
        for sname, opts in settings:
            dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, opts, graph.max_ilabel)
            t, hyps = _best(lambda: run(dec, ACWT), args.repeats)
            t_wide = t if t_wide is None else t_wide
            s = compute_wer(refs, hyps)
            print(json.dumps({**common, "name": "decode", "setting": sname, "beam": opts.beam,
                              "max_active": opts.max_active, "acoustic_scale": ACWT,
                              "seconds": round(t, 4), "rtf": round(t / audio_s, 5),
                              "frames_per_s": round(frames / t), "wer": round(s.wer, 2),
                              "ratio_to_read": round(t / t_read, 2)}), flush=True)
        t_sweep, _ = _best(lambda: [run(wide, 1.0 / lmwt) for lmwt in range(7, 18)], 1)
        print(json.dumps({**common, "name": "lmwt_sweep", "lmwts": "7..17",
                          "seconds": round(t_sweep, 4), "rtf": round(t_sweep / audio_s, 5),
                          "ratio_to_one_decode": round(t_sweep / t_wide, 2)}), flush=True)


if __name__ == "__main__":
    main()
