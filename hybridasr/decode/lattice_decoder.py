"""Lattice generation as Kaldi's ``latgen-faster-mapped``: a lattice search on the
pdf-relabelled graph (``hybridasr.kaldi.fst.relabel_by_pdf``: the [T, num_pdfs] scaled
log-likelihoods are the decodable, nothing is expanded to transition-ids), its raw state-level
lattice mapped back to transition-ids and words, pruned and determinized
(``hybridasr.decode.determinize``) as ``--determinize-lattice=true``, acoustic costs unscaled
(what Kaldi writes).

The search (``--decoder``) is the toolkit's own C++ ``LatticeFasterDecoder``
(``hybridasr.decode.lattice_faster``: beam, ``--max-active``, ``--min-active``, lattice-beam
pruning as it goes), built with the system's C++ compiler; where there is none, kaldi-decoder's
``LatticeSimpleDecoder`` (beam pruning only: on large graphs several times slower).
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from hybridasr.decode import determinize_native, lattice_faster
from hybridasr.decode.decoder import pdf_graph
from hybridasr.decode.determinize import determinize_lattice_pruned
from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.lattice import INF, Arc, CompactLattice, read_binary_fst
from hybridasr.kaldi.pdf_mapping import PdfMapping
from hybridasr.options import option

log = logging.getLogger(__name__)

INT32_MAX = 2147483647


@dataclass
class LatgenOptions:
    """latgen-faster-mapped's options (Kaldi's LatticeFasterDecoderConfig), Kaldi's defaults."""
    beam: float = option(16.0, "decoding beam")
    lattice_beam: float = option(10.0, "lattice generation beam")
    max_active: int = option(INT32_MAX, "maximum number of active states (not applied by "
                                        "--decoder=simple)")
    min_active: int = option(200, "minimum number of active states (not applied by "
                                  "--decoder=simple)")
    max_mem: int = option(50000000, "maximum memory of lattice determinization, bytes "
                                    "(about 200 bytes a determinized state)")
    prune_interval: int = option(25, "interval (frames) at which to prune tokens")
    beam_delta: float = option(0.5, "increment of the beam tightened by --max-active")
    hash_ratio: float = option(2.0, "decoder hash setting (accepted, not needed)")
    decoder: str = option("auto", "lattice search: faster (the toolkit's C++ "
                                  "LatticeFasterDecoder) | simple (kaldi-decoder's "
                                  "LatticeSimpleDecoder: beam only, slower) | auto (faster "
                                  "when it can be built, else simple)")
    determinize_lattice: bool = option(True, "determinize the lattice before writing it (a "
                                             "CompactLattice); false writes the state-level "
                                             "lattice, pruned")


@dataclass
class LatticeResult:
    lattice: CompactLattice = field(default_factory=CompactLattice)  # acoustic unscaled
    num_frames: int = 0
    reached_final: bool = False
    ok: bool = False
    raw_arcs: int = 0


