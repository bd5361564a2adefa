"""Streaming transcription: audio in pieces, a partial result after each, the final one at the
end (``transcribe.py --online``), with a ``Transcriber``'s model dir, graph and priors.

Per piece, what the whole-recording path does, as soon as its inputs are in: the features of
the frames whose samples are all in and their online CMVN (``hybridasr.features
.online_features``), the network over each window of ``--chunking=size:step`` once its
right context is in (``ChunkedAcousticModel``: a latency-controlled BLSTM sees its chunk of
``step`` frames and ``(size - step) / 2`` frames of context either side, from a zero state:
the windows of ``model_logits(..., ChunkOptions)``), and the lattice decoder advanced over the
new log-likelihoods (``LatticeDecoder.online_*``; a decoder without them decodes at the end).
The final result is that of ``Transcriber.transcribe`` with the same chunking.

What cannot stream is refused: CMVN with each recording's own means (``utterance``), chain and
exported models (whole recordings), audio at another rate than the features'.
"""
from __future__ import annotations

import logging
import os
import re
from typing import List, Optional, Tuple

import numpy as np

from hybridasr.decode.forward import ChunkOptions
from hybridasr.decode.loglikes import scaled_loglikes
from hybridasr.decode.transcribe import Recording, Result, Transcriber, read_audio
from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.features.online_features import OnlineCmvnState, OnlineFeatures

log = logging.getLogger(__name__)

DEFAULT_CHUNKING = "120:40"  # 40-frame windows with 40 of context each side: on polish (test +
# cv, 2 seeds) the offline BLSTM's errors (+0.1%); 20 of context lost 6.4% (docs/transcribe.md)


def training_chunking(model_dir: str) -> str:
    """The ``--chunking`` the model dir's network was trained with (its ``train.conf``), or
    ''."""
    conf = os.path.join(model_dir, "train.conf")
    if not os.path.isfile(conf):
        return ""
    with open(conf, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"\s*--chunking=(\S*)", line)
            if m:
                return m.group(1)
    return ""


def online_chunking(chunking: str, model_dir: str) -> Tuple[str, str]:
    """(the chunking --online uses, where it comes from): ``--chunking`` where given, else the
    model's training chunking, else ``DEFAULT_CHUNKING``."""
    if chunking:
        return chunking, "--chunking"
    trained = training_chunking(model_dir)
    if trained:
        return trained, f"the training chunking ({os.path.join(model_dir, 'train.conf')})"
    return DEFAULT_CHUNKING, (f"the default: {model_dir} was trained on whole utterances, so "
                              f"its chunks see less context than in training")


