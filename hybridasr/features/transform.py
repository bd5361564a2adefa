"""The feature transform between stored features and the network, rebuilt at decode time.

Per utterance, in this order: per-speaker CMVN from ``cmvn.scp`` (Kaldi ``apply-cmvn``
semantics: ``norm_means``, ``norm_vars``), deltas (``add-deltas``), global mean/variance
normalisation (statistics over the training set, ``fit``), splicing (``splice=5`` gives 11
frames, nnet1's ``--splice``), frame stacking (frame t with the ``stack_frames - 1`` after it)
and subsampling (every ``subsample``-th frame). Targets are subsampled alike.

``label_delay`` (for unidirectional LSTMs) is the one label delay: output t is trained on the
label of output frame t - delay. The input gets ``label_delay * subsample`` copies of its last
frame (as Kaldi nnet1's ``nnet-forward --time-shift`` does), so there are ``label_delay`` more
outputs than labels: the first ones get -100, the ignore index (out of the loss, never a
made-up label), and every label is trained. Decoding gives the same input, then
``undo_label_delay`` drops the first outputs: one output per frame, row t for frame t.

``TransformOptions`` declares the nine settings once (train.py's options; ``DataConfig`` holds
one); a ``FeatureTransform`` is those settings plus the global statistics. ``to_dict()`` is
what a model stores (``meta["transform"]``, the delay with it); ``from_dict`` rebuilds it.

Windows of an utterance (``start``/``end`` in output frames, for chunks and TBPTT) are computed
from the frames they need plus context, and equal the same rows of the whole-utterance output.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, List, Optional, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.features.cmvn import accumulate_cmvn_stats, apply_cmvn
from hybridasr.features.context import add_deltas, splice_frames
from hybridasr.options import check, option, option_specs

IGNORE_INDEX = -100


@dataclass
class TransformOptions:
    """The transform's settings, declared once: train.py's options (``DataConfig.transform``)
    and the first fields of the dict a model stores."""
    norm_means: bool = option(True, "per-speaker CMVN: subtract means (cmvn.scp)")
    norm_vars: bool = option(False, "per-speaker CMVN: also normalise variances")
    global_norm: bool = option(False, "global mean/variance normalisation over the training "
                                      "set (computed once)")
    delta_order: int = option(0, "add-deltas order", minimum=0)
    delta_window: int = option(2, "add-deltas window", minimum=1)
    splice: int = option(0, "frames of context either side (5 gives 11 frames, as nnet1)",
                         minimum=0)
    stack_frames: int = option(1, "stack each frame with the next N-1", minimum=1)
    subsample: int = option(1, "keep every N-th (stacked) frame; targets alike", minimum=1)
    label_delay: int = option(0, "output t is trained on the label of frame t-N", minimum=0)

    def validate(self) -> None:
        """ConfigError naming the option (type, minimum; --norm-vars without --norm-means)."""
        check(self)
        if self.norm_vars and not self.norm_means:
            raise ConfigError("--norm-vars=true needs --norm-means=true (as in Kaldi)")


@dataclass
class FeatureTransform(TransformOptions):
    """The settings and, with ``global_norm``, the statistics ``fit`` computes."""
    global_mean: Optional[List[float]] = None
    global_std: Optional[List[float]] = None
    var_floor: float = 1.0e-10

    # --- construction ---------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "FeatureTransform":
        """From ``to_dict()`` (a model's ``meta["transform"]``), checked."""
        names = set(asdict(cls()))
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown feature-transform keys: {', '.join(unknown)}")
        t = cls(**d)
        t.validate()
        return t

    @classmethod
    def from_options(cls, options: TransformOptions) -> "FeatureTransform":
        """A transform with ``options``' settings (statistics to ``fit``)."""
        return cls.from_dict({s.dest: getattr(options, s.dest)
                              for s in option_specs(TransformOptions)})

    def to_dict(self) -> dict:
        return asdict(self)

    # --- global statistics ------------------------------------------------------------
    @property
    def needs_fit(self) -> bool:
        return self.global_norm and self.global_mean is None

    def fit(self, pairs: Iterable[Tuple[np.ndarray, Optional[np.ndarray]]]) -> "FeatureTransform":
        """Global mean/std over (raw feats, cmvn stats or None) pairs, after CMVN and deltas."""
        stats = None
        for feats, cmvn in pairs:
            stats = accumulate_cmvn_stats(self._pre_norm(feats, cmvn), stats)
        if stats is None:
            raise FormatError("no features to compute global normalisation statistics from")
        dim = stats.shape[1] - 1
        count = stats[0, dim]
        mean = stats[0, :dim] / count
        var = np.maximum(stats[1, :dim] / count - mean * mean, self.var_floor)
        self.global_mean = [float(x) for x in mean]
        self.global_std = [float(x) for x in np.sqrt(var)]
        return self

    # --- shapes -----------------------------------------------------------------------
    def output_dim(self, input_dim: int) -> int:
        return input_dim * (self.delta_order + 1) * (2 * self.splice + 1) * self.stack_frames

    def output_length(self, num_frames: int) -> int:
        """Output frames of an utterance of ``num_frames`` frames (``label_delay`` of them past
        its end)."""
        if num_frames <= 0:
            return 0
        return math.ceil(num_frames / self.subsample) + self.label_delay

    @property
    def context(self) -> int:
        """Input frames either side that an output frame's value can depend on."""
        return self.splice + self.delta_order * self.delta_window + self.stack_frames - 1

    # --- application ------------------------------------------------------------------
    def _pre_norm(self, feats: np.ndarray, cmvn: Optional[np.ndarray]) -> np.ndarray:
        x = np.asarray(feats, dtype=np.float32)
        if cmvn is not None and self.norm_means:
            x = apply_cmvn(x, cmvn, norm_means=True, norm_vars=self.norm_vars)
        if self.delta_order:
            x = add_deltas(x, self.delta_order, self.delta_window)
        return x

    def __call__(self, feats: np.ndarray, cmvn_stats: Optional[np.ndarray] = None,
                 start: int = 0, end: Optional[int] = None) -> np.ndarray:
        """Output frames [start, end) (default all) of one utterance, float32."""
        feats = np.asarray(feats)
        if feats.ndim != 2:
            raise FormatError(f"expected a frames x dim matrix, got shape {feats.shape}")
        T = feats.shape[0]
        padded = T + self.label_delay * self.subsample if T else 0  # copies of the last frame
        n_out = self.output_length(T)
        end = n_out if end is None else min(end, n_out)
        if not 0 <= start <= end:
            raise FormatError(f"bad window [{start}, {end}) of an utterance of {n_out} frames")
        if end == start:
            return np.zeros((0, self.output_dim(feats.shape[1])), np.float32)
        sub = self.subsample
        lo = max(0, start * sub - self.context)
        hi = min(padded, (end - 1) * sub + 1 + self.context)
        window = feats[lo:hi] if hi <= T else feats[np.minimum(np.arange(lo, hi), T - 1)]
        x = self._pre_norm(window, cmvn_stats)
        if self.global_norm:
            if self.global_mean is None:
                raise ConfigError("global normalisation has no statistics: call fit() first")
            if len(self.global_mean) != x.shape[1]:
                raise FormatError(f"global normalisation statistics have dim "
                                  f"{len(self.global_mean)}, features {x.shape[1]}")
            x = (x - np.asarray(self.global_mean, np.float32)) / \
                np.asarray(self.global_std, np.float32)
        if self.splice:
            x = splice_frames(x, self.splice)
        rows = np.arange(start * sub, end * sub, sub) - lo
        if self.stack_frames > 1:
            n = x.shape[0]
            idx = np.minimum(rows[:, None] + np.arange(self.stack_frames)[None, :], n - 1)
            return np.ascontiguousarray(x[idx].reshape(len(rows), -1), dtype=np.float32)
        return np.ascontiguousarray(x[rows], dtype=np.float32)

    def targets(self, ali: np.ndarray, start: int = 0, end: Optional[int] = None) -> np.ndarray:
        """Frame labels of output frames [start, end): subsampled like the features and, with a
        label delay, after ``label_delay`` ignore labels (-100), int64."""
        y = np.asarray(ali, dtype=np.int64)[::self.subsample]
        if self.label_delay and len(y):
            y = np.concatenate([np.full(self.label_delay, IGNORE_INDEX, np.int64), y])
        return y[start:end]

    def undo_label_delay(self, outputs: np.ndarray) -> np.ndarray:
        """Decode time: the network's outputs for an utterance without the first
        ``label_delay`` (those trained on no label): row t is then frame t's output."""
        return outputs[self.label_delay:]
