"""Lattice generation as Kaldi's ``latgen-faster-mapped``: the toolkit's C++
``LatticeFasterDecoder`` (``hybridasr.decode.lattice_faster``: beam, ``--max-active``,
``--min-active``, lattice-beam pruning as it goes) on the pdf-relabelled graph
(``hybridasr.kaldi.fst.relabel_by_pdf``: the [T, num_pdfs] scaled log-likelihoods are the
decodable, nothing is expanded to transition-ids), its raw state-level lattice determinized in
C++ (``hybridasr.decode.determinize_native``) as ``--determinize-lattice=true``, mapped back to
transition-ids and words, acoustic costs unscaled (what Kaldi writes).

Both are C++ built with the system's compiler (``hybridasr.decode.native``). Without one there
are no embedded lattices: ``LatticeDecoder`` says so (``LatticesUnavailable``) and decoding is
1-best (``hybridasr.decode.decoder``, Kaldi's FasterDecoder), as ``--lattices auto`` of
``steps/nnet/decode.sh`` and ``steps/score.sh`` chooses.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from hybridasr.decode import determinize_native, lattice_faster, native
from hybridasr.decode.decoder import DecodeOptions, pdf_graph, with_default
from hybridasr.errors import HybridAsrError
from hybridasr.kaldi.lattice import CompactLattice
from hybridasr.kaldi.pdf_mapping import PdfMapping
from hybridasr.options import option

log = logging.getLogger(__name__)


class LatticesUnavailable(HybridAsrError):
    """The toolkit's C++ library cannot be built: no embedded lattices."""


@dataclass
class LatgenOptions(DecodeOptions):
    """latgen-faster-mapped's options (Kaldi's LatticeFasterDecoderConfig), Kaldi's defaults:
    the search options of ``DecodeOptions`` (``--min-active`` 200 here, as Kaldi's lattice
    decoder has it) and the lattice's."""
    min_active: int = with_default(DecodeOptions, "min_active", 200)
    lattice_beam: float = option(10.0, "lattice generation beam")
    max_mem: int = option(50000000, "maximum memory of lattice determinization, bytes "
                                    "(about 200 bytes a determinized state)")
    prune_interval: int = option(25, "interval (frames) at which to prune tokens")
    determinize_lattice: bool = option(True, "determinize the lattice before writing it (a "
                                             "CompactLattice); false writes the state-level "
                                             "lattice, pruned")
    word_determinize: bool = option(True, "determinize on words after the phones; false keeps "
                                          "each phone sequence's best path (alternative "
                                          "pronunciations, optional silences)")


@dataclass
class LatticeResult:
    lattice: CompactLattice = field(default_factory=CompactLattice)  # acoustic unscaled
    num_frames: int = 0
    reached_final: bool = False
    ok: bool = False
    raw_arcs: int = 0


def unavailable_message() -> str:
    return (f"embedded lattices need the toolkit's C++ library (hybridasr/decode/native), "
            f"which cannot be built: {native.unavailable_reason() or 'see the log'}. Decode "
            f"1-best instead: decode_faster_mapped.py, or steps/nnet/decode.sh and "
            f"steps/score.sh with --lattices false (what --lattices auto chooses then)")


