"""Speed perturbation of audio, as sox's ``speed`` effect: tempo and pitch change together.

``speed F`` plays the audio F times as fast at the same sample rate, so the output has N / F
samples: it is a resampling of the signal from F * rate to rate. The resampler is torchaudio's
``functional.resample`` (a Hann-windowed sinc, ``lowpass_filter_width=6``, ``rolloff=0.99``),
written here in numpy so that the wav pipe ``wav_speed_perturb.py`` starts without importing
torch (about 0.3 s per utterance instead of 2-4 s); ``tests/test_speed_perturb.py`` checks it
against torchaudio's. The factor is taken as a fraction p/q (0.9 = 9/10), so the filters are
the same at every sample rate.

The output is rounded and clipped to 16-bit integers, as a 16-bit wav written to a pipe holds
them: the feature reader's in-process route (``hybridasr.features.audio``) and the pipe give the
same samples, hence the same features.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Tuple

import numpy as np

from hybridasr.errors import ConfigError

LOWPASS_FILTER_WIDTH = 6
ROLLOFF = 0.99


def speed_ratio(factor) -> Tuple[int, int]:
    """``(p, q)`` with p / q = factor in lowest terms (0.9 -> (9, 10)); the resampling goes from
    p to q samples. Raises ConfigError for a factor that is not a positive number."""
    try:
        f = Fraction(str(factor)).limit_denominator(1000)
    except (ValueError, ZeroDivisionError):
        raise ConfigError(f"speed factor {factor!r} is not a number") from None
    if f <= 0:
        raise ConfigError(f"speed factor {factor!r} must be positive")
    return f.numerator, f.denominator


@lru_cache(maxsize=16)
def _kernel(orig: int, new: int) -> Tuple[np.ndarray, int]:
    """torchaudio's ``_get_sinc_resample_kernel`` (sinc_interp_hann), float64: [new, taps]."""
    base = min(orig, new) * ROLLOFF
    width = math.ceil(LOWPASS_FILTER_WIDTH * orig / base)
    idx = np.arange(-width, width + orig, dtype=np.float64) / orig
    t = np.arange(0, -new, -1, dtype=np.float64)[:, None] / new + idx[None, :]
    t *= base
    t = np.clip(t, -LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH)
    window = np.cos(t * math.pi / LOWPASS_FILTER_WIDTH / 2) ** 2
    t *= math.pi
    with np.errstate(invalid="ignore", divide="ignore"):
        sinc = np.where(t == 0, 1.0, np.sin(t) / np.where(t == 0, 1.0, t))
    return (sinc * window * (base / orig)).astype(np.float32), width


def resample(x: np.ndarray, orig: int, new: int) -> np.ndarray:
    """1-D float signal from ``orig`` to ``new`` samples per unit (integers), as
    ``torchaudio.functional.resample(x, orig, new)``: ceil(len * new / orig) samples."""
    g = math.gcd(orig, new)
    orig, new = orig // g, new // g
    x = np.asarray(x, dtype=np.float32)
    if orig == new:
        return x.copy()
    kernel, width = _kernel(orig, new)
    padded = np.concatenate([np.zeros(width, np.float32), x,
                             np.zeros(width + orig, np.float32)])
    taps = kernel.shape[1]
    n_out = (len(padded) - taps) // orig + 1
    frames = np.lib.stride_tricks.sliding_window_view(padded, taps)[::orig][:n_out]
    out = (frames @ kernel.T).reshape(-1)  # [n_out, new] -> interleaved
    return out[:math.ceil(new * len(x) / orig)]


def to_int16_values(x: np.ndarray) -> np.ndarray:
    """Rounded and clipped to 16-bit integers (kept as float32: Kaldi's sample scale)."""
    return np.clip(np.rint(x), -32768, 32767).astype(np.float32)


def speed_perturb(samples: np.ndarray, factor) -> np.ndarray:
    """sox ``speed <factor>``: 1-D samples (Kaldi's 16-bit scale) at ``factor`` times the speed,
    same rate, about len / factor samples, rounded to 16-bit values."""
    p, q = speed_ratio(factor)
    return to_int16_values(resample(samples, p, q))
