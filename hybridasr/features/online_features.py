"""Features and online CMVN of audio that arrives in pieces, equal to those of the whole
recording (``FeatureExtractor.compute`` and ``online_cmvn``).

``OnlineFeatures``: samples in, feature frames out as soon as all their samples are in, as
Kaldi's ``OnlineGenericBaseFeature``: with ``--snip-edges=true`` every frame as its window is
complete; with ``--snip-edges=false`` (frames centred on their shift, the edges reflected) the
last frames, whose windows reach past the end, at ``finish``. The frames go through the
extractor's own computation (``FeatureExtractor.from_frames``). Dither is the extractor's: the
noise of a recording comes from a generator seeded by its id, drawn frame block by frame block
in the same sequence as the whole recording's one draw (torch's normal sampling fills blocks
of 16 values: a block of frames whose sample count is not a multiple of 16 is drawn only at
``finish``, so with some window sizes up to 15 frames wait for the end).

``OnlineCmvnState``: Kaldi's ``OnlineCmvn`` frame by frame (a window of the last
``cmn_window`` frames, made up with the global stats while it is shorter), as ``online_cmvn``
computes it over a whole recording, float for float.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from hybridasr.errors import FormatError
from hybridasr.features.extractor import FeatureExtractor, utterance_seed
from hybridasr.features.online_cmvn import (CMN_WINDOW, GLOBAL_FRAMES, check_stats,
                                            window_normalise)


class OnlineFeatures:
    """One recording at a time: ``start(key)``, ``accept(samples)`` -> the new frames,
    ``finish()`` -> the last frames. Samples on Kaldi's scale, at the extractor's rate."""

    def __init__(self, extractor: FeatureExtractor, vtln_warp: float = 1.0):
        self.ex, self.opts, self.vtln_warp = extractor, extractor.opts, vtln_warp
        o = self.opts
        self.shift, self.size = o.window_shift, o.window_size
        # frames per noise draw that keeps torch's 16-value blocks aligned
        self.noise_group = 16 // math.gcd(self.size, 16)
        self._gen = torch.Generator()
        self.start("")

    def start(self, key: str) -> None:
        self.key = key
        self._buf = np.zeros(0, np.float32)
        self._base = 0            # absolute index of _buf[0]
        self._num_samples = 0     # samples accepted
        self._done = 0            # frames given out
        self._noise = np.zeros((0, self.size), np.float32)
        self._noise_from = 0      # frame index of _noise[0]
        self._finished = False
        if self.opts.dither != 0.0:
            self._gen.manual_seed(utterance_seed(self.ex.seed, key))

    @property
    def num_frames(self) -> int:
        return self._done

    def _frame_start(self, i: np.ndarray) -> np.ndarray:
        if self.opts.snip_edges:
            return i * self.shift
        return i * self.shift + self.shift // 2 - self.size // 2

    def _ready(self, final: bool) -> int:
        """Frames whose samples are all in (all of them when ``final``)."""
        n = self._num_samples
        if final:
            return self.opts.num_frames(n)
        if self.opts.snip_edges:
            return self.opts.num_frames(n)
        # frame i is complete when its window ends within the samples
        first_off = self.shift // 2 - self.size // 2
        k = (n - self.size - first_off) // self.shift + 1
        return max(0, min(k, self.opts.num_frames(n)))

    def _noise_for(self, lo: int, hi: int, final: bool) -> int:
        """Draws the noise of frames up to ``hi`` (in whole groups unless ``final``); returns
        the end of the frames from ``lo`` on that have their noise."""
        have = self._noise_from + len(self._noise)
        g = self.noise_group
        want = hi if final else have + max(0, hi - have) // g * g
        if want > have:
            fresh = torch.randn(want - have, self.size, generator=self._gen).numpy()
            self._noise = np.concatenate([self._noise, fresh]) if len(self._noise) else fresh
        return min(hi, self._noise_from + len(self._noise))

    def _frames(self, final: bool) -> np.ndarray:
        lo = self._done
        hi = self._ready(final)
        if self.opts.dither != 0.0 and hi > lo:
            hi = self._noise_for(lo, hi, final)
        if hi <= lo:
            return np.zeros((0, self.ex.dim), np.float32)
        idx = self._frame_start(np.arange(lo, hi))[:, None] + np.arange(self.size)[None, :]
        n = self._num_samples
        while True:  # Kaldi's reflection at the edges (only snip_edges=false reaches them)
            low, high = idx < 0, idx >= n
            if not (low.any() or high.any()):
                break
            idx = np.where(low, -idx - 1, idx)
            idx = np.where(idx >= n, 2 * n - 1 - idx, idx)
        x = torch.from_numpy(np.ascontiguousarray(self._buf[idx - self._base], np.float32))
        if self.opts.dither != 0.0:  # as compute_batch adds it
            noise = self._noise[lo - self._noise_from:hi - self._noise_from]
            x.add_(torch.from_numpy(np.ascontiguousarray(noise)), alpha=self.opts.dither)
        feats = self.ex.from_frames(x, self.vtln_warp)
        self._done = hi
        self._trim()
        return feats

    def _trim(self) -> None:
        """Drops samples no later frame needs (the first ones stay while frames reflect at the
        start)."""
        first = int(self._frame_start(np.array(self._done))[()])
        if first <= 0:
            return
        cut = first - self._base
        if cut > 0:
            self._buf = self._buf[cut:]
            self._base = first
        if self._noise_from < self._done:
            self._noise = self._noise[self._done - self._noise_from:]
            self._noise_from = self._done

    def accept(self, samples: np.ndarray) -> np.ndarray:
        """The new frames [k, dim] (k >= 0) after ``samples`` (1-D)."""
        if self._finished:
            raise FormatError(f"recording {self.key}: audio after its end (call start first)")
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(samples):
            self._buf = (np.concatenate([self._buf, samples]) if len(self._buf)
                         else samples.copy())
            self._num_samples += len(samples)
        return self._frames(final=False)

    def finish(self) -> np.ndarray:
        """The frames left at the end of the recording."""
        feats = self._frames(final=True)
        self._finished = True
        return feats


class OnlineCmvnState:
    """Online CMVN of frames given in blocks (``online_cmvn``'s figures, frame t with the
    stats of the window ending at t and the global stats)."""

    def __init__(self, global_stats: Optional[np.ndarray], norm_vars: bool = False,
                 cmn_window: int = CMN_WINDOW, global_frames: int = GLOBAL_FRAMES):
        self.g = None if global_stats is None else check_stats(global_stats,
                                                               "global CMVN stats")
        self.norm_vars, self.window, self.global_frames = norm_vars, cmn_window, global_frames
        self.start()

    def start(self) -> None:
        self._t = 0               # frames seen
        self._csum = None         # running sums of the last window + 1 frames (rows t0..t)
        self._csq = None
        self._t0 = 0              # frame index of the sums' first row (sum of frames < t0)

    def apply(self, feats: np.ndarray) -> np.ndarray:
        x = np.asarray(feats, dtype=np.float32)
        if len(x) == 0:
            return x.copy()
        dim = x.shape[1]
        xd = x.astype(np.float64)
        if self._csum is None:
            self._csum = np.zeros((1, dim))
            self._csq = np.zeros((1, dim))
        elif self._csum.shape[1] != dim:
            raise FormatError(f"features of dim {dim} after dim {self._csum.shape[1]}")
        # sequential sums continued from the last row (as one cumsum over the recording)
        csum = np.cumsum(np.concatenate([self._csum[-1:], xd]), axis=0)[1:]
        self._csum = np.concatenate([self._csum, csum])
        if self.norm_vars:
            csq = np.cumsum(np.concatenate([self._csq[-1:], xd * xd]), axis=0)[1:]
            self._csq = np.concatenate([self._csq, csq])
        t = len(x)
        hi = np.arange(self._t + 1, self._t + t + 1)
        lo = np.maximum(0, hi - self.window)
        count = (hi - lo).astype(np.float64)
        sums = self._csum[hi - self._t0] - self._csum[lo - self._t0]
        sq = self._csq[hi - self._t0] - self._csq[lo - self._t0] if self.norm_vars else None
        self._t += t
        keep = self._t - self.window  # the oldest row a later frame needs
        if keep > self._t0:
            self._csum = self._csum[keep - self._t0:]
            if self.norm_vars:
                self._csq = self._csq[keep - self._t0:]
            self._t0 = keep
        return window_normalise(xd, sums, sq, count, self.g, self.norm_vars, self.window,
                                self.global_frames)
