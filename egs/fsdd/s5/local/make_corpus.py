#!/usr/bin/env python3
"""A connected-digit corpus from the Free Spoken Digit Dataset's isolated digits.

Usage: local/make_corpus.py [options] <recordings-dir> <wav-dir> <data-dir>
 e.g.: local/make_corpus.py --seed 777 ../../../../shared/data/fsdd/recordings data/wav data

<recordings-dir> holds FSDD's {digit}_{speaker}_{index}.wav (8 kHz mono 16-bit). For each
speaker, its recordings (all 500, or the first --max-per-speaker in index-major order: index 0
of digits 0-9, then index 1, ...) are shuffled and cut into groups of --min-digits to
--max-digits (uniform; the last group takes what is left); each group is one utterance: the
recordings one after another, with a pause before, between and after them of --min-pause to
--max-pause seconds (uniform). A pause is low-level noise like the background of the recordings
it joins: Gaussian, with the mean (DC offset) of their nearest 10 ms and a standard deviation
of --noise-scale-min..1 (uniform) times the quieter one's. The recordings' own samples are
copied unchanged. Every recording of a speaker is used exactly once (--train-copies K > 1:
the training speakers' recordings K times, each time in a fresh shuffle).

--speed-factors "0.9 1.1" also writes <data-dir>/train_sp: data/train's utterances and, for
each factor f, a copy played f times as fast (Kaldi's speed perturbation, as sox's `speed`:
tempo and pitch together; band-limited resampling by FFT), utterance sp<f>-<utt> of speaker
sp<f>-<speaker>, so per-speaker CMVN keeps each factor apart.

Writes:
  <wav-dir>/<speaker>/<utt>.wav   the utterances (16-bit PCM, the recordings' rate)
  <wav-dir>/parts.txt             per utterance: <utt> <pause> <recording> <samples> <pause> ...
                                  (pauses in samples), whence the test of the durations
  <wav-dir>/corpus.json           the options and per-split sizes (utterances, words, seconds)
  <wav-dir>/sp<f>-<speaker>/sp<f>-<utt>.wav  speed-perturbed training copies
  <data-dir>/{train,test}/        Kaldi data dirs: wav.scp (absolute paths), text (digit words),
                                  utt2spk, spk2utt; utterance ids <speaker>-<nnnn>
The same options give byte-identical files (each speaker's random stream is seeded from --seed
and the speaker's name, so --speakers subsets do not change the other speakers' utterances).
Files are written to a temporary name and renamed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import soundfile as sf

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
NAME = re.compile(r"^(\d)_([A-Za-z]+)_(\d+)\.wav$")
EDGE = 0.010  # seconds of a recording's edge that give the level of the pause next to it


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--seed", type=int, default=777, help="random seed (default: %(default)s)")
    p.add_argument("--train-speakers", default="jackson nicolas theo george",
                   help="speakers of data/train (default: %(default)s)")
    p.add_argument("--test-speakers", default="yweweler lucas",
                   help="speakers of data/test, held out (default: %(default)s)")
    p.add_argument("--max-per-speaker", type=int, default=0,
                   help="use only this many recordings per speaker, in index-major order "
                        "(0: all) (default: %(default)s)")
    p.add_argument("--min-digits", type=int, default=1, help="(default: %(default)s)")
    p.add_argument("--max-digits", type=int, default=7, help="(default: %(default)s)")
    p.add_argument("--min-pause", type=float, default=0.05,
                   help="seconds (default: %(default)s)")
    p.add_argument("--max-pause", type=float, default=0.30,
                   help="seconds (default: %(default)s)")
    p.add_argument("--noise-scale-min", type=float, default=0.25,
                   help="lowest scale of a pause's noise against the quieter neighbouring "
                        "recording edge (default: %(default)s)")
    p.add_argument("--train-copies", type=int, default=1,
                   help="how many times each training recording is used, each time in a "
                        "fresh shuffle (default: %(default)s)")
    p.add_argument("--speed-factors", default="",
                   help="speed perturbation factors of the training utterances, e.g. "
                        "\"0.9 1.1\" (data/train_sp); empty: none (default: %(default)s)")
    p.add_argument("recordings")
    p.add_argument("wav_dir")
    p.add_argument("data_dir")
    return p


def speaker_rng(seed: int, speaker: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(speaker.encode())])


def list_recordings(rec_dir: Path) -> dict[str, list[tuple[int, int, str]]]:
    """speaker -> [(index, digit, file name)] in index-major order."""
    by_spk: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for name in os.listdir(rec_dir):
        m = NAME.match(name)
        if m:
            by_spk[m.group(2)].append((int(m.group(3)), int(m.group(1)), name))
    return {s: sorted(v) for s, v in by_spk.items()}


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    x, rate = sf.read(str(path), dtype="int16", always_2d=False)
    if x.ndim != 1:
        raise SystemExit(f"make_corpus.py: {path} is not mono")
    return x, rate


def pause(rng, n: int, left: np.ndarray | None, right: np.ndarray | None, rate: int,
          noise_scale_min: float) -> np.ndarray:
    """n samples of noise like the edges of the recordings before and after it."""
    e = max(1, int(EDGE * rate))
    edges = [x for x in ((left[-e:] if left is not None else None),
                         (right[:e] if right is not None else None)) if x is not None]
    mean = float(np.mean([x.astype(np.float64).mean() for x in edges]))
    std = float(min(x.astype(np.float64).std() for x in edges))
    scale = rng.uniform(noise_scale_min, 1.0)
    y = mean + scale * std * rng.standard_normal(n)
    return np.clip(np.rint(y), -32768, 32767).astype(np.int16)


def speed_perturb(x: np.ndarray, factor: float) -> np.ndarray:
    """x played factor times as fast: round(len / factor) samples at the same rate, resampled
    by FFT (band-limited: speeding up drops what would fold over the new Nyquist frequency)."""
    n = len(x)
    m = int(round(n / factor))
    spec = np.fft.rfft(x.astype(np.float64))
    k = m // 2 + 1
    out = np.zeros(k, dtype=complex)
    keep = min(k, len(spec))
    out[:keep] = spec[:keep]
    y = np.fft.irfft(out, m) * (m / n)
    return np.clip(np.rint(y), -32768, 32767).astype(np.int16)


def write_wav(path: Path, y: np.ndarray, rate: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    sf.write(str(tmp), y, rate, subtype="PCM_16", format="WAV")
    os.replace(tmp, path)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def make_speaker(args, rec_dir: Path, wav_dir: Path, speaker: str, recs, copies: int,
                 speeds=(), perturbed=None):
    """Writes the speaker's utterances; returns [(utt, words, wav path, parts line, seconds)].
    With speeds, also their speed-perturbed copies, appended to perturbed."""
    rng = speaker_rng(args.seed, speaker)
    audio = {name: read_wav(rec_dir / name) for _, _, name in recs}
    rates = {r for _, r in audio.values()}
    if len(rates) != 1:
        raise SystemExit(f"make_corpus.py: {speaker}'s recordings have several rates {rates}")
    rate = rates.pop()
    out = []
    spk_dir = wav_dir / speaker
    spk_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    for _ in range(copies):
        order = [recs[i] for i in rng.permutation(len(recs))]
        pos = 0
        while pos < len(order):
            k = int(rng.integers(args.min_digits, args.max_digits + 1))
            group = order[pos:pos + k]
            pos += len(group)
            n += 1
            utt = f"{speaker}-{n:04d}"
            pieces, parts = [], []
            prev = None
            for _, digit, name in group:
                x = audio[name][0]
                p = int(round(rng.uniform(args.min_pause, args.max_pause) * rate))
                pieces += [pause(rng, p, prev, x, rate, args.noise_scale_min), x]
                parts += [str(p), name[:-4], str(len(x))]
                prev = x
            p = int(round(rng.uniform(args.min_pause, args.max_pause) * rate))
            pieces.append(pause(rng, p, prev, None, rate, args.noise_scale_min))
            parts.append(str(p))
            y = np.concatenate(pieces)
            path = spk_dir / f"{utt}.wav"
            write_wav(path, y, rate)
            words = " ".join(WORDS[d] for _, d, _ in group)
            out.append((utt, words, path.resolve(), " ".join([utt] + parts), len(y) / rate))
            for f in speeds:
                sp = f"sp{f:g}-{speaker}"
                (wav_dir / sp).mkdir(exist_ok=True)
                z = speed_perturb(y, f)
                path = wav_dir / sp / f"sp{f:g}-{utt}.wav"
                write_wav(path, z, rate)
                perturbed.append((f"sp{f:g}-{utt}", words, path.resolve(), None, len(z) / rate))
    return out


def write_data_dir(d: Path, utts) -> None:
    d.mkdir(parents=True, exist_ok=True)
    utts = sorted(utts)  # ids are <speaker>-<nnnn>: C order sorts utt2spk and spk2utt alike
    write_atomic(d / "wav.scp", "".join(f"{u} {p}\n" for u, _, p, _, _ in utts))
    write_atomic(d / "text", "".join(f"{u} {w}\n" for u, w, _, _, _ in utts))
    write_atomic(d / "utt2spk", "".join(f"{u} {u.rsplit('-', 1)[0]}\n" for u, *_ in utts))
    spk2utt: dict[str, list[str]] = defaultdict(list)
    for u, *_ in utts:
        spk2utt[u.rsplit("-", 1)[0]].append(u)
    write_atomic(d / "spk2utt", "".join(f"{s} {' '.join(v)}\n" for s, v in sorted(spk2utt.items())))
    for stale in ("feats.scp", "cmvn.scp", "utt2dur", "utt2num_frames", "segments"):
        (d / stale).unlink(missing_ok=True)


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    os.environ["LC_ALL"] = "C"
    rec_dir = Path(args.recordings)
    wav_dir = Path(args.wav_dir)
    data_dir = Path(args.data_dir)
    if not (1 <= args.min_digits <= args.max_digits):
        raise SystemExit("make_corpus.py: need 1 <= --min-digits <= --max-digits")
    if not (0 <= args.min_pause <= args.max_pause) or args.max_pause <= 0:
        raise SystemExit("make_corpus.py: need 0 <= --min-pause <= --max-pause, --max-pause > 0")
    try:
        speeds = sorted({float(f) for f in args.speed_factors.split()} - {1.0})
    except ValueError:
        raise SystemExit(f"make_corpus.py: bad --speed-factors '{args.speed_factors}'")
    if any(not 0.5 <= f <= 2.0 for f in speeds):
        raise SystemExit("make_corpus.py: --speed-factors are between 0.5 and 2")
    if args.train_copies < 1:
        raise SystemExit("make_corpus.py: --train-copies is at least 1")
    splits = {"train": args.train_speakers.split(), "test": args.test_speakers.split()}
    if not splits["train"] or not splits["test"]:
        raise SystemExit("make_corpus.py: --train-speakers and --test-speakers may not be empty")
    if set(splits["train"]) & set(splits["test"]):
        raise SystemExit("make_corpus.py: a speaker is in both --train-speakers and "
                         f"--test-speakers: {sorted(set(splits['train']) & set(splits['test']))}")
    recs = list_recordings(rec_dir)
    for s in splits["train"] + splits["test"]:
        if s not in recs:
            raise SystemExit(f"make_corpus.py: no recordings of speaker {s} in {rec_dir} "
                             f"(there are: {' '.join(sorted(recs))})")
        if "-" in s:
            raise SystemExit(f"make_corpus.py: speaker name {s} has a '-'")

    wav_dir.mkdir(parents=True, exist_ok=True)
    summary: dict = {"options": {k: v for k, v in vars(args).items()
                                 if k not in ("recordings", "wav_dir", "data_dir")}}
    parts_lines = []
    for split, speakers in splits.items():
        utts, perturbed = [], []
        for s in speakers:
            r = recs[s][:args.max_per_speaker] if args.max_per_speaker > 0 else recs[s]
            utts += make_speaker(args, rec_dir, wav_dir, s, r,
                                 args.train_copies if split == "train" else 1,
                                 speeds if split == "train" else (), perturbed)
        write_data_dir(data_dir / split, utts)
        if split == "train" and speeds:
            write_data_dir(data_dir / "train_sp", utts + perturbed)
            summary["train_sp"] = {"speed_factors": [1.0] + speeds,
                                   "utterances": len(utts) + len(perturbed),
                                   "seconds": round(sum(u[4] for u in utts + perturbed), 3)}
        parts_lines += [u[3] for u in utts]
        summary[split] = {"speakers": speakers, "utterances": len(utts),
                          "words": sum(len(u[1].split()) for u in utts),
                          "seconds": round(sum(u[4] for u in utts), 3)}
        print(f"make_corpus.py: {data_dir / split}: {len(utts)} utterances, "
              f"{summary[split]['words']} digits, {summary[split]['seconds'] / 60:.1f} min, "
              f"speakers {' '.join(speakers)}", file=sys.stderr)
    write_atomic(wav_dir / "parts.txt", "".join(f"{x}\n" for x in sorted(parts_lines)))
    write_atomic(wav_dir / "corpus.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
