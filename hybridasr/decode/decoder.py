"""The embedded decoder: Kaldi's ``FasterDecoder`` (kaldi-decoder package) on a Kaldi graph.

Kaldi's ``decode-faster-mapped`` reads per-pdf log-likelihoods and looks each transition-id's
pdf up in the TransitionModel (``DecodableMatrixScaledMapped``). kaldi-decoder's
``DecodableCtc(m)`` returns ``m[frame, index - 1]`` for input label ``index``. The decoder
searches a copy of the graph relabelled once (``hybridasr.kaldi.fst.relabel_by_pdf``, cached
per graph file): input label ``pdf + 1``, output label the id of the original arc's
(transition-id, word) pair, so ``m`` is the [T, num_pdfs] scaled log-likelihood matrix itself
and the best path maps back to transition-ids and words exactly. Same states, arcs, weights
and arc order as the original graph: the search is the one Kaldi's decoder does.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.pdf_mapping import PdfMapping
from hybridasr.kaldi.fst import PdfGraph, relabel_by_pdf
from hybridasr.options import option

log = logging.getLogger(__name__)

INT32_MAX = 2147483647


@dataclass
class DecodeOptions:
    """The search options of every decoder: decode-faster-mapped's (Kaldi's
    FasterDecoderOptions), with Kaldi's defaults; ``LatgenOptions`` extends them."""
    beam: float = option(16.0, "decoding beam")
    max_active: int = option(INT32_MAX, f"maximum number of active states ({INT32_MAX}: no "
                                        f"limit)")
    min_active: int = option(20, "minimum number of active states")
    beam_delta: float = option(0.5, "increment used when the beam is tightened by "
                                    "--max-active")
    hash_ratio: float = option(2.0, "setting used in the decoder to control hash behaviour")


def with_default(cls, name: str, default):
    """The option ``name`` of ``cls`` (its help and checks) with another default: for a
    subclass whose Kaldi tool has a default of its own."""
    f = cls.__dataclass_fields__[name]
    return field(default=default, metadata=f.metadata)


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


_PDF_GRAPHS: Dict[Tuple, PdfGraph] = {}  # (graph file, its mtime and size, tid2pdf) -> graph


def pdf_graph(fst, tid2pdf: np.ndarray, path: Optional[str] = None) -> PdfGraph:
    """``relabel_by_pdf`` of the graph, cached per graph file (``path``) and model mapping."""
    if path is None:
        return relabel_by_pdf(fst, tid2pdf)
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size,
           np.asarray(tid2pdf, dtype=np.int64).tobytes())
    if key not in _PDF_GRAPHS:
        _PDF_GRAPHS.clear()  # one graph at a time: a process decodes with one graph
        _PDF_GRAPHS[key] = relabel_by_pdf(fst, tid2pdf, path)
    return _PDF_GRAPHS[key]


class MappedDecoder:
    """Decodes per-pdf log-likelihood matrices on a graph whose input labels are
    transition-ids (``tid2pdf[tid]`` = pdf; index 0 unused). ``fst_path``: the file ``fst``
    was read from (reads the const arc array directly and caches the relabelled graph)."""

    def __init__(self, fst, tid2pdf: np.ndarray, num_pdfs: int | None = None,
                 options: DecodeOptions = DecodeOptions(), max_ilabel: int | None = None,
                 fst_path: Optional[str] = None):
        import kaldi_decoder

        self.mapping = PdfMapping(tid2pdf, num_pdfs, max_ilabel)
        self.tid2pdf, self.num_pdfs = self.mapping.tid2pdf, self.mapping.num_pdfs
        self.options = options
        opts = kaldi_decoder.FasterDecoderOptions(
            beam=options.beam, max_active=options.max_active, min_active=options.min_active,
            beam_delta=options.beam_delta, hash_ratio=options.hash_ratio)
        # the C++ decoder keeps a pointer to the graph: keep it alive
        self.graph: PdfGraph = pdf_graph(fst, self.tid2pdf, fst_path)
        self._decoder = kaldi_decoder.FasterDecoder(self.graph.fst, opts)
        self._decodable = kaldi_decoder.DecodableCtc

    def scaled_matrix(self, loglikes: np.ndarray, acoustic_scale: float) -> np.ndarray:
        """What the decodable reads: [T, num_pdfs] float32 scaled log-likelihoods."""
        return self.mapping.scaled(loglikes, acoustic_scale)

    def decode(self, loglikes: np.ndarray, acoustic_scale: float = 0.1,
               utt: str = "") -> DecodeResult:
        import kaldifst

        loglikes = self.mapping.check(loglikes, utt)
        if loglikes.shape[0] == 0:
            return DecodeResult()  # no frames: nothing can survive
        res = DecodeResult(num_frames=int(loglikes.shape[0]))
        matrix = self.scaled_matrix(loglikes, acoustic_scale)  # alive while the decoder runs
        decodable = self._decodable(matrix)
        self._decoder.decode(decodable)
        res.reached_final = bool(self._decoder.reached_final())
        ok, best = self._decoder.get_best_path(True)
        if not ok or best.num_states == 0:
            return res
        linear, _, olabels, weight = kaldifst.get_linear_symbol_sequence(best)
        if not linear:  # cannot happen for a best path; be explicit rather than wrong
            raise FormatError(f"utterance {utt}: the decoder's best path is not linear")
        res.ok = True
        res.alignment, res.words = self.graph.tids_words(olabels)
        res.graph_cost, res.acoustic_cost = float(weight.value1), float(weight.value2)
        return res
