"""The embedded decoder: Kaldi's ``FasterDecoder`` (kaldi-decoder package) on a Kaldi graph.

Kaldi's ``decode-faster-mapped`` reads per-pdf log-likelihoods and looks each transition-id's
pdf up in the TransitionModel (``DecodableMatrixScaledMapped``). kaldi-decoder's
``DecodableCtc(m)`` returns ``m[frame, index - 1]`` for input label ``index``; handing it a
matrix with one column per transition-id, column ``tid - 1`` holding ``acoustic_scale *
loglike[frame, pdf(tid)]``, makes the C++ decoder do exactly what Kaldi's does.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import List

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.options import option

log = logging.getLogger(__name__)

INT32_MAX = 2147483647


@dataclass
class DecodeOptions:
    """decode-faster-mapped's search options (Kaldi's FasterDecoderOptions), Kaldi's
    defaults."""
    beam: float = option(16.0, "decoding beam")
    max_active: int = option(INT32_MAX, f"maximum number of active states ({INT32_MAX}: no "
                                        f"limit)")
    min_active: int = option(20, "minimum number of active states")
    beam_delta: float = option(0.5, "increment used when the beam is tightened by "
                                    "--max-active")
    hash_ratio: float = option(2.0, "setting used in the decoder to control hash behaviour")


@dataclass
class DecodeResult:
    words: List[int] = field(default_factory=list)  # word ids (no epsilons)
    alignment: List[int] = field(default_factory=list)  # transition-ids, one per frame
    graph_cost: float = 0.0
    acoustic_cost: float = 0.0  # of the scaled log-likelihoods
    num_frames: int = 0
    reached_final: bool = False
    ok: bool = False  # False: no path survived (the words are empty)

    @property
    def total_cost(self) -> float:
        return self.graph_cost + self.acoustic_cost


class MappedDecoder:
    """Decodes per-pdf log-likelihood matrices on a graph whose input labels are
    transition-ids (``tid2pdf[tid]`` = pdf; index 0 unused)."""

    def __init__(self, fst, tid2pdf: np.ndarray, num_pdfs: int | None = None,
                 options: DecodeOptions = DecodeOptions(), max_ilabel: int | None = None):
        import kaldi_decoder

        self.tid2pdf = np.asarray(tid2pdf, dtype=np.int64)
        top = int(self.tid2pdf[1:].max()) + 1 if len(self.tid2pdf) > 1 else 0
        self.num_pdfs = top if num_pdfs is None else int(num_pdfs)
        if self.num_pdfs < top:
            raise FormatError(f"transition model maps to pdf {top - 1} but has {num_pdfs} pdfs")
        num_tids = len(self.tid2pdf) - 1
        if max_ilabel is not None and max_ilabel > num_tids:
            raise FormatError(f"the graph has input label {max_ilabel} but the transition model "
                              f"has only {num_tids} transition-ids: the graph was built for a "
                              f"different model")
        self.options = options
        opts = kaldi_decoder.FasterDecoderOptions(
            beam=options.beam, max_active=options.max_active, min_active=options.min_active,
            beam_delta=options.beam_delta, hash_ratio=options.hash_ratio)
        self._fst = fst  # the C++ decoder keeps a pointer to it: keep it alive
        self._decoder = kaldi_decoder.FasterDecoder(fst, opts)
        self._decodable = kaldi_decoder.DecodableCtc

    def tid_matrix(self, loglikes: np.ndarray, acoustic_scale: float) -> np.ndarray:
        """[T, num_tids] float32: column tid-1 = acoustic_scale * loglikes[:, pdf(tid)]."""
        return np.ascontiguousarray(
            np.asarray(loglikes, dtype=np.float32)[:, self.tid2pdf[1:]] * np.float32(acoustic_scale))

    def decode(self, loglikes: np.ndarray, acoustic_scale: float = 0.1,
               utt: str = "") -> DecodeResult:
        import kaldifst

        loglikes = np.asarray(loglikes)
        if loglikes.ndim == 2 and loglikes.shape[0] == 0:
            return DecodeResult()  # no frames: nothing can survive
        if loglikes.ndim != 2 or loglikes.shape[1] != self.num_pdfs:
            raise FormatError(f"utterance {utt}: log-likelihoods have shape {loglikes.shape}, "
                              f"but the transition model has {self.num_pdfs} pdfs (is the model's "
                              f"output dim the alignment model's number of pdfs?)")
        if np.isnan(loglikes).any():
            raise FormatError(f"utterance {utt}: log-likelihoods contain NaN (a diverged model?)")
        res = DecodeResult(num_frames=int(loglikes.shape[0]))
        matrix = self.tid_matrix(loglikes, acoustic_scale)  # alive while the decoder runs
        decodable = self._decodable(matrix)
        self._decoder.decode(decodable)
        res.reached_final = bool(self._decoder.reached_final())
        ok, best = self._decoder.get_best_path(True)
        if not ok or best.num_states == 0:
            return res
        linear, ilabels, olabels, weight = kaldifst.get_linear_symbol_sequence(best)
        if not linear:  # cannot happen for a best path; be explicit rather than wrong
            raise FormatError(f"utterance {utt}: the decoder's best path is not linear")
        res.ok = True
        res.words, res.alignment = list(olabels), list(ilabels)
        res.graph_cost, res.acoustic_cost = float(weight.value1), float(weight.value2)
        return res
