"""Kaldi-compatible MFCC and filterbank features, computed in batches with torch (what the
feature types share; what each does after the power spectrum is its class in
``hybridasr.features.types``).

The numbers are those of ``torchaudio.compliance.kaldi.mfcc`` / ``fbank`` (which match Kaldi's
``compute-mfcc-feats`` / ``compute-fbank-feats``): the mel filterbank is torchaudio's
``get_mel_banks`` and the DCT torchaudio's ``create_dct``. What differs is the cost per utterance:
torchaudio rebuilds the window, the mel banks and the DCT matrix on every call and runs ~50 small
tensor operations per utterance, which dominates for short utterances. Here those constant
matrices are built once (mel banks once per VTLN warp factor) and a whole batch of utterances is
framed into one matrix, so each tensor operation runs once per batch, not once per utterance.

Dither is reproducible: the noise of an utterance comes from a generator seeded with
``seed`` and the utterance id, so it does not depend on the batch or on how the data was split
into jobs.
"""
from __future__ import annotations

import math
import zlib
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch
import torchaudio.compliance.kaldi as ta_kaldi

from hybridasr.errors import ConfigError
from hybridasr.features.options import FeatureOptions
from hybridasr.features.types import EPS as _EPS
from hybridasr.features.types import feature_type


def window_function(opts: FeatureOptions) -> np.ndarray:
    """Kaldi's FeatureWindowFunction (computed in double, as Kaldi does)."""
    n = opts.window_size
    i = np.arange(n, dtype=np.float64)
    a = 2.0 * math.pi / (n - 1)
    t = opts.window_type
    if t == "hanning":
        w = 0.5 - 0.5 * np.cos(a * i)
    elif t == "hamming":
        w = 0.54 - 0.46 * np.cos(a * i)
    elif t == "povey":
        w = np.power(0.5 - 0.5 * np.cos(a * i), 0.85)
    elif t == "rectangular":
        w = np.ones(n)
    else:  # blackman
        b = opts.blackman_coeff
        w = b - 0.5 * np.cos(a * i) + (0.5 - b) * np.cos(2 * a * i)
    return w.astype(np.float32)


def utterance_seed(seed: int, key: str) -> int:
    """The dither seed of one utterance: independent of batching and job splits."""
    return (int(seed) * 1000003 + zlib.crc32(key.encode("utf-8"))) & 0x7FFFFFFFFFFF


