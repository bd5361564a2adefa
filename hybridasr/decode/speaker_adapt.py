"""fMLLR features of new recordings for a network trained on a SAT GMM's fMLLR features (the
model dir's ``fmllr_gmm``), as Kaldi's ``steps/decode_fmllr.sh`` adapts a speaker it has not
seen. Per speaker (``transcribe.py --utt2spk``; else each recording its own): the GMM's
speaker-independent features (CMVN with the speaker's stats as its ``cmvn_opts`` says, splice,
``final.mat``); a first pass with its speaker-independent model (``final.alimdl``, else
``final.mdl``) at Kaldi's GMM acoustic scale 1/12 on the graph, whose lattice gives each frame
its transition-id posteriors (``lattice-to-post``; the best path where no lattice decoder is
built); silence weighted 0.01 (``weight-silence-post``, the graph dir's
``phones/silence.csl``); an fMLLR transform of ``final.mdl`` estimated from them with the
speaker-independent model's Gaussian posteriors (``gmm-post-to-gpost``,
``gmm-est-fmllr-gpost --fmllr-update-type=full``; ``hybridasr.features.fmllr_estimate``);
then decode_fmllr.sh's second estimate, from ``final.mdl``'s lattice on the features so
adapted (``gmm-est-fmllr``), composed with the first. A recording whose pass finds no path is
left out of the statistics with a warning; below ``min_count`` frames (20, where Kaldi's
``--fmllr-min-count`` is 500: ``fmllr_estimate``) a transform is the identity. Kaldi's
``--fmllr-update-type`` is ``update_type`` (full by default, as Kaldi's).
"""
from __future__ import annotations

import logging
import os
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.features.fmllr_estimate import MIN_COUNT, UPDATE_TYPES

log = logging.getLogger(__name__)

__all__ = ["SpeakerAdapter", "adapter_of", "estimate_data_dir", "best_path_posteriors",
           "posteriors_of", "FIRST_PASS_ACWT", "SILENCE_WEIGHT", "LATTICE_BEAM"]

FIRST_PASS_ACWT = 0.083333  # decode_fmllr.sh's --acwt (a GMM's 1/12)
SILENCE_WEIGHT = 0.01       # decode_fmllr.sh's --silence-weight
LATTICE_BEAM = 6.0          # decode_fmllr.sh's --lattice-beam

# A pass's posteriors: (frame, transition-id, posterior) arrays, None where it found no path
Posteriors = Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]]
FirstPass = Callable[[np.ndarray, float], Posteriors]


def best_path_posteriors(tids) -> Posteriors:
    """A best path's transition-ids as posteriors (one per frame, 1.0); None for None."""
    if tids is None:
        return None
    t = np.asarray(tids, dtype=np.int64)
    return np.arange(len(t)), t, np.ones(len(t))