class LatticeDecoder:
    """Per-pdf log-likelihood matrices -> CompactLattices on a graph over transition-ids."""

    def __init__(self, fst, tid2pdf: np.ndarray, num_pdfs: Optional[int] = None,
                 options: LatgenOptions = LatgenOptions(), max_ilabel: Optional[int] = None,
                 fst_path: Optional[str] = None, phone_of_tid: Optional[np.ndarray] = None):
        """``phone_of_tid``: ``determinize.phone_boundaries(transition_model)``, to
        determinize on phones first (as Kaldi; several times faster, the same lattices'
        word sequences and best weights); None: on words alone."""
        import kaldi_decoder

        self.mapping = PdfMapping(tid2pdf, num_pdfs, max_ilabel)
        self.options = options
        self.phone_of_tid = phone_of_tid
        self.graph = pdf_graph(fst, self.mapping.tid2pdf, fst_path)
        self._faster = None
        if options.decoder not in ("auto", "faster", "simple"):
            raise ConfigError(f"--decoder={options.decoder}: auto, faster or simple")
        if options.decoder != "simple" and (options.decoder == "faster" or
                                            lattice_faster.available()):
            self._faster = lattice_faster.LatticeFasterSearch(
                self.graph.arrays, options.beam, options.max_active, options.min_active,
                options.lattice_beam, options.prune_interval, options.beam_delta)
        elif options.decoder == "auto":
            log.warning("lattices with kaldi-decoder's LatticeSimpleDecoder (no C++ "
                        "compiler for the toolkit's LatticeFasterDecoder): --max-active is "
                        "not applied, and decoding is slower")
        if self._faster is None:  # kaldi-decoder's search, its raw lattice read from a file
            config = kaldi_decoder.LatticeSimpleDecoderConfig(
                beam=options.beam, lattice_beam=options.lattice_beam,
                prune_interval=options.prune_interval)
            self._decoder = kaldi_decoder.LatticeSimpleDecoder(self.graph.fst, config)
            self._decodable = kaldi_decoder.DecodableCtc
            self._tmp = tempfile.mkdtemp(prefix="hybridasr-latgen-")

    @property
    def search(self) -> str:
        """Which search makes the lattices: faster or simple."""
        return "faster" if self._faster is not None else "simple"

    def close(self) -> None:
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
        if getattr(self, "_faster", None) is not None:
            self._faster.close()

    def __del__(self):
        self.close()

    def _state_level(self, raw) -> CompactLattice:
        """kaldi-decoder's raw lattice (pdf+1 : pair id) as transition-id/word arcs."""
        path = os.path.join(self._tmp, "raw.fst")
        if not raw.write(path):
            raise FormatError(f"could not write the raw lattice to {path}")
        with open(path, "rb") as f:
            lat = read_binary_fst(f, path, "raw")
        ptid, pword = self.graph.pair_tid, self.graph.pair_word
        for arcs in lat.arcs:
            for i, a in enumerate(arcs):
                tid = int(ptid[a.word])
                arcs[i] = Arc(int(pword[a.word]), a.graph, a.acoustic, (tid,) if tid else (),
                              a.next)
        return lat

    def _from_arrays(self, raw: "lattice_faster.RawLattice") -> CompactLattice:
        """The C++ search's raw lattice (pdf+1 : pair id) as transition-id/word arcs."""
        olabel = raw.olabel
        return determinize_native.to_compact(determinize_native.from_raw(
            raw, self.graph.pair_word[olabel], self.graph.pair_tid[olabel]))

    def decode(self, loglikes: np.ndarray, acoustic_scale: float = 0.1,
               utt: str = "") -> LatticeResult:
        loglikes = self.mapping.check(loglikes, utt)
        res = LatticeResult(num_frames=int(loglikes.shape[0]))
        if res.num_frames == 0:
            return res
        matrix = self.mapping.scaled(loglikes, acoustic_scale)
        max_states = max(1000, self.options.max_mem // 200)
        if self._faster is not None:
            raw = self._faster.search(matrix, utt)
            if raw is None:
                return res
            res.reached_final = raw.reached_final
            res.raw_arcs = len(raw.src)
            if self.options.determinize_lattice:  # in C++ too, from the arrays
                lat = determinize_native.determinize_raw(
                    raw, self.graph.pair_tid, self.graph.pair_word, self.options.lattice_beam,
                    max_states, self.phone_of_tid)
                return self._finish(res, lat, acoustic_scale)
            lat = self._from_arrays(raw)
        else:
            self._decoder.decode(self._decodable(matrix))
            res.reached_final = self._decoder.final_relative_cost() < INF
            ok, raw = self._decoder.get_raw_lattice(True)
            if not ok or raw.num_states == 0:
                return res
            lat = self._state_level(raw)
            res.raw_arcs = lat.num_arcs
        if self.options.determinize_lattice:
            lat = determinize_lattice_pruned(lat, self.options.lattice_beam, max_states,
                                             self.phone_of_tid)
        else:
            from hybridasr.decode.determinize import prune_lattice
            lat = prune_lattice(lat, self.options.lattice_beam)
        return self._finish(res, lat, acoustic_scale)

    @staticmethod
    def _finish(res: LatticeResult, lat: CompactLattice, acoustic_scale: float):
        if lat.start < 0:
            return res
        res.lattice = lat.scaled(acoustic_scale=1.0 / acoustic_scale)
        res.ok = True
        return res