class ChunkedAcousticModel:
    """CMVN'd feature frames in, scaled log-likelihoods (one row per input frame) out, window
    by window: equal to ``Transcriber.loglikes`` with the same ``ChunkOptions``."""

    def __init__(self, t: Transcriber, chunks: ChunkOptions):
        if chunks.chunk_size <= 0:
            raise ConfigError("streaming needs --chunking=size:step (windows of the network)")
        self.t, self.chunks, self.tr = t, chunks, t.transform
        self.start()

    def start(self) -> None:
        self._feats: List[np.ndarray] = []
        self._num_feats = 0
        self._base = 0            # frames dropped (no window left needs them)
        self._all: Optional[np.ndarray] = None
        self._next_window = 0     # windows run
        self._rows = 0            # model output rows given out (label delay included)
        self._given = 0           # input-rate rows given out
        self._pending = np.zeros((0, self.t.num_pdfs), np.float32)  # rows not given out yet

    def _features(self) -> np.ndarray:
        if self._all is None or len(self._all) != self._num_feats - self._base:
            self._all = np.concatenate(self._feats) if len(self._feats) > 1 else self._feats[0]
            self._feats = [self._all]
        return self._all

    def _rows_ready(self) -> int:
        """Model rows whose inputs are all in (no copies of a last frame among them)."""
        need = self._num_feats - 1 - self.tr.context
        return need // self.tr.subsample + 1 if need >= 0 else 0

    def _trim(self) -> None:
        """Drops the frames before the next window's first input (a whole number of
        ``subsample`` steps: the transform's rows stay those of the recording)."""
        sub = self.tr.subsample
        lo = max(0, self._next_window * self.chunks.chunk_size - self.chunks.chunk_overlap)
        base = max(0, lo * sub - self.tr.context)
        base -= base % sub
        if base > self._base:
            self._all = self._features()[base - self._base:]
            self._feats, self._base = [self._all], base

    def _run(self, lo: int, hi: int, keep_from: int, keep_to: int, feats) -> np.ndarray:
        """Window [lo, hi) of the model rows, its rows [keep_from, keep_to) kept (rows of the
        recording; ``feats`` its frames from ``self._base`` on)."""
        from hybridasr.decode.forward import model_logits

        b = self._base // self.tr.subsample
        lo, hi, keep_from, keep_to = lo - b, hi - b, keep_from - b, keep_to - b
        x = self.tr(feats, None, lo, hi)  # CMVN done: the transform does the rest
        logits = model_logits(self.t.model, x, self.t.device)[keep_from - lo:keep_to - lo]
        return scaled_loglikes(logits, self.t.log_priors, self.t.opts.prior_scale)

    def _emit(self, ll: np.ndarray, num_frames: int) -> np.ndarray:
        """Input-rate rows of new model rows: the label delay dropped, each repeated
        ``subsample`` times, at most ``num_frames`` in all."""
        delay = self.tr.label_delay
        if self._rows < delay:
            drop = min(delay - self._rows, len(ll))
            self._rows += drop
            ll = ll[drop:]
        self._rows += len(ll)
        if self.tr.subsample > 1:
            ll = np.repeat(ll, self.tr.subsample, axis=0)
        rows = np.concatenate([self._pending, ll]) if len(self._pending) else ll
        n = max(0, min(len(rows), num_frames - self._given))
        self._pending = rows[n:]
        self._given += n
        return rows[:n]

    def accept(self, feats: np.ndarray) -> np.ndarray:
        """The log-likelihoods of the frames the new ``feats`` complete (maybe none)."""
        if len(feats):
            self._feats.append(np.asarray(feats, np.float32))
            self._num_feats += len(feats)
        step, ctx = self.chunks.chunk_size, self.chunks.chunk_overlap
        ready = self._rows_ready()
        out = []
        while (self._next_window + 1) * step + ctx <= ready:
            start = self._next_window * step
            out.append(self._run(max(0, start - ctx), start + step + ctx, start, start + step,
                                 self._features()))
            self._next_window += 1
        self._trim()
        if not out:
            return np.zeros((0, self.t.num_pdfs), np.float32)
        return self._emit(np.concatenate(out), self._num_feats)

    def finish(self) -> np.ndarray:
        """The log-likelihoods of the rest, the recording's end known."""
        if self._num_feats == 0:
            return np.zeros((0, self.t.num_pdfs), np.float32)
        feats = self._features()
        n = self.tr.output_length(self._num_feats)
        out = [self._run(lo, hi, kf, kt, feats) for lo, hi, kf, kt in self.chunks.windows(n)
               if kf >= self._next_window * self.chunks.chunk_size]
        ll = np.concatenate(out) if out else np.zeros((0, self.t.num_pdfs), np.float32)
        return self._emit(ll, self._num_feats)


