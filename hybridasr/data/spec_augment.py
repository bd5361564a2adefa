"""SpecAugment-style masking of training features (Park et al., 2019: frequency and time
masks; no time warping).

``SpecAugmentOptions`` declares the options (train.py's, in any conf file it reads:
``--config``, ``--batching-config``); ``--freq-masks=0 --time-masks=0`` (the defaults) is off.
``DataConfig.augment`` holds them; the loader (``hybridasr.data.loader``) applies them to the
training batches only: ``DataConfig.for_evaluation`` (cross-validation) turns them off, and
alignment, forward passes and decoding never go through the training loader.

Masks are applied to each sequence of a batch (an utterance, or a chunk or piece of one)
after the feature transform, so after CMVN and global normalisation: a masked value is 0,
the mean. A frequency mask zeroes a band of ``f`` consecutive feature channels (``f`` uniform
in 0..``--freq-mask-width``, the band's first channel uniform among those where it fits); with
deltas, splicing or frame stacking, the same channels of every delta order and every spliced
or stacked frame. A time mask zeroes ``t`` consecutive output frames (``t`` uniform in
0..``--time-mask-width``, at most ``--time-mask-max-fraction`` of the sequence's frames).
Masks may overlap.

Every draw comes from a generator seeded by (``--seed``, epoch, the plan unit's place in the
epoch, utterance key, first frame): the masks do not depend on the loader's worker count, on
the order units are loaded in, or on torch's and numpy's global random state, so a training
killed and resumed (``hybridasr.train.partial``) sees the masks of an uninterrupted one, and an
utterance seen twice in an epoch (``--min-batches-per-epoch``) gets different masks each
time. (torchaudio's ``FrequencyMasking``/``TimeMasking`` draw from torch's global generator,
which is why they are not used.)
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hybridasr.errors import ConfigError
from hybridasr.options import check, option

_STREAM = 0x5EC_A06  # keeps these draws apart from other (seed, epoch) streams


@dataclass(frozen=True)
class SpecAugmentOptions:
    """Masking of training sequences, declared once (train.py's options)."""
    freq_masks: int = option(
        0, "SpecAugment: frequency masks per training sequence (0 = none); masked values "
           "are 0, the mean after normalisation; training batches only", minimum=0)
    freq_mask_width: int = option(
        4, "SpecAugment: widest frequency mask, in feature channels (each mask's width is "
           "uniform in 0..N)", minimum=0)
    time_masks: int = option(
        0, "SpecAugment: time masks per training sequence (0 = none); training batches only",
        minimum=0)
    time_mask_width: int = option(
        20, "SpecAugment: widest time mask, in output frames (each mask's width is uniform "
            "in 0..N, see --time-mask-max-fraction)", minimum=0)
    time_mask_max_fraction: float = option(
        0.2, "SpecAugment: a time mask covers at most this fraction of its sequence's "
             "frames (SpecAugment's p)", minimum=0.0)

    def validate(self) -> None:
        """ConfigError naming the option (types, minimums, the fraction at most 1)."""
        check(self)
        if self.time_mask_max_fraction > 1.0:
            raise ConfigError(f"--time-mask-max-fraction={self.time_mask_max_fraction}: "
                              f"must be <= 1")

    @property
    def enabled(self) -> bool:
        return (self.freq_masks > 0 and self.freq_mask_width > 0) or \
            (self.time_masks > 0 and self.time_mask_width > 0 and
             self.time_mask_max_fraction > 0)


def _utt_hash(utt: str) -> int:
    return zlib.crc32(utt.encode("utf-8"))


@dataclass(frozen=True)
class SpecAugment:
    """The masking of one epoch: ``options``, the training ``seed``, the ``epoch`` and
    ``channels``, the stored features' dimension (a frequency mask names channels of it)."""
    options: SpecAugmentOptions
    seed: int
    epoch: int
    channels: int

    def rng(self, unit: int, utt: str, start: int) -> np.random.Generator:
        return np.random.default_rng([int(self.seed) & 0xFFFFFFFF, int(self.epoch), int(unit),
                                      _utt_hash(utt), int(start), _STREAM])

    def masks(self, length: int, unit: int, utt: str, start: int):
        """([(first channel, width)], [(first frame, width)]) for a sequence of ``length``
        frames: a function of the arguments and the epoch's settings only."""
        o, rng = self.options, self.rng(unit, utt, start)
        freq, time = [], []
        for _ in range(o.freq_masks):
            f = int(rng.integers(0, min(o.freq_mask_width, self.channels) + 1))
            f0 = int(rng.integers(0, self.channels - f + 1))
            freq.append((f0, f))
        widest = min(o.time_mask_width, int(o.time_mask_max_fraction * length))
        for _ in range(o.time_masks):
            t = int(rng.integers(0, widest + 1))
            t0 = int(rng.integers(0, length - t + 1))
            time.append((t0, t))
        return freq, time

    def apply(self, x: np.ndarray, unit: int, utt: str, start: int) -> np.ndarray:
        """``x`` [frames, dim] (the transform's output of frames [start, ...) of ``utt``) with
        its masks applied, a copy; ``unit``: the plan unit's index in the epoch."""
        if x.shape[1] % self.channels:
            raise ConfigError(f"SpecAugment: feature dim {x.shape[1]} is not a multiple of "
                              f"the {self.channels} stored channels")
        freq, time = self.masks(x.shape[0], unit, utt, start)
        x = np.array(x, dtype=np.float32, copy=True)
        blocks = x.reshape(x.shape[0], -1, self.channels)  # a view: deltas, spliced frames
        for f0, f in freq:
            blocks[:, :, f0:f0 + f] = 0.0
        for t0, t in time:
            x[t0:t0 + t] = 0.0
        return x


def make_spec_augment(options: SpecAugmentOptions, seed: int, epoch: int,
                      channels: int) -> Optional[SpecAugment]:
    """The epoch's masking, or None when the options mask nothing."""
    return SpecAugment(options, seed, epoch, channels) if options.enabled else None
