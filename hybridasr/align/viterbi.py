"""Viterbi alignment of per-pdf log-likelihoods on a training graph, as Kaldi's
``align-compiled-mapped`` (``AlignUtteranceWrapper``): Kaldi's ``FasterDecoder`` (the
kaldi-decoder package) runs with ``--beam``; if no path reaches a final state it runs again
with ``--retry-beam``; if that fails too the utterance is reported and skipped.

The decoder's input label ``tid`` reads column ``tid - 1`` of the matrix it is given
(``DecodableCtc``); the matrix has one column per transition-id holding ``acoustic_scale *
loglike[frame, pdf(tid)]``, which is Kaldi's ``DecodableMatrixScaledMapped``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.pdf_mapping import PdfMapping
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.options import option

log = logging.getLogger(__name__)

__all__ = ["AlignOptions", "AlignResult", "align_utterance"]


@dataclass
class AlignOptions:
    """align-compiled-mapped's search options (values of Kaldi's alignment scripts)."""
    beam: float = option(10.0, "decoding beam of the alignment")
    retry_beam: float = option(40.0, "beam of the second try when the first reaches no final "
                                     "state (0: no second try)")
    acoustic_scale: float = option(0.1, "scale of the acoustic log-likelihoods")


@dataclass
class AlignResult:
    alignment: Optional[np.ndarray]  # int32 transition-ids, one per frame; None: failed
    cost: float = float("inf")  # graph + scaled acoustic cost of the best path
    retried: bool = False

    @property
    def ok(self) -> bool:
        return self.alignment is not None


def _decode(graph, matrix: np.ndarray, beam: float):
    import kaldi_decoder
    import kaldifst

    opts = kaldi_decoder.FasterDecoderOptions(beam=beam)
    decoder = kaldi_decoder.FasterDecoder(graph, opts)
    decoder.decode(kaldi_decoder.DecodableCtc(matrix))
    if not decoder.reached_final():
        return None
    ok, best = decoder.get_best_path(True)
    if not ok or best.num_states == 0:
        return None
    linear, ilabels, _, weight = kaldifst.get_linear_symbol_sequence(best)
    if not linear:
        return None
    return np.asarray(ilabels, dtype=np.int32), float(weight.value1) + float(weight.value2)


def align_utterance(graph, tm: TransitionModel, loglikes: np.ndarray,
                    opts: AlignOptions = AlignOptions(), utt: str = "",
                    local2tid: Optional[np.ndarray] = None) -> AlignResult:
    """Best path of ``graph`` (input labels transition-ids, or with ``local2tid`` the labels
    of a compact graph, see ``TrainingGraphCompiler.compile``) through ``loglikes`` [T, pdfs].
    The alignment is in transition-ids either way."""
    mapping = PdfMapping(tm.tid2pdf, tm.num_pdfs, name=f"the transition model {tm.name}")
    loglikes = mapping.check(loglikes, utt)
    if loglikes.shape[0] == 0:
        return AlignResult(None)
    matrix = mapping.by_label(loglikes, opts.acoustic_scale, local2tid)  # alive while decoding
    found = _decode(graph, matrix, opts.beam)
    retried = False
    if found is None and opts.retry_beam > 0:
        log.warning("utterance %s: retrying with beam %g", utt, opts.retry_beam)
        retried = True
        found = _decode(graph, matrix, opts.retry_beam)
    if found is None:
        return AlignResult(None, retried=retried)
    ali, cost = found
    if local2tid is not None:
        ali = local2tid[ali]
    if len(ali) != loglikes.shape[0]:
        raise FormatError(f"utterance {utt}: the alignment has {len(ali)} frames for "
                          f"{loglikes.shape[0]} frames of log-likelihoods (graph with "
                          f"epsilon-input self-loops?)")
    return AlignResult(ali, cost, retried)
