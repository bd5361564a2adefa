"""Import a Kaldi GMM alignment dir as hybrid training targets (``steps/import_ali.sh``).

Reads ``<ali-dir>/final.mdl`` (its TransitionModel; its phones must be those of the ali dir's
``phones.txt`` and, with ``--lang``, of the lang dir's) and ``ali.{1..num_jobs}.gz`` (no other
``ali.*.gz`` may be there: a ``num_jobs`` that disagrees with the files is an error) job by job;
maps transition-ids to pdf-ids; checks each alignment against the model (transition-ids in
range, phones split as Kaldi's SplitToPhones expects) and against the feature frame count of
``<data-dir>`` (``utt2num_frames``, else the ``feats.scp`` matrix headers) with Kaldi nnet1's
``--length-tolerance``: targets longer than the features are cut to the feature length,
shorter ones kept as they are (the dataset trims the features to them, as nnet1 trims both).
Writes into ``<dir>``: ``targets.ark``, ``targets.scp`` (sorted), ``target_lengths`` (frames of
each utterance's targets, ``utt2num_frames`` format, sorted), ``pdf_counts``,
``num_pdfs``, copies of ``final.mdl``, ``tree``, ``phones.txt`` and ``import_report.json``.
Labels are not delayed here: the label delay is a training option (``--label-delay`` of
``pybin/train.py``), stored with the model and undone at decoding.

Everything is first written into a staging dir inside ``<dir>`` and moved into place only when
the whole import succeeded, so a failed import leaves no partial output behind.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Dict, List

import numpy as np

from hybridasr.align.alignments import alignment_files, iter_alignment_file
from hybridasr.align.ali_dir import (COPIED, NUM_PDFS, OUTPUT_FILES, PDF_COUNTS, REPORT,
                                      TARGET_LENGTHS, TARGETS_ARK, TARGETS_SCP)
from hybridasr.align.counts import write_counts
from hybridasr.align.length_tolerance import (DEFAULT_LENGTH_TOLERANCE, DROPPED, EXACT, SHORTER,
                                              TRIMMED, match_length)
from hybridasr.align.phones import split_to_phones
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.table import read_int_map, write_map
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.symbol_table import check_model_phones, check_phones_compatible
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.options import option

log = logging.getLogger("import_ali")

_MAX_EXAMPLES = 20


@dataclass
class ImportOptions:
    length_tolerance: int = option(
        DEFAULT_LENGTH_TOLERANCE,
        "keep an utterance when |aligned frames - feature frames| < this (Kaldi nnet1's "
        "semantics): longer targets are cut to the features, shorter ones kept (training trims "
        "the features to them; their lengths go to <dir>/target_lengths); drop it otherwise",
        minimum=0)
    lang: str = option("", "a lang dir the alignments must fit: its phones.txt is the ali dir's "
                           "(disambiguation symbols aside, as Kaldi's "
                           "utils/lang/check_phones_compatible.sh) and final.mdl's phones "
                           "(empty: only the ali dir's own phones.txt is checked)")
    label_delay: int = option(0, "not applied at import: only 0 is accepted; delay the labels "
                                 "with train.py's --label-delay, which the model stores and "
                                 "decoding undoes")


@dataclass
class ImportReport:
    ali_dir: str
    data_dir: str
    num_pdfs: int = 0
    length_tolerance: int = DEFAULT_LENGTH_TOLERANCE
    utterances_imported: int = 0
    frames_imported: int = 0          # target frames written (what training can use)
    exact_length: int = 0
    trimmed_within_tolerance: int = 0  # targets longer than the features: cut to them
    shorter_within_tolerance: int = 0  # targets shorter: kept; the features are trimmed
    dropped_over_tolerance: int = 0
    features_without_alignment: int = 0
    alignment_without_features: int = 0
    examples: Dict[str, List[str]] = field(default_factory=dict)

    def note(self, kind: str, utt: str) -> None:
        ex = self.examples.setdefault(kind, [])
        if len(ex) < _MAX_EXAMPLES:
            ex.append(utt)


def feature_lengths(data_dir: str) -> "OrderedDict[str, int]":
    """Frame counts of the data dir's utterances: ``utt2num_frames``, else feats.scp headers."""
    utt2num_frames = os.path.join(data_dir, "utt2num_frames")
    if os.path.isfile(utt2num_frames):
        return read_int_map(utt2num_frames)
    feats = os.path.join(data_dir, "feats.scp")
    if not os.path.isfile(feats):
        raise FormatError(f"{data_dir}: neither utt2num_frames nor feats.scp: no features to "
                          f"match the alignments against")
    from hybridasr.kaldi.io.matrix_lengths import read_scp_lengths

    return read_scp_lengths(feats)


def check_phones(ali_dir: str, tm, lang_dir: str = "") -> None:
    """``<ali-dir>/final.mdl`` has the phones of ``<ali-dir>/phones.txt`` (when there is one)
    and, with ``lang_dir``, the lang dir's ``phones.txt`` is the ali dir's (disambiguation
    symbols aside) and the model's: an ali dir from another lang dir is an error naming both
    files, before any alignment is read."""
    model = os.path.join(ali_dir, "final.mdl")
    own = os.path.join(ali_dir, "phones.txt")
    why = "the alignments were made with another lang dir"
    if os.path.isfile(own):
        check_model_phones(model, tm.topology.phones, own, why)
    if lang_dir:
        lang_phones = os.path.join(lang_dir, "phones.txt")
        if not os.path.isfile(lang_phones):
            raise FormatError(f"--lang {lang_dir}: no phones.txt (not a lang dir?)")
        if os.path.isfile(own):
            check_phones_compatible(lang_phones, own, why)
        check_model_phones(model, tm.topology.phones, lang_phones, why)


