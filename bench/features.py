#!/usr/bin/env python3
"""Feature-extraction speed: ours (torch, batched) against kaldi-native-fbank, same audio, one run.

Prints one JSON object per line:
- ``pipeline`` (nj 1 and 2): a whole job, reading wav.scp, computing MFCC (Kaldi defaults,
  dither 1.0) and writing a compressed ark/scp. Ours is ``compute_feature_table`` (what
  ``compute_mfcc_feats.py`` runs); the baseline reads the same files with soundfile, computes
  with kaldi-native-fbank and writes with the same ArkScpWriter. With nj 2 the scp is split in
  two halves run by two processes at once; the figure is total audio / wall time of the slower
  job. Process start-up (python, torch import) is excluded for both.
- ``compute``: the computation alone on waveforms already in memory (nj 1).
- ``cli``: ``compute_mfcc_feats.py`` run as a user runs it (start-up included), nj 1.
``ratio`` = ours / kaldi-native-fbank (above 1: we are faster). The machine is shared, so
only ratios from the same run mean anything.

Usage: bench/features.py [--max-files N] [--data DIR] [--repeats R]
(--data: a folder searched recursively for .wav files of one sample rate; default the 3,000
FSDD recordings, 8 kHz; e.g. ../shared/data/an4_subset for 16 kHz)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "fsdd" / "recordings"


def _opts():
    from hybridasr.features.options import FeatureOptions

    rate = float(os.environ.get("BENCH_FEATURES_RATE", "8000"))
    return FeatureOptions.kaldi_defaults("mfcc", sample_frequency=rate)


def _ours_job(scp: str, out: str) -> tuple:
    import torch

    torch.set_num_threads(1)
    from hybridasr.features.make_feats import compute_feature_table

    t = time.perf_counter()
    rep = compute_feature_table(scp, f"ark,scp:{out}.ark,{out}.scp", _opts(), compress=True)
    return time.perf_counter() - t, rep.audio_seconds, rep.num_done


def _knf_compute(wave, opts):
    import kaldi_native_fbank as knf
    import numpy as np

    ko = knf.MfccOptions()
    ko.frame_opts.samp_freq = opts.sample_frequency
    ko.frame_opts.dither = opts.dither
    ko.mel_opts.num_bins = opts.num_mel_bins
    comp = knf.OnlineMfcc(ko)
    comp.accept_waveform(opts.sample_frequency, wave)
    comp.input_finished()
    return np.stack([comp.get_frame(i) for i in range(comp.num_frames_ready)])


def _knf_job(scp: str, out: str) -> tuple:
    import soundfile as sf

    from hybridasr.kaldi.io.table import read_map
    from hybridasr.kaldi.io.table_writer import ArkScpWriter

    opts = _opts()
    t = time.perf_counter()
    audio, n = 0.0, 0
    with ArkScpWriter(f"{out}.ark", f"{out}.scp", compression_method=1) as w:
        for key, path in read_map(scp).items():
            x, rate = sf.read(path, dtype="float32")
            x *= 32768.0
            w.write(key, _knf_compute(x, opts))
            audio += len(x) / rate
            n += 1
    return time.perf_counter() - t, audio, n


def _run_jobs(fn, scps, outdir, tag):
    if len(scps) == 1:
        return [fn(scps[0], f"{outdir}/{tag}.1")]
    ctx = mp.get_context("spawn")
    with ctx.Pool(len(scps)) as pool:
        pool.map(_warm, range(len(scps)))  # start-up (imports) before the clock
        jobs = [pool.apply_async(fn, (s, f"{outdir}/{tag}.{i + 1}")) for i, s in enumerate(scps)]
        return [j.get() for j in jobs]


def _warm(_):
    import kaldi_native_fbank  # noqa: F401
    import torch  # noqa: F401

    import hybridasr.features.make_feats  # noqa: F401
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder of wav files")
    ap.add_argument("--max-files", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=2, help="best of R runs per figure")
    args = ap.parse_args()
    files = sorted(Path(args.data).rglob("*.wav"))[: args.max_files]
    if not files:
        sys.exit(f"no wav files in {args.data}")
    import soundfile as sf

    rate = sf.info(str(files[0])).samplerate  # workers (spawned) read it from the env
    os.environ["BENCH_FEATURES_RATE"] = str(rate)
    tmp = tempfile.mkdtemp(prefix="bench_features.")
    scp = os.path.join(tmp, "wav.scp")
    with open(scp, "w") as f:
        for p in files:
            f.write(f"{p.stem} {p}\n")
    halves = []
    for i in range(2):
        h = os.path.join(tmp, f"wav.{i + 1}.scp")
        with open(h, "w") as f:
            for p in files[i::2]:
                f.write(f"{p.stem} {p}\n")
        halves.append(h)
    _warm(0)

    knf_pipeline = {}
    for nj, scps in ((1, [scp]), (2, halves)):
        best = {}
        for tag, fn in (("ours", _ours_job), ("knf", _knf_job)):
            rates = []
            for _ in range(args.repeats):
                res = _run_jobs(fn, scps, tmp, tag)
                audio = sum(r[1] for r in res)
                rates.append(audio / max(r[0] for r in res))
            best[tag] = max(rates)
        knf_pipeline[nj] = best["knf"]
        print(json.dumps({"bench": "features", "figure": "pipeline", "nj": nj,
                          "files": len(files), "sample_rate": rate, "audio_seconds": round(audio, 1),
                          "ours_audio_s_per_s": round(best["ours"], 1),
                          "knf_audio_s_per_s": round(best["knf"], 1),
                          "ratio": round(best["ours"] / best["knf"], 3)}), flush=True)

    # computation alone, waveforms in memory
    import numpy as np
    import torch

    from hybridasr.features.extractor import FeatureExtractor

    torch.set_num_threads(1)
    opts = _opts()
    waves = [sf.read(str(p), dtype="int16")[0].astype(np.float32) for p in files]
    keys = [p.stem for p in files]
    audio = sum(len(w) for w in waves) / float(rate)
    ex = FeatureExtractor(opts)
    t_ours, t_knf, t_single = [], [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        for i in range(0, len(waves), 64):
            ex.compute_batch(waves[i:i + 64], keys=keys[i:i + 64])
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        for w, k in zip(waves, keys):
            ex.compute(w, key=k)
        t_single.append(time.perf_counter() - t)
        t = time.perf_counter()
        for w in waves:
            _knf_compute(w, opts)
        t_knf.append(time.perf_counter() - t)
    print(json.dumps({"bench": "features", "figure": "compute", "nj": 1, "files": len(files),
                      "ours_batched_audio_s_per_s": round(audio / min(t_ours), 1),
                      "ours_one_by_one_audio_s_per_s": round(audio / min(t_single), 1),
                      "knf_audio_s_per_s": round(audio / min(t_knf), 1),
                      "ratio": round(min(t_knf) / min(t_ours), 3)}), flush=True)

    # the command line as a user runs it (python + torch start-up included)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "pybin" / "compute_mfcc_feats.py"),
                    f"--sample-frequency={rate}", "--compress=true", f"scp:{scp}",
                    f"ark,scp:{tmp}/cli.ark,{tmp}/cli.scp"], check=True, env=env,
                   stderr=subprocess.DEVNULL)
    t_cli = time.perf_counter() - t
    print(json.dumps({"bench": "features", "figure": "cli", "nj": 1, "files": len(files),
                      "ours_audio_s_per_s": round(audio / t_cli, 1),
                      "ours_wall_s": round(t_cli, 2),
                      "knf_audio_s_per_s": round(knf_pipeline[1], 1),
                      "ratio": round(audio / t_cli / knf_pipeline[1], 3),
                      "note": "ours includes python/torch start-up, knf (pipeline nj 1) not"}),
          flush=True)
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