class SpeakerAdapter:
    """A SAT GMM dir's pipeline and models, and the graph dir's silence phones."""

    def __init__(self, gmm_dir: str, graph_dir: str, tm, update_type: str = UPDATE_TYPES[0],
                 min_count: float = MIN_COUNT):
        """``tm``: the network's transition model (the graph's transition-ids);
        ``update_type``, ``min_count``: the transforms' (``fmllr_estimate``; Kaldi's
        ``--fmllr-update-type``, ``--fmllr-min-count``)."""
        from hybridasr.features.fmllr import FmllrPipeline
        from hybridasr.kaldi.gmm_model import read_gmm_model
        from hybridasr.kaldi.io.table import parse_csl

        if not os.path.isdir(gmm_dir):
            raise FormatError(f"no such GMM dir {gmm_dir}: its feature pipeline (cmvn_opts, "
                              f"splice_opts, final.mat) and models are needed")
        self.gmm_dir = gmm_dir
        self.update_type, self.min_count = update_type, min_count
        self.pipeline = FmllrPipeline.from_gmm_dir(gmm_dir)
        alimdl = os.path.join(gmm_dir, "final.alimdl")
        mdl = os.path.join(gmm_dir, "final.mdl")
        _, self.gmm = read_gmm_model(mdl)
        self.si_gmm = read_gmm_model(alimdl)[1] if os.path.isfile(alimdl) else self.gmm
        for name, g in (("final.mdl", self.gmm), ("its first-pass model", self.si_gmm)):
            if g.num_pdfs != tm.num_pdfs:
                raise FormatError(f"{gmm_dir}: {name} has {g.num_pdfs} pdfs, the network "
                                  f"{tm.num_pdfs}")
        csl = os.path.join(graph_dir, "phones", "silence.csl")
        silence: List[int] = []
        if os.path.isfile(csl):
            with open(csl, encoding="utf-8") as f:
                silence = parse_csl(f.read().strip(), csl)
        else:
            log.warning("note: %s missing: no frame of the first pass is weighted down as "
                        "silence in the fMLLR statistics", csl)
        self.tid2pdf = np.asarray(tm.tid2pdf)
        self.is_silence_tid = np.isin(tm.tid2phone, silence)
        # gmm-est-fmllr-gpost: the first pass's Gaussian posteriors are the speaker-
        # independent model's (train_sat.sh's final.alimdl has final.mdl's Gaussians)
        self.gpost = self.si_gmm is not self.gmm and self.si_gmm.dim == self.gmm.dim and \
            np.array_equal(self.si_gmm.offsets, self.gmm.offsets)
        if self.si_gmm is not self.gmm and not self.gpost:
            log.warning("note: %s: final.alimdl's Gaussians are not final.mdl's: the first "
                        "fMLLR estimate uses final.mdl's own Gaussian posteriors", gmm_dir)

    def si_features(self, raw: np.ndarray, cmvn_stats: np.ndarray) -> np.ndarray:
        """The speaker-independent features: CMVN with the speaker's stats as the GMM's
        ``cmvn_opts`` says, then splice + ``final.mat``."""
        return self.pipeline(raw, cmvn_stats, "")

    def _stats(self, model, feats: List[np.ndarray], first_pass: FirstPass, what: str):
        from hybridasr.features.fmllr_estimate import FmllrAccs

        first = model is self.si_gmm
        acc = FmllrAccs(self.gmm)
        for x in feats:
            post = first_pass(model.log_likelihoods(x), FIRST_PASS_ACWT)
            if post is None or not len(post[0]) or post[0].max() >= len(x):
                log.warning("%s: a recording's %s pass found no path: left out of its fMLLR "
                            "statistics", what, "first" if first else "second")
                continue
            frames, tids, p = post
            acc.accumulate(x[frames], self.tid2pdf[tids],
                           p * np.where(self.is_silence_tid[tids], SILENCE_WEIGHT, 1.0),
                           post_gmm=self.si_gmm if first and self.gpost else None)
        return acc

    def transform(self, feats: List[np.ndarray], first_pass: FirstPass,
                  what: str) -> np.ndarray:
        """The fMLLR transform ``[A b]`` of one speaker from the speaker-independent features
        of its recordings, as decode_fmllr.sh's two estimates: from the speaker-independent
        model's pass, then from ``final.mdl``'s on the features so adapted, composed.
        ``first_pass(loglikes, acwt)`` gives a pass's transition-id posteriors (lattice or
        best path: ``Posteriors``)."""
        from hybridasr.features.fmllr import apply_transform

        w1 = self._stats(self.si_gmm, feats, first_pass, what).estimate(
            min_count=self.min_count, update_type=self.update_type)
        adapted = [apply_transform(x, w1) for x in feats]
        w2 = self._stats(self.gmm, adapted, first_pass, what).estimate(
            min_count=self.min_count, update_type=self.update_type)
        a2, b2 = w2[:, :-1], w2[:, -1]
        return np.hstack([a2 @ w1[:, :-1], (a2 @ w1[:, -1] + b2)[:, None]])


def adapter_of(model_dir, graph_dir: str, update_type: str = UPDATE_TYPES[0],
               min_count: float = MIN_COUNT) -> Optional["SpeakerAdapter"]:
    """For a model dir of a network trained on a SAT GMM's fMLLR features (``fmllr_gmm``): a
    ``SpeakerAdapter``, with a note; None for others."""
    from hybridasr.kaldi.transition_model import read_transition_model

    gmm = model_dir.fmllr_gmm
    if gmm is None:
        return None
    if not os.path.isdir(gmm):
        raise FormatError(f"{model_dir.path} was trained on the fMLLR features of {gmm} "
                          f"({os.path.join(model_dir.path, 'fmllr_gmm')}), which is not there: "
                          f"its feature pipeline and models are needed")
    log.warning("note: %s was trained on the fMLLR features of %s (speaker-adapted): each "
                "recording is adapted as its own speaker, as Kaldi's decode_fmllr.sh (a "
                "first pass with the speaker-independent GMM, an fMLLR transform from it)",
                model_dir.path, gmm)
    return SpeakerAdapter(gmm, graph_dir, read_transition_model(model_dir.mdl), update_type,
                          min_count)


