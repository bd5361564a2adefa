"""Per-pdf log-likelihoods read through a TransitionModel's transition-id -> pdf map, as Kaldi's
``DecodableMatrixScaledMapped``: the one home of the checks and of the [T, labels] matrix that
kaldi-decoder's ``DecodableCtc`` reads (column ``label - 1`` for input label ``label``), for the
decoders (``hybridasr.decode``) and the aligner (``hybridasr.align.viterbi``)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from hybridasr.errors import FormatError


class PdfMapping:
    """``tid2pdf[tid]`` = pdf (index 0 unused); ``num_pdfs``: the model's (default: the largest
    pdf + 1); ``max_ilabel``: a graph's largest input label, checked against the model."""

    def __init__(self, tid2pdf, num_pdfs: Optional[int] = None,
                 max_ilabel: Optional[int] = None, name: str = "the transition model"):
        self.tid2pdf = np.asarray(tid2pdf, dtype=np.int64)
        top = int(self.tid2pdf[1:].max()) + 1 if len(self.tid2pdf) > 1 else 0
        self.num_pdfs = top if num_pdfs is None else int(num_pdfs)
        self.name = name
        if self.num_pdfs < top:
            raise FormatError(f"{name} maps to pdf {top - 1} but has {num_pdfs} pdfs")
        num_tids = len(self.tid2pdf) - 1
        if max_ilabel is not None and max_ilabel > num_tids:
            raise FormatError(f"the graph has input label {max_ilabel} but {name} has only "
                              f"{num_tids} transition-ids: the graph was built for a different "
                              f"model")

    def check(self, loglikes, utt: str) -> np.ndarray:
        """``loglikes`` as an array [T, num_pdfs] (T may be 0); errors name the utterance."""
        loglikes = np.asarray(loglikes)
        if loglikes.ndim == 2 and loglikes.shape[0] == 0:
            return loglikes
        if loglikes.ndim != 2 or loglikes.shape[1] != self.num_pdfs:
            raise FormatError(f"utterance {utt}: log-likelihoods have shape {loglikes.shape}, "
                              f"but {self.name} has {self.num_pdfs} pdfs (is the model's output "
                              f"dim the alignment model's number of pdfs?)")
        if np.isnan(loglikes).any():
            raise FormatError(f"utterance {utt}: log-likelihoods contain NaN (a diverged model?)")
        return loglikes

    @staticmethod
    def scaled(loglikes, acoustic_scale: float) -> np.ndarray:
        """[T, num_pdfs] float32 ``acoustic_scale * loglikes``: for a graph relabelled to pdf+1."""
        return np.ascontiguousarray(np.asarray(loglikes, dtype=np.float32) *
                                    np.float32(acoustic_scale))

    def by_label(self, loglikes, acoustic_scale: float,
                 label2tid: Optional[np.ndarray] = None) -> np.ndarray:
        """[T, num_tids] float32: column tid-1 = ``acoustic_scale * loglikes[:, pdf(tid)]``; with
        ``label2tid`` (a graph's own compact labels, index 0 unused) column i-1 for label i."""
        tids = self.tid2pdf[1:] if label2tid is None else self.tid2pdf[label2tid[1:]]
        return np.ascontiguousarray(np.asarray(loglikes, dtype=np.float32)[:, tids] *
                                    np.float32(acoustic_scale))
