"""One feature-extraction job: ``wav.scp`` (+ ``segments``) in, ark/scp of features out.

What Kaldi does with ``extract-segments | compute-mfcc-feats | copy-feats --compress``, in one
process: utterances that cannot be read or are too short are skipped with a warning naming them;
the job fails (writing nothing) only when more than ``max_skipped_fraction`` of them were
skipped. The ark and scp appear atomically (``ArkScpWriter``), as do ``utt2num_frames`` and
``utt2dur``. ``FeatureTableOptions`` declares the job's settings (what ``extract-segments`` and
``copy-feats`` add to the feature options in Kaldi's ``make_mfcc.sh``, and the job's own).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch

from hybridasr.errors import ConfigError, FormatError, HybridAsrError
from hybridasr.features.audio import Audio, UtteranceError, iter_audio
from hybridasr.features.extractor import FeatureExtractor
from hybridasr.features.options import FeatureOptions
from hybridasr.kaldi.io.specifier import parse_wspecifier, text_table_path
from hybridasr.kaldi.io.table import read_map
from hybridasr.kaldi.io.table_writer import ArkScpWriter, TextTableWriter
from hybridasr.options import check, from_values, option

log = logging.getLogger("hybridasr.features")


@dataclass(frozen=True)
class FeatureWriteOptions:
    """How a feature table is written (Kaldi's ``copy-feats`` options)."""
    compress: bool = option(False, "write Kaldi compressed matrices (copy-feats --compress)")
    compression_method: int = option(
        1, "with --compress: Kaldi's CompressionMethod, 1 = automatic as copy-feats (8-bit CM "
           "above 8 frames, else 16-bit CM2), 2 = always CM", choices=range(1, 8))
    write_num_frames: str = option("", "write frame counts, e.g. "
                                       "ark,t:exp/log/utt2num_frames.1")


@dataclass(frozen=True)
class FeatureTableOptions(FeatureWriteOptions):
    """The settings of one feature-extraction job besides the feature options."""
    segments: str = option("", "Kaldi segments file: cut utterances out of the wav.scp "
                               "recordings")
    min_segment_length: float = option(0.1, "skip segments shorter than this, in seconds")
    max_overshoot: float = option(0.5, "segments ending less than this past the recording are "
                                       "truncated, others skipped (seconds)")
    channel: int = option(-1, "channel to extract (-1: expect mono, 0: left, 1: right)",
                          minimum=-1)
    min_duration: float = option(0.0, "skip utterances shorter than this, in seconds")
    subtract_mean: bool = option(False, "subtract the mean of each utterance (CMS)")
    output_format: str = option("kaldi", "kaldi (htk is not supported)")
    vtln_warp: float = option(1.0, "VTLN warp factor (when there is no --vtln-map)")
    vtln_map: str = option("", "text table utterance (or, with --utt2spk, speaker) -> warp "
                               "factor, e.g. ark:data/train/spk2warp")
    utt2spk: str = option("", "utt2spk table for --vtln-map, e.g. ark:data/train/utt2spk")
    write_utt2dur: str = option("", "write utterance durations, e.g. ark,t:exp/log/utt2dur.1")
    seed: int = option(0, "seed of the dither noise")
    max_skipped_fraction: float = option(0.05, "fail (writing nothing) when more than this "
                                               "fraction of the utterances had to be skipped")
    batch_frames: int = option(4000, "frames computed together in one batch")
    num_threads: int = option(1, "torch threads (1 per job; parallel jobs give the speed)")

    def __post_init__(self):
        check(self)
        if self.output_format != "kaldi":
            raise ConfigError(f"--output-format={self.output_format} is not supported "
                              f"(only kaldi)")
        if self.utt2spk and not self.vtln_map:
            raise ConfigError("--utt2spk is only needed with --vtln-map")


@dataclass
class JobReport:
    num_utts: int = 0
    num_done: int = 0
    skipped: List[str] = field(default_factory=list)
    audio_seconds: float = 0.0
    num_frames: int = 0
    wall_seconds: float = 0.0

    @property
    def num_skipped(self) -> int:
        return len(self.skipped)


def read_vtln_map(vtln_map: str, utt2spk: Optional[str]) -> Dict[str, float]:
    """utt -> warp factor, from a text ``key warp`` table keyed by utterance or (with utt2spk)
    by speaker."""
    path = text_table_path(vtln_map)
    warps = {}
    for key, value in read_map(path).items():
        try:
            warps[key] = float(value)
        except ValueError:
            raise FormatError(f"{path}: warp factor of {key!r} is not a number: "
                              f"{value!r}") from None
    if utt2spk:
        spk = read_map(text_table_path(utt2spk))
        return {u: warps[s] for u, s in spk.items() if s in warps}
    return warps


class Resampler:
    """Kaldi's allow-downsample/allow-upsample: windowed-sinc resampling (6 zeros, 0.99
    cutoff, as Kaldi's LinearResample), via torchaudio."""

    def __init__(self, opts: FeatureOptions):
        self.opts = opts

    def __call__(self, audio: Audio) -> np.ndarray:
        target = self.opts.sample_frequency
        if audio.rate == target:
            return audio.samples
        if (audio.rate > target and self.opts.allow_downsample) or (
                audio.rate < target and self.opts.allow_upsample):
            import torchaudio.functional as taF

            with torch.inference_mode():
                x = torch.from_numpy(np.ascontiguousarray(audio.samples, dtype=np.float32))
                y = taF.resample(x, int(audio.rate), int(target), lowpass_filter_width=6,
                                 rolloff=0.99)
            return y.numpy()
        hint = "--allow-downsample=true" if audio.rate > target else "--allow-upsample=true"
        raise HybridAsrError(f"sample frequency mismatch for utterance {audio.key}: the "
                             f"options say --sample-frequency={target:g} but the audio is "
                             f"{audio.rate} Hz (set --sample-frequency, or {hint} to "
                             f"resample)")


def compute_feature_table(wav_scp: str, wspecifier: str, opts: FeatureOptions,
                          table: Optional[FeatureTableOptions] = None,
                          **settings) -> JobReport:
    """Computes the features of every utterance and writes them (see the module doc).

    ``table``: the job's settings, ``settings`` changes to them (``FeatureTableOptions``
    fields, e.g. ``segments="data/train/segments"``). ``num_threads``: torch threads while
    the job runs (1: parallel jobs give the speed, and one thread is fastest for these small
    matrices); the previous setting is restored."""
    table = from_values(FeatureTableOptions, {
        **(dataclasses.asdict(table) if table is not None else {}), **settings})
    threads_before = torch.get_num_threads()
    if table.num_threads > 0:
        torch.set_num_threads(table.num_threads)
    try:
        return _compute_feature_table(wav_scp, wspecifier, opts, table)
    finally:
        torch.set_num_threads(threads_before)


def _compute_feature_table(wav_scp: str, wspecifier: str, opts: FeatureOptions,
                           t: FeatureTableOptions) -> JobReport:
    vtln_warps = read_vtln_map(t.vtln_map, t.utt2spk or None) if t.vtln_map else None
    segments = t.segments or None
    spec = parse_wspecifier(wspecifier)
    ark, scp = spec.ark, spec.scp
    if ark == "-" or scp == "-":
        raise ConfigError(f"{wspecifier!r}: writing to stdout is not supported; "
                          f"write ark,scp:<ark>,<scp> files")
    t0 = time.perf_counter()
    report = JobReport()
    extractor = FeatureExtractor(opts, seed=t.seed)
    resample = Resampler(opts)
    num_frames: List[tuple] = []
    durations: List[tuple] = []
    pending: List[tuple] = []  # (key, samples, duration)
    pending_frames = 0
    pending_warp = None

    def skip(key: str, reason: str) -> None:
        log.warning("skipping utterance %s: %s", key, reason)
        report.skipped.append(key)

    def flush(writer: ArkScpWriter) -> None:
        nonlocal pending, pending_frames
        if not pending:
            return
        feats = extractor.compute_batch([p[1] for p in pending], pending_warp,
                                        [p[0] for p in pending])
        for (key, _, dur), f in zip(pending, feats):
            if f.shape[0] == 0:
                skip(key, f"too short for one frame ({dur:.3f}s)")
                continue
            if t.subtract_mean:
                f = f - f.mean(axis=0, keepdims=True)
            writer.write(key, f)
            num_frames.append((key, f.shape[0]))
            durations.append((key, f"{dur:g}"))
            report.num_done += 1
            report.num_frames += f.shape[0]
            report.audio_seconds += dur
        pending, pending_frames = [], 0

    # Kaldi's copy-feats --compress=true: method 1 (kAutomaticMethod: 8-bit per-column
    # "CM" for more than 8 frames, 16-bit "CM2" otherwise); 2 forces CM
    compression = t.compression_method if t.compress else None
    with ArkScpWriter(ark, scp, compression_method=compression) as writer:
        for item in iter_audio(wav_scp, segments, channel=t.channel,
                               min_segment_length=t.min_segment_length,
                               max_overshoot=t.max_overshoot,
                               warn=lambda m: log.warning("%s", m)):
            report.num_utts += 1
            if isinstance(item, UtteranceError):
                skip(item.key, item.reason)
                continue
            dur = item.duration
            if dur < t.min_duration:
                skip(item.key, f"too short ({dur:.3f}s < --min-duration={t.min_duration})")
                continue
            warp = t.vtln_warp
            if vtln_warps is not None:
                if item.key not in vtln_warps:
                    skip(item.key, "no entry in the --vtln-map")
                    continue
                warp = vtln_warps[item.key]
            samples = resample(item)
            if pending and warp != pending_warp:
                flush(writer)
            pending_warp = warp
            pending.append((item.key, samples, dur))
            pending_frames += opts.num_frames(len(samples))
            if pending_frames >= t.batch_frames:
                flush(writer)
        flush(writer)
        report.wall_seconds = time.perf_counter() - t0
        if report.num_utts and report.num_done == 0:
            raise HybridAsrError(f"no features computed: all {report.num_utts} utterances of "
                                 f"{wav_scp} failed (first: {report.skipped[0]})")
        if report.num_skipped > t.max_skipped_fraction * report.num_utts:
            raise HybridAsrError(
                f"{report.num_skipped} of {report.num_utts} utterances of "
                f"{segments or wav_scp} were skipped (more than --max-skipped-fraction="
                f"{t.max_skipped_fraction}); first skipped: {', '.join(report.skipped[:5])}")
    for wspecifier, table in ((t.write_num_frames, num_frames), (t.write_utt2dur, durations)):
        if wspecifier:  # ark,t:exp/log/utt2num_frames.1, or ark,t:- (stdout)
            with TextTableWriter(parse_wspecifier(wspecifier, plain_ok=True)) as w:
                for key, value in (table.items() if hasattr(table, "items") else table):
                    w.write(key, value)
    log.info("Done %d out of %d utterances (%d skipped); %.1f s of audio in %.2f s",
             report.num_done, report.num_utts, report.num_skipped, report.audio_seconds,
             report.wall_seconds)
    return report