def estimate_data_dir(gmm_dir: str, graph_dir: str, data_dir: str, beam: float = 13.0,
                      max_active: int = 7000, update_type: str = UPDATE_TYPES[0],
                      min_count: float = MIN_COUNT) -> Dict[str, np.ndarray]:
    """{speaker: fMLLR transform} of a data dir's speakers (its raw ``feats.scp``, per-speaker
    ``cmvn.scp``, ``utt2spk``), as Kaldi's ``steps/decode_fmllr.sh`` estimates them before its
    final pass: ``SpeakerAdapter.transform`` over each speaker's utterances, the passes on
    ``graph_dir`` with the lattice decoder (``latgen-faster-mapped``, lattice beam 6, as
    decode_fmllr.sh's) and ``lattice-to-post``; the 1-best decoder where the toolkit's C++
    lattice decoder cannot be built (with a note). Utterances without a speaker or CMVN stats
    are skipped with a warning (``PipelineFeatures``)."""
    from hybridasr.decode.graph import load_model_and_graph
    from hybridasr.features.fmllr import PipelineFeatures
    from hybridasr.kaldi.io.table import read_map

    fst_path = os.path.join(graph_dir, "HCLG.fst")
    tm, fst, max_ilabel = load_model_and_graph(os.path.join(gmm_dir, "final.mdl"), fst_path)
    adapter = SpeakerAdapter(gmm_dir, graph_dir, tm, update_type, min_count)
    first_pass = pass_posteriors(fst, tm, max_ilabel, fst_path, beam, max_active)

    u2s = read_map(os.path.join(data_dir, "utt2spk"))
    by_spk: Dict[str, List[np.ndarray]] = {}
    for utt, x in PipelineFeatures(adapter.pipeline, os.path.join(data_dir, "feats.scp"),
                                   os.path.join(data_dir, "cmvn.scp"),
                                   os.path.join(data_dir, "utt2spk")):
        by_spk.setdefault(u2s[utt], []).append(x)
    if not by_spk:
        raise FormatError(f"{data_dir}: no utterance to estimate fMLLR transforms from")
    return {spk: adapter.transform(feats, first_pass, f"speaker {spk}")
            for spk, feats in by_spk.items()}


def pass_posteriors(fst, tm, max_ilabel: int, fst_path: str, beam: float = 13.0,
                    max_active: int = 7000) -> FirstPass:
    """A pass's posteriors on a graph: a lattice (``LATTICE_BEAM``) and ``lattice-to-post``,
    or where no lattice decoder can be built, the 1-best decoder's path (with a note)."""
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.lattice_decoder import (LatgenOptions, LatticeDecoder,
                                                  LatticesUnavailable)

    try:
        return posteriors_of(LatticeDecoder(fst, tm.tid2pdf, tm.num_pdfs,
                                            LatgenOptions(beam=beam, max_active=max_active,
                                                          lattice_beam=LATTICE_BEAM),
                                            max_ilabel, fst_path=fst_path), None, tm.tid2pdf)
    except LatticesUnavailable as e:
        log.warning("note: the fMLLR passes take best paths, not lattice posteriors: %s", e)
        return posteriors_of(None, MappedDecoder(fst, tm.tid2pdf, tm.num_pdfs,
                                                 DecodeOptions(beam=beam,
                                                               max_active=max_active),
                                                 max_ilabel, fst_path=fst_path), tm.tid2pdf)


def posteriors_of(lattice_decoder, decoder, tid2pdf: np.ndarray) -> FirstPass:
    """A pass's posteriors with these decoders: ``lattice_decoder``'s lattice and
    ``lattice-to-post``, or where it is None the 1-best ``decoder``'s path."""
    from hybridasr.graph.lattice_forward_backward import lattice_to_post

    def posteriors(loglikes: np.ndarray, acwt: float) -> Posteriors:
        if lattice_decoder is None:
            r = decoder.decode(loglikes, acwt)
            return best_path_posteriors(r.alignment) if r.ok else None
        r = lattice_decoder.decode(loglikes, acwt)
        if not r.ok:
            return None
        return lattice_to_post(r.lattice, loglikes, tid2pdf, acwt, "an fMLLR pass")
    return posteriors
