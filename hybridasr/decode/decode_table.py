"""Decoding a table of log-likelihood matrices (what ``decode-faster-mapped`` does).

Every utterance of the input gets an output line: an utterance with no surviving path is
written with an empty word sequence (so scoring counts its words as deletions) and a warning;
one that reaches no final state gets its best partial path (Kaldi's ``--allow-partial``).
The log-likelihoods come from ``hybridasr.kaldi.io.matrix_reader.read_matrices``, the words and
alignments go to ``hybridasr.kaldi.io.table_writer.IntVectorWriter``s.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

import numpy as np

from hybridasr.decode.decoder import MappedDecoder
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.symbol_table import ids_to_text

log = logging.getLogger(__name__)


@dataclass
class DecodeSummary:
    num_done: int = 0
    num_partial: int = 0
    num_failed: int = 0
    num_frames: int = 0
    total_acoustic_cost: float = 0.0
    elapsed: float = 0.0

    def describe(self, acoustic_scale: float) -> str:
        per_frame = (-self.total_acoustic_cost / acoustic_scale / self.num_frames
                     if self.num_frames and acoustic_scale else 0.0)
        rtf = self.elapsed / (self.num_frames / 100.0) if self.num_frames else 0.0
        return (f"decoded {self.num_done} utterances ({self.num_partial} without reaching a final "
                f"state, {self.num_failed} failed: written empty); log-like per frame "
                f"{per_frame:.4f} over {self.num_frames} frames; {self.elapsed:.2f}s, "
                f"real-time factor {rtf:.4f} at 100 frames/s")


def decode_table(decoder: MappedDecoder, matrices: Iterable[Tuple[str, np.ndarray]],
                 acoustic_scale: float, words: IntVectorWriter,
                 alignments: Optional[IntVectorWriter] = None,
                 symbols: Optional[Dict[int, str]] = None,
                 allow_partial: bool = True) -> DecodeSummary:
    summary = DecodeSummary()
    start = time.perf_counter()
    for key, mat in matrices:
        r = decoder.decode(mat, acoustic_scale, utt=key)
        summary.num_done += 1
        summary.num_frames += r.num_frames
        if not r.ok:
            summary.num_failed += 1
            log.warning("utterance %s: no surviving path over %d frames (fewer frames than "
                        "the graph needs, or beam too narrow): written with no words",
                        key, r.num_frames)
        elif not r.reached_final:
            summary.num_partial += 1
            if allow_partial:
                log.warning("utterance %s: no final state reached; writing the partial "
                            "best path", key)
            else:
                log.warning("utterance %s: no final state reached (--allow-partial=false): "
                            "written with no words", key)
                r.words, r.alignment = [], []
        summary.total_acoustic_cost += r.acoustic_cost
        words.write(key, r.words)
        if alignments is not None:
            alignments.write(key, r.alignment)
        if symbols is not None:
            text = ids_to_text(symbols, r.words)
            log.info("%s %s (cost %.3f graph + %.3f acoustic over %d frames)", key, text,
                     r.graph_cost, r.acoustic_cost, r.num_frames)
    summary.elapsed = time.perf_counter() - start
    return summary