class FeatureExtractor:
    """Computes MFCC or fbank features for waveforms at ``opts.sample_frequency``.

    >>> ex = FeatureExtractor(FeatureOptions.kaldi_defaults("mfcc", dither=0.0))
    >>> feats = ex.compute(samples)            # (num_frames, 13) float32 numpy
    >>> batch = ex.compute_batch([a, b, c])    # one matrix per waveform

    Waveforms are 1-D numpy arrays on Kaldi's scale (16-bit samples as integers).
    """

    def __init__(self, opts: FeatureOptions, seed: int = 0):
        opts.validate()
        self.opts = opts
        self.seed = seed
        self.dim = opts.feature_dim
        self._window = torch.from_numpy(window_function(opts))
        self._mel_cache: Dict[float, torch.Tensor] = {}
        self._generator = torch.Generator()
        self._type = feature_type(opts)  # mfcc, fbank: hybridasr.features.types
        self._log_energy_floor = (math.log(opts.energy_floor) if opts.energy_floor > 0.0
                                  else None)

    def mel_banks(self, vtln_warp: float = 1.0) -> torch.Tensor:
        """(N/2 + 1) x num_mel_bins matrix (the Nyquist row is zero, as in Kaldi)."""
        m = self._mel_cache.get(vtln_warp)
        if m is None:
            o = self.opts
            try:
                bins, _ = ta_kaldi.get_mel_banks(o.num_mel_bins, o.padded_window_size,
                                                 o.sample_frequency, o.low_freq, o.high_freq,
                                                 o.vtln_low, o.vtln_high, vtln_warp)
            except AssertionError as e:  # torchaudio checks the VTLN options with asserts
                raise ConfigError(f"bad mel/VTLN options for warp factor {vtln_warp}: "
                                  f"{e}") from None
            m = torch.zeros(o.padded_window_size // 2 + 1, o.num_mel_bins)
            m[: bins.shape[1]] = bins.T.to(torch.float32)
            self._mel_cache[vtln_warp] = m
        return m

    # -- framing -------------------------------------------------------------------------
    def _frames_into(self, wave: np.ndarray, out: np.ndarray) -> None:
        o = self.opts
        shift, size = o.window_shift, o.window_size
        m = out.shape[0]
        if o.snip_edges:
            wave = np.ascontiguousarray(wave)
            view = np.lib.stride_tricks.as_strided(
                wave, shape=(m, size), strides=(shift * wave.strides[0], wave.strides[0]),
                writeable=False)
            out[...] = view
        else:
            n = len(wave)
            start = np.arange(m) * shift + shift // 2 - size // 2
            idx = start[:, None] + np.arange(size)[None, :]
            # Kaldi reflects: s < 0 -> -s - 1; s >= n -> 2n - 1 - s (repeat for tiny waves)
            while True:
                low, high = idx < 0, idx >= n
                if not (low.any() or high.any()):
                    break
                idx = np.where(low, -idx - 1, idx)
                idx = np.where(idx >= n, 2 * n - 1 - idx, idx)
            out[...] = wave[idx]

    # -- computation ---------------------------------------------------------------------
    def compute(self, wave: np.ndarray, vtln_warp: float = 1.0, key: str = "") -> np.ndarray:
        return self.compute_batch([wave], vtln_warp, [key])[0]

    @torch.inference_mode()
    def compute_batch(self, waves: Sequence[np.ndarray], vtln_warp: float = 1.0,
                      keys: Optional[Sequence[str]] = None) -> List[np.ndarray]:
        """Features of each waveform (a (frames x dim) float32 array each; 0 frames if short)."""
        o = self.opts
        counts = [o.num_frames(len(w)) for w in waves]
        total = sum(counts)
        if total == 0:
            return [np.zeros((0, self.dim), np.float32) for _ in waves]
        buf = np.empty((total, o.window_size), dtype=np.float32)
        s = 0
        for w, c in zip(waves, counts):
            if c:
                self._frames_into(w, buf[s:s + c])
            s += c
        x = torch.from_numpy(buf)
        if o.dither != 0.0:
            noise = torch.empty_like(x)
            s = 0
            for i, c in enumerate(counts):
                if c:
                    key = keys[i] if keys is not None else str(i)
                    self._generator.manual_seed(utterance_seed(self.seed, key))
                    torch.randn(c, o.window_size, generator=self._generator, out=noise[s:s + c])
                s += c
            x.add_(noise, alpha=o.dither)
        out = self.from_frames(x, vtln_warp)
        result, s = [], 0
        for cnt in counts:
            result.append(out[s:s + cnt])
            s += cnt
        return result

    @torch.inference_mode()
    def from_frames(self, x: torch.Tensor, vtln_warp: float = 1.0) -> np.ndarray:
        """Features of framed (and dithered) samples [frames, window_size], which it
        modifies: what ``compute_batch`` does after framing and dither (online features frame
        the samples themselves)."""
        o = self.opts
        if o.remove_dc_offset:
            x.sub_(x.mean(dim=1, keepdim=True))
        energy = None
        if o.use_energy and o.raw_energy:
            energy = self._log_energy(x)
        c = o.preemphasis_coefficient
        if c != 0.0:
            y = torch.empty_like(x)
            torch.sub(x[:, 1:], x[:, :-1], alpha=c, out=y[:, 1:])
            torch.mul(x[:, 0], 1.0 - c, out=y[:, 0])
            x = y
        x.mul_(self._window)
        if o.use_energy and not o.raw_energy:
            energy = self._log_energy(x)
        spec = torch.fft.rfft(x, n=o.padded_window_size)
        power = self._type.spectrum(torch.view_as_real(spec).square_().sum(dim=-1))
        feats = self._type.from_mel(torch.matmul(power, self.mel_banks(vtln_warp)), energy)
        return feats.numpy()

    def _log_energy(self, x: torch.Tensor) -> torch.Tensor:
        e = x.square().sum(dim=1).clamp_min_(_EPS).log_()
        if self._log_energy_floor is not None:
            e.clamp_min_(self._log_energy_floor)
        return e
