"""Targets for speed-perturbed utterances (``steps/perturb_ali.sh``): the alignment of each
``sp<F>-<utt>`` copy is the imported alignment of ``<utt>`` resampled to the copy's frames.

Kaldi recipes realign the perturbed data dir with the GMM (``align_fmllr.sh data/train_sp``);
without Kaldi's binaries the toolkit stretches the original frame-level pdf sequence instead: a
copy at speed F has about 1/F times the frames, and frame j of n' takes the label of frame
``floor((j + 0.5) * n / n')`` of the original's n (nearest by relative time: the same
boundaries, moved with the audio). The result has exactly the copy's feature frame count.

Checks: the copy's feature frames must be within ``max_mismatch`` frames of the original
utterance's feature frames divided by F (an error naming the utterance otherwise: wrong audio,
wrong factor or a truncated file, not something to train on); the unperturbed utterances keep
their targets, matched to their features as the importer does (``--length-tolerance``).
The output is an import dir (``hybridasr.align.ali_dir``) for the perturbed data dir:
``targets.ark/scp``, ``target_lengths``, ``pdf_counts`` (of all the copies: what the network is
trained on), ``num_pdfs``, the copies of ``final.mdl``/``tree``/``phones.txt`` and a report.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.align.ali_dir import (COPIED, NUM_PDFS, OUTPUT_FILES, PDF_COUNTS, REPORT,
                                      TARGET_LENGTHS, TARGETS_ARK, TARGETS_SCP,
                                      ImportedAlignments)
from hybridasr.align.counts import write_counts
from hybridasr.align.importer import feature_lengths
from hybridasr.align.length_tolerance import (DEFAULT_LENGTH_TOLERANCE, DROPPED,
                                              match_length)
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import read_int_vector_scp
from hybridasr.kaldi.io.table import write_map
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.options import option

log = logging.getLogger("perturb_ali")

_PREFIX = re.compile(r"^sp([0-9]*\.?[0-9]+)-(.+)$")


@dataclass
class PerturbAliOptions:
    max_mismatch: int = option(2, "a perturbed utterance's feature frames may differ from its "
                                  "original's frames / factor by at most this many (more is an "
                                  "error naming it)", minimum=0)
    length_tolerance: int = option(DEFAULT_LENGTH_TOLERANCE,
                                   "for the unperturbed utterances: as import_alignments.py's "
                                   "(nnet1's --length-tolerance)", minimum=1)
    src_data: str = option("", "the unperturbed data dir whose feature lengths the originals "
                               "have (default: the perturbed dir itself, which holds them in a "
                               "3-way dir)")


def resample_alignment(labels: np.ndarray, num_frames: int) -> np.ndarray:
    """``labels`` (one per frame) stretched or squeezed to ``num_frames`` frames: frame j takes
    the label at relative time (j + 0.5) / num_frames of the original."""
    labels = np.asarray(labels)
    n = len(labels)
    if n == 0 or num_frames <= 0:
        raise ValueError(f"cannot resample {n} labels to {num_frames} frames")
    idx = ((np.arange(num_frames, dtype=np.int64) * 2 + 1) * n) // (2 * num_frames)
    return labels[np.minimum(idx, n - 1)]


def resample_segments(segments: Sequence[Tuple[int, int]], num_frames: int
                      ) -> Optional[List[Tuple[int, int]]]:
    """(label, frames) segments stretched or squeezed to ``num_frames`` frames in all, each
    boundary moved to the same relative time (rounded) and every segment kept at least one
    frame long (the chain numerator of a speed-perturbed copy: its phones and their times);
    None where ``num_frames`` is fewer than the segments."""
    n = sum(d for _, d in segments)
    if n <= 0 or num_frames < len(segments):
        return None
    ends = np.cumsum([d for _, d in segments], dtype=np.int64)
    new = (ends * 2 * num_frames + n) // (2 * n)  # round(end * num_frames / n)
    k = len(segments)
    lo = np.arange(1, k + 1)  # at least one frame each, from the start ...
    hi = num_frames - np.arange(k - 1, -1, -1)  # ... and from the end
    new = np.minimum(np.maximum(new, lo), hi)
    new = np.maximum.accumulate(np.maximum(new, lo))
    for i in range(1, k):  # strictly increasing (the clamps above keep room for it)
        if new[i] <= new[i - 1]:
            new[i] = new[i - 1] + 1
    starts = np.concatenate([[0], new[:-1]])
    return [(lab, int(d)) for (lab, _), d in zip(segments, new - starts)]


def perturbed_source(utt: str, originals) -> Optional[Tuple[str, float]]:
    """(original utterance, factor) for ``sp<F>-<utt>`` whose ``<utt>`` is among
    ``originals``; None for an utterance that is itself an original or has no such prefix."""
    if utt in originals:
        return None
    m = _PREFIX.match(utt)
    if m is None or float(m.group(1)) <= 0:
        return None
    return m.group(2), float(m.group(1))


@dataclass
class PerturbReport:
    src_ali: str
    data_dir: str
    num_pdfs: int = 0
    utterances: int = 0
    frames: int = 0
    unperturbed: int = 0
    perturbed: int = 0
    max_mismatch_seen: float = 0.0
    without_alignment: int = 0       # the original has no targets (not imported, dropped)
    dropped_over_tolerance: int = 0  # unperturbed ones, as the importer
    examples: Dict[str, List[str]] = field(default_factory=dict)

    def note(self, kind: str, utt: str) -> None:
        ex = self.examples.setdefault(kind, [])
        if len(ex) < 20:
            ex.append(utt)


def perturb_alignments(src_ali: str, data_dir: str, out_dir: str,
                       opts: PerturbAliOptions = PerturbAliOptions()) -> PerturbReport:
    """Writes the import dir ``out_dir`` for ``data_dir`` (a speed-perturbed dir) from the
    import dir ``src_ali`` of the unperturbed data."""
    src = ImportedAlignments(src_ali)
    targets = read_int_vector_scp(src.targets_scp)
    num_pdfs = src.num_pdfs
    lengths = feature_lengths(data_dir)
    orig_lengths = feature_lengths(opts.src_data) if opts.src_data else lengths
    report = PerturbReport(src_ali=src_ali, data_dir=data_dir, num_pdfs=num_pdfs)
    counts = np.zeros(num_pdfs, dtype=np.int64)
    offsets: Dict[str, int] = {}
    out_lengths: Dict[str, int] = {}
    os.makedirs(out_dir, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".perturb_ali.", dir=out_dir)
    try:
        with IntVectorWriter(f"ark:{os.path.join(stage, TARGETS_ARK)}") as writer:
            for utt, n_frames in lengths.items():
                source = perturbed_source(utt, targets)
                orig = utt if source is None else source[0]
                if orig not in targets:
                    report.without_alignment += 1
                    report.note("without_alignment", utt)
                    continue
                if source is None:
                    pdfs, status = match_length(targets[utt], n_frames, opts.length_tolerance)
                    if status == DROPPED:
                        report.dropped_over_tolerance += 1
                        report.note("dropped_over_tolerance", utt)
                        continue
                    report.unperturbed += 1
                else:
                    factor = source[1]
                    if orig not in orig_lengths:
                        raise FormatError(
                            f"{utt}: no feature length for its original {orig} in "
                            f"{opts.src_data or data_dir} (give the unperturbed data dir with "
                            f"--src-data)")
                    expected = orig_lengths[orig] / factor
                    diff = abs(n_frames - expected)
                    report.max_mismatch_seen = max(report.max_mismatch_seen, round(diff, 2))
                    if diff > opts.max_mismatch:
                        raise FormatError(
                            f"{utt}: {n_frames} feature frames, but its original {orig} has "
                            f"{orig_lengths[orig]} at speed 1 (expected about {expected:.1f} at "
                            f"speed {factor:g}, at most {opts.max_mismatch} off): the perturbed "
                            f"audio is not {orig}'s at that speed")
                    pdfs = resample_alignment(targets[orig], n_frames)
                    report.perturbed += 1
                offsets[utt] = writer.write(utt, pdfs)
                out_lengths[utt] = len(pdfs)
                counts += np.bincount(pdfs, minlength=num_pdfs)[:num_pdfs]
                report.utterances += 1
                report.frames += len(pdfs)
        if report.utterances == 0:
            raise FormatError(f"no utterance of {data_dir} has targets in {src_ali}: wrong "
                              f"data dir?")
        if report.without_alignment:
            log.warning("%d utterances of %s have no alignment in %s (e.g. %s): left out",
                        report.without_alignment, data_dir, src_ali,
                        " ".join(report.examples["without_alignment"][:3]))
        _finish(stage, out_dir, src_ali, offsets, out_lengths, counts, num_pdfs, report)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return report


def _finish(stage, out_dir, src_ali, offsets, out_lengths, counts, num_pdfs, report) -> None:
    ark_final = os.path.join(out_dir, TARGETS_ARK)
    with open(os.path.join(stage, TARGETS_SCP), "w", encoding="utf-8") as f:
        for utt in sorted(offsets, key=lambda u: u.encode()):
            f.write(f"{utt} {ark_final}:{offsets[utt]}\n")
    write_map(os.path.join(stage, TARGET_LENGTHS),
              [(u, out_lengths[u]) for u in sorted(out_lengths, key=lambda u: u.encode())])
    write_counts(os.path.join(stage, PDF_COUNTS), counts)
    with open(os.path.join(stage, NUM_PDFS), "w", encoding="utf-8") as f:
        f.write(f"{num_pdfs}\n")
    for name in COPIED:
        if os.path.isfile(os.path.join(src_ali, name)):
            shutil.copyfile(os.path.join(src_ali, name), os.path.join(stage, name))
    with open(os.path.join(stage, REPORT), "w", encoding="utf-8") as f:
        json.dump(asdict(report), f, indent=1)
        f.write("\n")
    if os.path.exists(os.path.join(out_dir, REPORT)):
        os.unlink(os.path.join(out_dir, REPORT))
    for name in OUTPUT_FILES:  # the report last: it marks a finished dir
        if name != REPORT and os.path.exists(os.path.join(stage, name)):
            os.replace(os.path.join(stage, name), os.path.join(out_dir, name))
    os.replace(os.path.join(stage, REPORT), os.path.join(out_dir, REPORT))