class OnlineRecognizer:
    """``start(key)``, ``accept_waveform(samples, rate)`` -> the partial words, ``finish()``
    -> the ``Result`` (``Transcriber.transcribe``'s, CTM and all)."""

    def __init__(self, t: Transcriber):
        """``t``'s chunking (``TranscribeOptions.chunking``; none: ``DEFAULT_CHUNKING``)."""
        if t.exported:
            raise ConfigError("--online runs the network of a model dir in chunks: give the "
                              "model dir, not an exported model")
        if t.chain or t.factor > 1:
            raise ConfigError("--online: a chain model's outputs are those of whole "
                              "recordings (it is not trained on chunks): transcribe it "
                              "without --online")
        if t.md.cmvn == "utterance":
            raise ConfigError(f"--online: the CMVN of {t.md.path} is per recording (each "
                              f"recording's own means, known only at its end: "
                              f"{t.md.cmvn_source}), which cannot stream: use a model dir "
                              f"with the training set's global CMVN stats (global_cmvn.stats, "
                              f"which train.sh writes) and --cmvn=auto or online")
        self.t = t
        self.chunks = t.chunks
        if self.chunks.chunk_size <= 0:
            from hybridasr.decode.transcribe import chunk_options_of

            log.warning("note: streaming in windows of --chunking=%s", DEFAULT_CHUNKING)
            self.chunks = chunk_options_of(DEFAULT_CHUNKING)
        self.features = OnlineFeatures(t.extractor)
        self.cmvn = (OnlineCmvnState(t.md.global_stats, t.transform.norm_vars)
                     if t.md.cmvn == "online" else None)
        self.model = ChunkedAcousticModel(t, self.chunks)
        dec = t.lattice_decoder
        # the lattice decoder's incremental search; without it, the search runs at the end
        self.incremental = dec is not None and hasattr(dec, "online_start")
        self.key = ""
        self._started = False

    def start(self, key: str, source: str = "") -> None:
        """A new recording (``source``: what messages name; default ``recording <key>``)."""
        self.key, self.source = key, source or f"recording {key}"
        self.features.start(key)
        if self.cmvn is not None:
            self.cmvn.start()
        self.model.start()
        self._buffered: List[np.ndarray] = []
        self._partial: List[str] = []
        if self.incremental:
            self.t.lattice_decoder.online_start(self.t.opts.acwt, utt=key)
        self._started = True

    def _check_rate(self, rate: float) -> None:
        want = self.t.md.features.sample_frequency
        if rate != want:
            raise HybridAsrError(f"{self.source}: sample rate {rate:g} Hz, but the "
                                 f"model's features are {want:g} Hz ({self.t.md.feature_conf}): "
                                 f"--online takes audio at the features' rate (resample it "
                                 f"first, or transcribe without --online, which resamples "
                                 f"where the conf allows it: --allow-downsample/"
                                 f"--allow-upsample)")

    def _normalised(self, feats: np.ndarray) -> np.ndarray:
        return self.cmvn.apply(feats) if self.cmvn is not None else feats

    def _decode(self, ll: np.ndarray, partial: bool = True) -> None:
        if len(ll) == 0:
            return
        if self.incremental:
            self.t.lattice_decoder.online_advance(ll)
            if not partial:  # the final result follows
                return
            ids = self.t.lattice_decoder.online_partial_words()
            self._partial = [self.t.graph.words.get(i, str(i)) for i in ids]
        else:
            self._buffered.append(ll)

    def accept_waveform(self, samples: np.ndarray, rate: float) -> List[str]:
        """The words of the best path so far after a piece of audio (mono samples on Kaldi's
        scale: 16-bit values)."""
        if not self._started:
            raise HybridAsrError("accept_waveform before start(key)")
        self._check_rate(rate)
        if np.ndim(samples) != 1:
            raise HybridAsrError(f"{self.source}: accept_waveform takes mono samples (1-D), "
                                 f"got shape {np.shape(samples)}")
        self._decode(self.model.accept(self._normalised(self.features.accept(samples))))
        return list(self._partial)

    def finish(self) -> Result:
        """The final result of the recording (``Transcriber.transcribe``'s)."""
        if not self._started:
            raise HybridAsrError("finish before start(key)")
        self._started = False
        ll = self.model.accept(self._normalised(self.features.finish()))
        if self.features.num_frames == 0:
            o = self.t.md.features
            raise HybridAsrError(f"{self.source}: too short for one frame (fewer than "
                                 f"{o.window_size} samples)")
        self._decode(np.concatenate([ll, self.model.finish()]), partial=False)
        o = self.t.opts
        if (self.incremental and self.t.boundary is None and o.word_ins_penalty == 0
                and abs(o.lm_weight * o.acwt - 1.0) < 1e-6):
            # the words at the search's own scale: its best path, no lattice to make (the
            # offline lattice's best path at this LM weight, at the cost of a traceback)
            ids, ctm = self.t.lattice_decoder.online_finish_words(), None
        elif self.incremental:
            ids, ctm = self.t.words_of(self.key, self.t.lattice_decoder.online_finish())
        else:
            every = (np.concatenate(self._buffered) if self._buffered
                     else np.zeros((0, self.t.num_pdfs), np.float32))
            ids, ctm = self.t.decode(self.key, every)
        return self.t.result(self.key, ids, ctm)

    def transcribe(self, rec: Recording, piece_seconds: float = 0.1,
                   on_partial=None) -> Result:
        """A recording read whole, given in pieces of ``piece_seconds`` as a real-time client
        would (``on_partial(key, words)`` after each piece whose partial words changed)."""
        try:
            audio = read_audio(rec)
            self.start(rec.key, rec.source)
            step = max(1, int(round(piece_seconds * audio.rate)))
            last: List[str] = []
            for i in range(0, len(audio.samples), step):
                words = self.accept_waveform(audio.samples[i:i + step], audio.rate)
                if on_partial is not None and words != last:
                    on_partial(rec.key, words)
                    last = words
            return self.finish()
        except HybridAsrError as e:
            self._started = False
            return Result(rec.key, error=str(e))