def import_alignments(ali_dir: str, data_dir: str, out_dir: str,
                      length_tolerance: int = DEFAULT_LENGTH_TOLERANCE,
                      lang_dir: str = ImportOptions.lang) -> ImportReport:
    model = os.path.join(ali_dir, "final.mdl")
    if os.path.islink(model) and not os.path.exists(model):
        raise FormatError(f"{model} is a symbolic link to {os.readlink(model)!r}, which does "
                          f"not exist")
    if not os.path.isfile(model):
        raise FormatError(f"{ali_dir}: no final.mdl (not a Kaldi alignment dir?)")
    if length_tolerance < 0:
        raise FormatError(f"--length-tolerance must be >= 0, got {length_tolerance}")
    tm = read_transition_model(model)
    check_phones(ali_dir, tm, lang_dir)
    files = alignment_files(ali_dir)
    lengths = feature_lengths(data_dir)
    os.makedirs(out_dir, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".import_ali.", dir=out_dir)
    try:
        report = _import_into(stage, tm, files, lengths, ali_dir, data_dir, out_dir,
                              length_tolerance)
        for name in COPIED[1:]:  # tree, phones.txt (final.mdl: the one read, below)
            src = os.path.join(ali_dir, name)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(stage, name))
        shutil.copyfile(model, os.path.join(stage, COPIED[0]))
        # all outputs are complete: move them in (the report last: it marks a finished import)
        old_report = os.path.join(out_dir, REPORT)
        if os.path.exists(old_report):
            os.unlink(old_report)
        for name in OUTPUT_FILES:
            if name != REPORT and os.path.exists(os.path.join(stage, name)):
                os.replace(os.path.join(stage, name), os.path.join(out_dir, name))
        os.replace(os.path.join(stage, REPORT), os.path.join(out_dir, REPORT))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return report


def _import_into(stage: str, tm, files: List[str], lengths: "OrderedDict[str, int]",
                 ali_dir: str, data_dir: str, out_dir: str, tolerance: int) -> ImportReport:
    report = ImportReport(ali_dir=ali_dir, data_dir=data_dir, num_pdfs=tm.num_pdfs,
                          length_tolerance=tolerance)
    counts = np.zeros(tm.num_pdfs, dtype=np.int64)
    offsets: Dict[str, int] = {}
    target_lengths: Dict[str, int] = {}
    seen = set()
    with IntVectorWriter(f"ark:{os.path.join(stage, 'targets.ark')}") as writer:
        for path in files:
            for utt, ali in iter_alignment_file(path):
                what = f"{path}: utterance {utt}"
                if utt in seen:
                    raise FormatError(f"{what} is aligned twice in {ali_dir}")
                seen.add(utt)
                tm.check_alignment(ali, what)
                _, ok = split_to_phones(tm, ali)
                if not ok:
                    raise FormatError(f"{what}: the alignment does not split into phones of "
                                      f"{tm.name} (Kaldi's SplitToPhones fails): final.mdl "
                                      f"does not match its alignments")
                if utt not in lengths:
                    report.alignment_without_features += 1
                    report.note("alignment_without_features", utt)
                    continue
                pdfs, status = match_length(tm.tid2pdf[ali], lengths[utt], tolerance)
                if status == DROPPED:
                    report.dropped_over_tolerance += 1
                    report.note("dropped_over_tolerance", utt)
                    log.warning("%s: length mismatch: %d aligned frames, %d feature frames "
                                "(tolerance %d): dropped", what, len(ali), lengths[utt],
                                tolerance)
                    continue
                if status == TRIMMED:
                    report.trimmed_within_tolerance += 1
                    report.note("trimmed_within_tolerance", utt)
                elif status == SHORTER:
                    report.shorter_within_tolerance += 1
                    report.note("shorter_within_tolerance", utt)
                else:
                    assert status == EXACT
                    report.exact_length += 1
                offsets[utt] = writer.write(utt, pdfs)
                target_lengths[utt] = len(pdfs)
                counts += np.bincount(pdfs, minlength=tm.num_pdfs)
                report.utterances_imported += 1
                report.frames_imported += len(pdfs)
    for utt in lengths:
        if utt not in seen:
            report.features_without_alignment += 1
            report.note("features_without_alignment", utt)
    if report.utterances_imported == 0:
        raise FormatError(f"no utterance imported from {ali_dir} for {data_dir}: "
                          f"{report.alignment_without_features} alignments without features, "
                          f"{report.dropped_over_tolerance} dropped for length: wrong data dir?")
    ark_final = os.path.join(out_dir, TARGETS_ARK)
    with open(os.path.join(stage, TARGETS_SCP), "w", encoding="utf-8") as f:
        for utt in sorted(offsets):
            f.write(f"{utt} {ark_final}:{offsets[utt]}\n")
    write_map(os.path.join(stage, TARGET_LENGTHS),
              [(utt, target_lengths[utt]) for utt in sorted(target_lengths)])
    write_counts(os.path.join(stage, PDF_COUNTS), counts)
    with open(os.path.join(stage, NUM_PDFS), "w", encoding="utf-8") as f:
        f.write(f"{tm.num_pdfs}\n")
    with open(os.path.join(stage, REPORT), "w", encoding="utf-8") as f:
        json.dump(asdict(report), f, indent=1)
        f.write("\n")
    return report
