#!/usr/bin/env python3
"""Alignment-reading speed: ours (``hybridasr.kaldi.io.intvec``) against kaldiio, same archive, one run.

Generates alignments (default 10,000 utterances of 500 frames, transition-ids of the real
kaldi_digits model range) and writes them as Kaldi binary int32-vector archives. Prints one JSON
object per line:
- ``binary_ark``: reading the binary ark sequentially (ours: ``read_int_vectors("ark:...")``;
  kaldiio: ``kaldiio.load_ark``);
- ``binary_ark_gz``: the same archive gzipped, as an alignment dir holds it (ours: the ali-dir
  reader, gzip in-process; kaldiio: ``load_ark`` over a ``gzip.open`` file object).
Both sides produce int32 numpy arrays and are checked to agree. Rates are frames per second,
``ratio`` = ours / kaldiio (above 1: we are faster); best of --repeats runs each.
The machine is shared, so only ratios from the same run mean anything.

Usage: bench/alignments.py [--utts N] [--frames T] [--repeats R]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _best(fn, repeats):
    """(best wall time of ``repeats`` runs, the result of one run)."""
    return min(timeit.repeat(fn, number=1, repeat=repeats)), fn()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--utts", type=int, default=10000)
    ap.add_argument("--frames", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import kaldiio

    from hybridasr.align.alignments import iter_alignment_file
    from hybridasr.kaldi.io.intvec import read_int_vectors
    from hybridasr.kaldi.io.table_writer import IntVectorWriter

    rng = np.random.default_rng(0)
    frames = args.utts * args.frames
    with tempfile.TemporaryDirectory(prefix="bench_ali.") as d:
        ark = f"{d}/ali.ark"
        with IntVectorWriter(f"ark:{ark}") as w:
            for i in range(args.utts):
                w.write(f"utt{i:06d}", rng.integers(1, 661, args.frames, dtype=np.int32))
        gz = f"{d}/ali.1.gz"
        with open(ark, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            dst.write(src.read())

        def ours_ark():
            return [(k, v) for k, v in read_int_vectors(f"ark:{ark}")]

        def kaldiio_ark():
            return [(k, v) for k, v in kaldiio.load_ark(ark)]

        def ours_gz():
            return [(k, v) for k, v in iter_alignment_file(gz)]

        def kaldiio_gz():
            with gzip.open(gz, "rb") as f:
                return [(k, np.asarray(v)) for k, v in kaldiio.load_ark(f)]

        for name, ours, base in (("binary_ark", ours_ark, kaldiio_ark),
                                 ("binary_ark_gz", ours_gz, kaldiio_gz)):
            t_ours, a = _best(ours, args.repeats)
            t_base, b = _best(base, args.repeats)
            assert len(a) == len(b) == args.utts
            assert all(ka == kb and np.array_equal(va, vb) for (ka, va), (kb, vb) in zip(a, b))
            print(json.dumps({
                "bench": "alignments", "case": name, "utterances": args.utts,
                "frames_per_utt": args.frames,
                "ours_frames_per_s": round(frames / t_ours),
                "kaldiio_frames_per_s": round(frames / t_base),
                "ours_s": round(t_ours, 3), "kaldiio_s": round(t_base, 3),
                "ratio": round(t_base / t_ours, 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
