"""Transcribing recordings with a trained model dir and a graph dir: audio in, ``<id> <words>``
(Kaldi's ``text``) and optionally a CTM out, with no data dir, feature archive or Kaldi binary.

Per recording, the same library code as the decode pipeline (``make_mfcc.sh`` +
``decode.sh``): the audio is read as a ``wav.scp`` entry is (``hybridasr.features.audio``:
files, ``cmd |`` pipes, 16-bit or other wav, flac), its features computed with the training
features' conf (``FeatureExtractor``: the same dither seeding by recording id), CMVN applied
(``online``: Kaldi's online CMVN from the training set's global stats; ``utterance``: the
recording's own stats, what ``apply-cmvn`` does with per-utterance stats), the network's
transform and forward (``hybridasr.decode.forward``), scaled log-likelihoods (pdf counts), the
lattice decoder (``LatticeDecoder``, as ``latgen-faster-mapped``), and the best path at the LM
weight (``lattice-scale --inv-acoustic-scale=LMWT | lattice-best-path``, as scoring). Without
the C++ lattice decoder the 1-best decoder gives the words at the decoding's acoustic scale
and no CTM.

With ``--gmm-dir`` (``use_gmm``) a Kaldi GMM of the network's tree scores the recording's
frames too, from the same raw features through its own pipeline, and the decoder reads
``(1 - w) x network + w x GMM`` (``hybridasr.decode.gmm_scorer``), as ``decode.sh --gmm-dir``.

With an exported model (``export_model.py``: ``model`` the TorchScript module, ``meta`` its
metadata) the module gives the log-likelihoods of the features after CMVN (transform, network,
priors inside it), and nothing of ``hybridasr.models`` is imported.

A recording that cannot be used (not audio, empty, another sample rate than the features'
where the conf does not allow resampling) is reported naming its file and skipped; the run
then fails at the end, after the others are written.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from hybridasr.decode.ctm import ctm_lines, lattice_ctm, read_word_boundary
from hybridasr.decode.export import EXPORT_FORMAT, chain_of, run_exported
from hybridasr.decode.forward import ChunkOptions
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_best_path import best_path
from hybridasr.decode.loglikes import scaled_loglikes
from hybridasr.decode.model_dir import ModelDir
from hybridasr.decode.recordings import Recording, Result, read_audio, recordings  # noqa: F401
from hybridasr.decode.speaker_adapt import adapter_of, posteriors_of
from hybridasr.errors import ConfigError, FormatError, HybridAsrError
from hybridasr.features.audio import Audio
from hybridasr.features.cmvn import accumulate_cmvn_stats, apply_cmvn
from hybridasr.features.extractor import FeatureExtractor
from hybridasr.features.fmllr_estimate import MIN_COUNT, UPDATE_TYPES
from hybridasr.features.make_feats import Resampler
from hybridasr.features.online_cmvn import online_cmvn
from hybridasr.features.transform import FeatureTransform
from hybridasr.options import option

log = logging.getLogger(__name__)

# Kaldi decodes a chain model with --acwt 1.0 --post-decode-acwt 10.0 (scores 10x in the
# lattice); the same search and lattice at the --acwt 0.1 and LM weights of frame models: its
# outputs times 10 (decode.sh's --post-decode-acwt, passed to forward.py as --loglike-scale)
CHAIN_LOGLIKE_SCALE = 10.0


@dataclass
class TranscribeOptions:
    """transcribe.py's search and output settings (decode.sh's defaults)."""
    acwt: float = option(0.1, "acoustic scale of the search (as decode.sh's --acwt)", above=0)
    lm_weight: float = option(10.0, "LM weight of the best path (scoring's LMWT: acoustic "
                                    "scale 1/LMWT on the lattice; 10 = the search's own)",
                              above=0)
    word_ins_penalty: float = option(0.0, "word insertion penalty of the best path")
    beam: float = option(13.0, "search beam")
    lattice_beam: float = option(8.0, "lattice beam")
    max_active: int = option(7000, "most active states", minimum=1)
    min_active: int = option(200, "fewest active states", minimum=0)
    prior_scale: float = option(1.0, "scale of the log-priors (pdf counts)")
    confidence: str = option("frame", "--ctm confidences: frame (the per-frame lattice "
                                      "posteriors of the best path's words) | mbr (Kaldi's "
                                      "lattice-to-ctm-conf: sausage bin posteriors)",
                             choices=("frame", "mbr"))
    decode_mbr: bool = option(False, "with --confidence=mbr: the MBR words (Kaldi's "
                                     "get_ctm_conf.sh default) instead of the best path's "
                                     "(false: the words stay decode.sh's)")
    cmvn: str = option("auto", "auto: online CMVN from the model dir's global_cmvn.stats (or "
                               "the training data's cmvn.scp), else per recording | online | "
                               "utterance: each recording's own means | none",
                       choices=("auto", "online", "utterance", "none"))
    fmllr_update_type: str = option(
        UPDATE_TYPES[0], "a network of a SAT GMM's fMLLR features: the speakers' transforms, "
        "as Kaldi's --fmllr-update-type (full: Kaldi's default)", choices=UPDATE_TYPES)
    fmllr_min_count: float = option(
        MIN_COUNT, "fewest frames (silence weighted 0.01) of a speaker for a transform, else "
        "the identity (Kaldi's --fmllr-min-count; its default 500 leaves a recording of a few "
        "seconds unadapted)", minimum=0)
    chunking: str = option("", "size:step, as train.py's: the network runs over windows of "
                               "size frames every step frames, each keeping its middle step "
                               "outputs (a latency-controlled BLSTM's chunks); empty: whole "
                               "recordings (with --online: the model's training chunking, "
                               "else 120:40)")


def chunk_options_of(chunking: str) -> ChunkOptions:
    """``--chunking=size:step`` as the windows of ``model_logits`` (empty: whole
    recordings)."""
    from hybridasr.data.chunking import parse_chunking

    pair = parse_chunking(chunking, even_context=True)
    if pair is None:
        return ChunkOptions()
    size, step = pair
    return ChunkOptions(step, (size - step) // 2)


class Transcriber:
    """A model dir and a graph dir, loaded once; ``transcribe`` per recording."""

    def __init__(self, model_dir: ModelDir, model, meta: dict, graph_dir: str,
                 opts: TranscribeOptions = TranscribeOptions(), want_ctm: bool = False,
                 device: torch.device = torch.device("cpu")):
        from hybridasr.align.counts import load_log_priors
        from hybridasr.decode.graph import load_model_and_graph

        self.md, self.model, self.opts, self.device = model_dir, model, opts, device
        self.exported = meta.get("format") == EXPORT_FORMAT
        if self.exported:
            self.chain, self.factor = bool(meta.get("chain")), int(
                meta.get("frame_subsampling_factor") or 1)
        else:
            self.chain, self.factor = chain_of(model_dir.path, meta, model)
        self.transform = FeatureTransform.from_dict(meta["transform"])
        self.chunks = chunk_options_of(opts.chunking)
        if self.chunks.chunk_size and (self.chain or self.exported):
            raise ConfigError(f"--chunking={opts.chunking} (which --online needs): "
                              + ("a chain model's outputs are those of whole recordings"
                                 if self.chain else "an exported model runs whole recordings")
                              + ": transcribe it whole (no --chunking, no --online)")
        self.num_pdfs = int(meta["num_pdfs"])
        feat_dim = model_dir.features.feature_dim
        # a network of a SAT GMM's fMLLR features: the recording adapted as decode_fmllr.sh
        self.sat = None if self.exported else adapter_of(
            model_dir, graph_dir, opts.fmllr_update_type, opts.fmllr_min_count)
        if self.sat is not None:
            feat_dim = self.sat.pipeline.output_dim(feat_dim) or feat_dim
        if "input_dim" in meta and self.transform.output_dim(feat_dim) != int(meta["input_dim"]):
            raise ConfigError(f"{model_dir.feature_conf} gives {feat_dim}-dim features, "
                              f"{self.transform.output_dim(feat_dim)} network inputs; "
                              f"{model_dir.nnet} expects {meta['input_dim']}: not the conf "
                              f"the model was trained with (--feat-config)"
                              + ("" if self.sat is not None else
                                 "; or, for a network of a SAT GMM's fMLLR features, write "
                                 "that GMM dir's path into " +
                                 os.path.join(model_dir.path, "fmllr_gmm")))
        if not os.path.isdir(graph_dir):
            raise FormatError(f"no such graph dir: {graph_dir}")
        fst = os.path.join(graph_dir, "HCLG.fst")
        if not os.path.isfile(fst):
            raise FormatError(f"graph dir {graph_dir} has no HCLG.fst (make it with "
                              f"utils/mkgraph.sh)")
        self.graph = load_graph_dir(graph_dir)
        self.tm, fst_obj, max_ilabel = load_model_and_graph(model_dir.mdl, fst)
        if self.tm.num_pdfs != self.num_pdfs:
            raise FormatError(f"{model_dir.nnet} has {self.num_pdfs} outputs but "
                              f"{model_dir.mdl} has {self.tm.num_pdfs} pdfs")
        self.log_priors = (load_log_priors(model_dir.counts, self.num_pdfs)
                           if model_dir.counts else None)
        self.boundary = None
        if want_ctm:
            wb = os.path.join(graph_dir, "phones", "word_boundary.int")
            if not os.path.isfile(wb):
                raise FormatError(f"--ctm: the graph dir has no {wb} (copy phones/ of the "
                                  f"lang dir): word times cannot be found")
            self.boundary = read_word_boundary(wb)
        self.extractor = FeatureExtractor(model_dir.features)
        self.resample = Resampler(model_dir.features)
        self._resample_noted = set()
        # (a chain model's lattice has a frame every ``factor`` input frames)
        self.frame_shift = model_dir.features.frame_shift / 1000.0 * (self.factor if
                                                                       self.chain else 1)
        self.lattice_decoder, self.decoder = self._decoders(fst_obj, max_ilabel, fst, want_ctm)
        # a SAT network's GMM passes: transition-id posteriors from these decoders
        self._first_pass = posteriors_of(self.lattice_decoder, self.decoder, self.tm.tid2pdf)
        # a ConfidenceCalibration (hybridasr.decode.confidence_calibration) for the CTM's
        # confidences; None: the lattice posteriors as they are
        self.calibration = None
        self.gmm = None  # a GmmScorer (use_gmm): its log-likelihoods added to the network's
        # use_speakers: recording -> speaker; each speaker's CMVN stats (and fMLLR transform)
        self.utt2spk: Optional[Dict[str, str]] = None
        self.spk_cmvn: Dict[str, np.ndarray] = {}
        self.spk_transform: Dict[str, np.ndarray] = {}

    def use_speakers(self, recs: List["Recording"], utt2spk: Dict[str, str]) -> None:
        """The recordings of a speaker share CMVN stats (Kaldi's per-speaker ``apply-cmvn``,
        as ``decode.sh`` on a data dir) and, for a network of SAT fMLLR features, an fMLLR
        transform (``hybridasr.decode.speaker_adapt``): computed here from all of them, before
        any is transcribed. A recording that cannot be read is left out (reported when it is
        transcribed); one without a speaker is an error."""
        missing = [r.key for r in recs if r.key not in utt2spk]
        if missing:
            raise ConfigError(f"--utt2spk: no speaker for recording {missing[0]} "
                              f"({len(missing)} of {len(recs)} without one)")
        self.utt2spk = dict(utt2spk)
        raws: Dict[str, np.ndarray] = {}
        for r in recs:
            try:
                raws[r.key] = self.raw_features(read_audio(r), r.source)
            except HybridAsrError:
                continue
        for key, x in raws.items():
            spk = utt2spk[key]
            self.spk_cmvn[spk] = accumulate_cmvn_stats(x, self.spk_cmvn.get(spk))
        if self.sat is not None:
            by_spk: Dict[str, List[np.ndarray]] = {}
            for key, x in raws.items():
                spk = utt2spk[key]
                by_spk.setdefault(spk, []).append(self.sat.si_features(x, self.spk_cmvn[spk]))
            for spk, feats in by_spk.items():
                self.spk_transform[spk] = self.sat.transform(feats, self._first_pass,
                                                             f"speaker {spk}")

    def use_gmm(self, gmm_dir: str, weight: float) -> None:
        """Adds ``gmm_dir``'s GMM log-likelihoods at ``weight`` (``hybridasr.decode.
        gmm_scorer``): a frame model of a model dir only."""
        from hybridasr.decode.gmm_scorer import GmmScorer

        if self.exported or self.chain:
            what = "an exported model" if self.exported else "a chain model"
            raise ConfigError(f"--gmm-dir: {what} decodes alone (give the model dir of a "
                              f"network of pdf priors)")
        if self.sat is not None:
            raise ConfigError(f"--gmm-dir: {self.md.path} reads fMLLR features of "
                              f"{self.md.fmllr_gmm}, which new audio does not have: it decodes "
                              f"alone")
        self.gmm = GmmScorer(gmm_dir, weight, self.md.path, self.num_pdfs,
                             self.md.features.feature_dim)

    def _decoders(self, fst, max_ilabel, fst_path, want_ctm):
        from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
        from hybridasr.decode.determinize_native import phone_boundaries
        from hybridasr.decode.lattice_decoder import (LatgenOptions, LatticeDecoder,
                                                      LatticesUnavailable)

        o = self.opts
        try:
            return LatticeDecoder(fst, self.tm.tid2pdf, self.tm.num_pdfs,
                                  LatgenOptions(beam=o.beam, lattice_beam=o.lattice_beam,
                                                max_active=o.max_active,
                                                min_active=o.min_active),
                                  max_ilabel, fst_path=fst_path,
                                  phone_of_tid=phone_boundaries(self.tm)), None
        except LatticesUnavailable as e:
            if want_ctm:
                raise HybridAsrError(f"--ctm needs lattices: {e}") from None
            log.warning("no lattices (%s): the 1-best decoder at --acwt gives the words", e)
            return None, MappedDecoder(fst, self.tm.tid2pdf, self.tm.num_pdfs,
                                       DecodeOptions(beam=o.beam, max_active=o.max_active,
                                                     min_active=o.min_active), max_ilabel,
                                       fst_path=fst_path)

    # -- one recording ---------------------------------------------------------------
    def features(self, audio: Audio, source: str) -> np.ndarray:
        """The network's features of a recording: the raw ones after its CMVN."""
        return self.normalise(self.raw_features(audio, source), audio.key)

    def raw_features(self, audio: Audio, source: str) -> np.ndarray:
        opts = self.md.features
        if audio.rate != opts.sample_frequency:
            try:
                samples = self.resample(audio)
            except HybridAsrError:
                raise HybridAsrError(
                    f"{source}: sample rate {audio.rate} Hz, but the model's features are "
                    f"{opts.sample_frequency:g} Hz ({self.md.feature_conf}, which does not "
                    f"allow resampling: --allow-downsample/--allow-upsample)") from None
            log.warning("note: %s: %d Hz resampled to %g Hz (%s allows it)", source,
                        audio.rate, opts.sample_frequency, self.md.feature_conf)
        else:
            samples = audio.samples
        feats = self.extractor.compute(samples, key=audio.key)
        if len(feats) == 0:
            raise HybridAsrError(f"{source}: too short for one frame "
                                 f"({len(samples) / opts.sample_frequency:.3f}s)")
        return feats

    def normalise(self, feats: np.ndarray, key: str = "") -> np.ndarray:
        """The model dir's CMVN (online, per recording, or none; with ``use_speakers``, the
        recording's speaker's stats); for a network of fMLLR features, the speaker's (or the
        recording's own) fMLLR features instead (``hybridasr.decode.speaker_adapt``)."""
        spk = self.utt2spk.get(key) if self.utt2spk is not None else None
        if self.sat is not None:
            from hybridasr.features.fmllr import apply_transform

            si = self.sat.si_features(feats, self.spk_cmvn[spk] if spk is not None else
                                      accumulate_cmvn_stats(feats))
            w = (self.spk_transform[spk] if spk is not None else
                 self.sat.transform([si], self._first_pass, f"recording {key}"))
            return apply_transform(si, w, f"the fMLLR transform of {spk or key}")
        norm_vars = self.transform.norm_vars
        if spk is not None and self.md.cmvn != "none":
            return apply_cmvn(feats, self.spk_cmvn[spk], True, norm_vars)
        if self.md.cmvn == "online":
            return online_cmvn(feats, self.md.global_stats, norm_vars)
        if self.md.cmvn == "utterance":
            return apply_cmvn(feats, accumulate_cmvn_stats(feats), True, norm_vars)
        return feats

    def loglikes(self, feats: np.ndarray) -> np.ndarray:
        """Decoding's log-likelihoods: a frame model's (log-softmax minus scaled log-priors) at
        the input frame rate; a chain model's outputs as they are, one row per output frame,
        times ``CHAIN_LOGLIKE_SCALE``."""
        if self.exported:
            ll = run_exported(self.model, feats, self.device)
        else:
            from hybridasr.decode.forward import model_logits, to_input_rate

            x = self.transform(feats, None)  # CMVN done: the transform does the rest
            logits = model_logits(self.model, x, self.device, self.chunks)
            ll = logits if self.chain else to_input_rate(
                scaled_loglikes(logits, self.log_priors, self.opts.prior_scale),
                self.transform, len(feats))
        return ll * CHAIN_LOGLIKE_SCALE if self.chain else ll

    def decode(self, key: str, loglikes: np.ndarray) -> Tuple[List[int], Optional[list]]:
        o = self.opts
        if self.lattice_decoder is None:
            r = self.decoder.decode(loglikes, o.acwt, utt=key)
            return (list(r.words) if r.ok else []), None
        return self.words_of(key, self.lattice_decoder.decode(loglikes, o.acwt, utt=key))

    def words_of(self, key: str, r) -> Tuple[List[int], Optional[list]]:
        """The word ids (and CTM words with --ctm) of a ``LatticeResult`` at the LM weight."""
        o = self.opts
        if not r.ok:
            return [], [] if self.boundary is not None else None
        if self.boundary is not None:
            words = lattice_ctm(r.lattice, self.tm, self.boundary, o.lm_weight,
                                o.word_ins_penalty, what=f"recording {key}",
                                confidence=o.confidence, decode_mbr=o.decode_mbr)
            return [w.word for w in words or []], words or []
        bp = best_path(r.lattice.scaled(1.0, 1.0 / o.lm_weight, o.word_ins_penalty))
        return (bp.words if bp else []), None

    def transcribe(self, rec: Recording) -> Result:
        try:
            audio = read_audio(rec)
            raw = self.raw_features(audio, rec.source)
            ll = self.loglikes(self.normalise(raw, rec.key))
            if self.gmm is not None:
                spk = self.utt2spk.get(rec.key) if self.utt2spk is not None else None
                ll = self.gmm.fuse(ll, self.gmm.loglikes(
                    raw, self.md.global_stats, self.md.cmvn == "online",
                    self.spk_cmvn[spk] if spk is not None else None), f"recording {rec.key}")
            ids, ctm = self.decode(rec.key, ll)
        except HybridAsrError as e:
            return Result(rec.key, error=str(e))
        return self.result(rec.key, ids, ctm)

    def result(self, key: str, ids: List[int], ctm: Optional[list]) -> Result:
        """The words of the ids, the CTM's confidences calibrated where there is a
        calibration."""
        words = [self.graph.words.get(i, str(i)) for i in ids]
        if ctm and self.calibration is not None:
            from hybridasr.decode.confidence_calibration import calibrate_words

            calibrate_words(self.calibration, ctm, self.graph.words, self.frame_shift)
        return Result(key, words, ctm)

    def close(self) -> None:
        if self.lattice_decoder is not None:
            self.lattice_decoder.close()


def transcribe_all(t: Transcriber, recs: List[Recording], write_text: Callable[[str], None],
                   write_ctm: Optional[Callable[[str], None]] = None,
                   run: Optional[Callable[[Recording], Result]] = None) -> int:
    """Transcribes each recording (``run``: another way to, e.g. the online recognizer's),
    writing its line (and CTM lines) as it is done; a failed one is reported and skipped.
    Returns the number of failures."""
    failed = []
    for rec in recs:
        r = (run or t.transcribe)(rec)
        if r.error is not None:
            log.error("%s", r.error)
            failed.append(rec.source)
            continue
        write_text(f"{r.key} {' '.join(r.words)}".rstrip() + "\n")
        if write_ctm is not None and r.ctm is not None:
            write_ctm(ctm_lines(r.key, r.ctm, t.graph.words, t.frame_shift))
    return len(failed)
