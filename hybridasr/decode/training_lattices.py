"""One lattice job over training graphs: each utterance's training graph compiled from its
transcript and its per-pdf log-likelihoods decoded on it into a lattice, as Kaldi's
``compile-train-graphs | gmm-latgen-faster --word-determinize=false --allow-partial=false``
in ``steps/align_fmllr_lats.sh`` (``nnet3-latgen-faster`` in ``steps/nnet3/align_lats.sh``).

The lattices hold the alternatives of the transcript that the beam keeps: pronunciations and
optional silences, each phone sequence with its best alignment (determinized on phones, not
on words); the numerator of chain training reads them (``--lat-dir``). An utterance without
a transcript, or whose search does not reach the graph's end, is counted, named in the report
and skipped (Kaldi's ``--allow-partial=false``: no retry beam there either).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Dict

from hybridasr.align.align_mapped import GraphJob, GraphJobReport
from hybridasr.align.training_graphs import GraphOptions
from hybridasr.decode.decoder import with_default
from hybridasr.decode.determinize_native import phone_boundaries
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.kaldi.lattice import CompactLatticeWriter

log = logging.getLogger(__name__)


@dataclass
class TrainingGraphLatgenOptions(LatgenOptions):
    """``LatgenOptions`` with the defaults of Kaldi's ``align_fmllr_lats.sh``: beam and lattice
    beam ``$final_beam`` (20), max-active 7000, ``--word-determinize=false``."""
    beam: float = with_default(LatgenOptions, "beam", 20.0)
    max_active: int = with_default(LatgenOptions, "max_active", 7000)
    lattice_beam: float = with_default(LatgenOptions, "lattice_beam", 20.0)
    word_determinize: bool = with_default(LatgenOptions, "word_determinize", False)


@dataclass
class LatgenReport(GraphJobReport):
    lattice_arcs: int = 0

    def to_dict(self) -> Dict:
        d = super().to_dict()
        d["arcs_per_frame"] = round(self.lattice_arcs / self.frames, 3) if self.frames else None
        return d


def latgen_mapped(tree_path: str, model_path: str, lang_dir: str, loglikes_rspecifier: str,
                  text_rspecifier: str, lat_wspecifier: str,
                  graph_opts: GraphOptions = GraphOptions(),
                  latgen_opts: LatgenOptions = TrainingGraphLatgenOptions(),
                  acoustic_scale: float = 0.1) -> LatgenReport:
    job = GraphJob(tree_path, model_path, lang_dir, text_rspecifier, graph_opts)
    tm = job.tm
    phones = phone_boundaries(tm)
    rep = LatgenReport()
    with CompactLatticeWriter(lat_wspecifier) as writer:
        for utt, loglikes, ids, t0 in job.utterances(loglikes_rspecifier, rep):
            decoder = LatticeDecoder(job.compiler.compile(ids, utt), tm.tid2pdf, tm.num_pdfs,
                                     latgen_opts, phone_of_tid=phones)
            t1 = time.perf_counter()
            try:
                res = decoder.decode(loglikes, acoustic_scale, utt)
            finally:
                decoder.close()
            rep.graph_seconds += t1 - t0
            rep.search_seconds += time.perf_counter() - t1
            if not (res.ok and res.reached_final):
                log.warning("utterance %s: no path to the end of its training graph within "
                            "beam %g (%d frames): skipped", utt, latgen_opts.beam, len(loglikes))
                rep.failed.append(utt)
                continue
            writer.write(utt, res.lattice)
            rep.aligned += 1
            rep.frames += len(loglikes)
            rep.lattice_arcs += res.lattice.num_arcs
    log.info("lattices of %d of %d utterances (%d frames, %s arcs a frame; %d failed, %d "
             "without transcript); %d words mapped to the OOV word in %d utterances",
             rep.aligned, rep.utterances, rep.frames, rep.to_dict()["arcs_per_frame"],
             len(rep.failed), len(rep.no_transcript), rep.oov_words, rep.utterances_with_oov)
    return rep
