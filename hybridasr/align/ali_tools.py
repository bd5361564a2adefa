"""The work of Kaldi's alignment tools (``ali-to-pdf``, ``ali-to-phones``, ``analyze-counts``,
``show-alignments``) over rspecifiers/wspecifiers; ``pybin/`` wraps each in a command."""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Optional, TextIO

import numpy as np

from hybridasr.align.counts import count_labels
from hybridasr.align.phones import phone_segments
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.io.streams import OutputStream
from hybridasr.kaldi.symbol_table import read_symbol_table
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.io.vector_io import format_kaldi_vector, write_kaldi_vector
from hybridasr.options import option


@dataclass
class CtmOptions:
    frame_shift: float = option(0.01, "frame shift in seconds, for --ctm-output", minimum=0.0)

log = logging.getLogger("ali_tools")


def ali_to_pdf(model: str, ali_rspecifier: str, pdf_wspecifier: str) -> int:
    tm = read_transition_model(model)
    n = 0
    with IntVectorWriter(pdf_wspecifier) as w:
        for utt, ali in read_int_vectors(ali_rspecifier):
            w.write(utt, tm.ali_to_pdf(ali, f"{ali_rspecifier}: utterance {utt}"))
            n += 1
    log.info("Converted %d alignments to pdf sequences.", n)
    return n


def ali_to_phones(model: str, ali_rspecifier: str, wspecifier: Optional[str],
                  per_frame: bool = False, write_lengths: bool = False,
                  ctm_output: Optional[str] = None,
                  frame_shift: float = CtmOptions.frame_shift) -> int:
    """Kaldi's ``ali-to-phones``: phone sequences (or per-frame phones, or (phone, length)
    pairs), and/or a CTM of the phones (``--ctm-output``)."""
    if per_frame and write_lengths:
        raise FormatError("--per-frame and --write-lengths cannot be used together")
    tm = read_transition_model(model)
    writer = IntVectorWriter(wspecifier) if wspecifier else None
    ctm = OutputStream(ctm_output) if ctm_output else None
    n = num_failed = 0
    try:
        for utt, ali in read_int_vectors(ali_rspecifier):
            what = f"{ali_rspecifier}: utterance {utt}"
            try:
                segs = phone_segments(tm, ali, what, strict=True)
            except FormatError:
                num_failed += 1  # Kaldi goes on with the split it has; so do we
                log.warning("%s: SplitToPhones failed (model and alignment do not match?)", what)
                segs = phone_segments(tm, ali, what, strict=False)
            if writer is not None:
                if write_lengths:
                    writer.write_pairs(utt, segs)
                elif per_frame:
                    writer.write(utt, np.repeat([p for p, _ in segs],
                                                [k for _, k in segs]).astype(np.int32))
                else:
                    writer.write(utt, np.array([p for p, _ in segs], dtype=np.int32))
            if ctm is not None:
                start = 0
                lines = []
                for phone, k in segs:
                    lines.append(f"{utt} 1 {start * frame_shift:g} {k * frame_shift:g} {phone}\n")
                    start += k
                ctm.write("".join(lines).encode())
            n += 1
    except BaseException:
        if writer is not None:
            writer.abort()
        if ctm is not None:
            ctm.abort()
        raise
    if writer is not None:
        writer.close()
    if ctm is not None:
        ctm.commit()
    log.info("Done %d utterances%s.", n, f" ({num_failed} failed to split)" if num_failed else "")
    return n


def analyze_counts(rspecifier: str, counts_wxfilename: str, binary: bool = True,
                   counts_dim: int = 0, rescale_to_probs: bool = False) -> np.ndarray:
    """Kaldi's ``analyze-counts``: frame counts of each integer label over an archive
    (``--counts-dim=0``: as many as the largest label + 1)."""
    if counts_dim > 0:
        counts = count_labels((v for _, v in read_int_vectors(rspecifier)), counts_dim)
    else:
        counts = np.zeros(0, dtype=np.int64)
        for _, v in read_int_vectors(rspecifier):
            if v.size == 0:
                continue
            if int(v.min()) < 0:
                raise FormatError(f"{rspecifier}: negative label {int(v.min())}")
            c = np.bincount(v)
            if len(c) > len(counts):
                counts = np.concatenate([counts, np.zeros(len(c) - len(counts), np.int64)])
            counts[:len(c)] += c
    out = counts.astype(np.float64)
    if rescale_to_probs:
        total = out.sum()
        if total > 0:
            out = out / total
    if counts_wxfilename == "-":
        if binary:
            raise FormatError("writing binary counts to stdout: use --binary=false")
        sys.stdout.write(format_kaldi_vector(out))
        sys.stdout.flush()
    else:
        write_kaldi_vector(counts_wxfilename, out, binary=binary)
    log.info("Counted %d frames in %d classes.", int(counts.sum()), len(counts))
    return out


def show_alignments(phones_txt: str, model: str, ali_rspecifier: str,
                    out: TextIO = sys.stdout) -> int:
    """Kaldi's ``show-alignments``: per utterance, the transition-ids of each phone in
    brackets, the phone names aligned under them, and a blank line."""
    syms = read_symbol_table(phones_txt)
    tm = read_transition_model(model)
    n = 0
    for utt, ali in read_int_vectors(ali_rspecifier):
        segs = phone_segments(tm, ali, f"{ali_rspecifier}: utterance {utt}", strict=False)
        top, bottom = [], []
        start = 0
        for phone, k in segs:
            a = "[ " + "".join(f"{t} " for t in ali[start:start + k].tolist()) + "] "
            b = syms.get(phone, str(phone)) + " "
            width = max(len(a), len(b))
            top.append(a.ljust(width))
            bottom.append(b.ljust(width))
            start += k
        out.write(f"{utt}  {''.join(top)}\n{utt}  {''.join(bottom)}\n\n")
        n += 1
    out.flush()
    return n