class LatticeDecoder:
    """Per-pdf log-likelihood matrices -> CompactLattices on a graph over transition-ids.
    LatticesUnavailable where the C++ library cannot be built."""

    def __init__(self, fst, tid2pdf: np.ndarray, num_pdfs: Optional[int] = None,
                 options: LatgenOptions = LatgenOptions(), max_ilabel: Optional[int] = None,
                 fst_path: Optional[str] = None, phone_of_tid: Optional[np.ndarray] = None):
        """``phone_of_tid``: ``determinize_native.phone_boundaries(transition_model)``, to
        determinize on phones first (as Kaldi; several times faster, the same lattices'
        word sequences and best weights); None: on words alone."""
        self._faster = None
        self._online = None  # [acoustic_scale, utt, frames so far] of the utterance decoding
        if native.load(quiet=True) is None:  # the error says why
            raise LatticesUnavailable(unavailable_message())
        self.mapping = PdfMapping(tid2pdf, num_pdfs, max_ilabel)
        self.options = options
        self.phone_of_tid = phone_of_tid
        self.graph = pdf_graph(fst, self.mapping.tid2pdf, fst_path)
        self._faster = lattice_faster.LatticeFasterSearch(
            self.graph.arrays, options.beam, options.max_active, options.min_active,
            options.lattice_beam, options.prune_interval, options.beam_delta)

    def close(self) -> None:
        if getattr(self, "_faster", None) is not None:
            self._faster.close()

    def __del__(self):
        self.close()

    def search(self, loglikes: np.ndarray, acoustic_scale: float = 0.1,
               utt: str = "") -> Optional[lattice_faster.RawLattice]:
        """The search alone: its raw state-level lattice (arcs labelled with the pdf graph's
        pair ids, costs scaled), None when no path survived or there are no frames."""
        return self._search(self.mapping.check(loglikes, utt), acoustic_scale, utt)

    def _search(self, loglikes: np.ndarray, acoustic_scale: float, utt: str):
        if loglikes.shape[0] == 0:
            return None
        return self._faster.search(self.mapping.scaled(loglikes, acoustic_scale), utt)

    def decode(self, loglikes: np.ndarray, acoustic_scale: float = 0.1,
               utt: str = "") -> LatticeResult:
        loglikes = self.mapping.check(loglikes, utt)
        return self._result(self._search(loglikes, acoustic_scale, utt),
                            int(loglikes.shape[0]), acoustic_scale)

    # incremental decoding of one utterance (a streaming recognizer): online_start, then
    # online_advance with each new block of frames (online_partial_words between), then
    # online_finish, which gives what decode gives on all the frames at once
    def online_start(self, acoustic_scale: float = 0.1, utt: str = "") -> None:
        self._faster.start()
        self._online = [acoustic_scale, utt, 0]

    def online_advance(self, loglikes: np.ndarray) -> None:
        """More frames: [n, num_pdfs] log-likelihoods, unscaled (n >= 0)."""
        acoustic_scale, utt, _ = self._require_online("online_advance")
        loglikes = self.mapping.check(loglikes, utt)
        if loglikes.shape[0] == 0:
            return
        self._faster.advance(self.mapping.scaled(loglikes, acoustic_scale), utt)
        self._online[2] += int(loglikes.shape[0])

    def online_partial_words(self) -> list:
        """The word ids of the best path through the frames so far (no final weights)."""
        self._require_online("online_partial_words")
        pair_word = self.graph.pair_word  # the pdf graph's output labels are (tid, word) pairs
        return [int(w) for w in pair_word[self._faster.partial_best_olabels()] if w != 0]

    def online_finish_words(self) -> list:
        """The word ids of the utterance's best path at the search's own acoustic scale (with
        the final weights), without making its lattice: the words ``online_finish`` would
        give at LM weight 1 / acoustic scale and no insertion penalty, at no cost beyond a
        traceback; ends the utterance."""
        self._require_online("online_finish_words")
        self._online = None
        pair_word = self.graph.pair_word
        return [int(w) for w in pair_word[self._faster.partial_best_olabels(True)] if w != 0]

    def online_finish(self) -> LatticeResult:
        """The utterance's result, as ``decode`` on all its frames; ends the utterance."""
        acoustic_scale, utt, num_frames = self._require_online("online_finish")
        self._online = None
        raw = self._faster.finish(utt) if num_frames > 0 else None
        return self._result(raw, num_frames, acoustic_scale)

    def _require_online(self, what: str):
        if self._online is None:
            raise RuntimeError(f"LatticeDecoder.{what}: no utterance begun (call online_start "
                               f"first; one utterance at a time)")
        return self._online

    def _result(self, raw: Optional[lattice_faster.RawLattice], num_frames: int,
                acoustic_scale: float) -> LatticeResult:
        res = LatticeResult(num_frames=num_frames)
        if raw is None:
            return res
        res.reached_final = raw.reached_final
        res.raw_arcs = len(raw.src)
        if self.options.determinize_lattice:
            lat = determinize_native.determinize_raw(
                raw, self.graph.pair_tid, self.graph.pair_word, self.options.lattice_beam,
                max(1000, self.options.max_mem // 200), self.phone_of_tid,
                self.options.word_determinize)
        else:
            lat = determinize_native.state_level(raw, self.graph.pair_tid,
                                                 self.graph.pair_word, self.options.lattice_beam)
        if lat.start < 0:
            return res
        res.lattice = lat.scaled(acoustic_scale=1.0 / acoustic_scale)
        res.ok = True
        return res
