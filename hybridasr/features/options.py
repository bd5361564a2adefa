"""The options of Kaldi's ``compute-mfcc-feats`` / ``compute-fbank-feats``, with Kaldi's defaults.

Each option is declared once (name, type, default, help) and registered on a
``hybridasr.cli`` parser, so a Kaldi ``conf/mfcc.conf`` reads unchanged and an option we do not
know is an error naming the conf file and line (the cli module does that). The defaults are
Kaldi's, not torchaudio's: MFCC has ``--use-energy=true`` and ``--dither=1.0``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import List, Tuple

from hybridasr.cli import add_bool
from hybridasr.errors import ConfigError

WINDOW_TYPES = ("hamming", "hanning", "povey", "rectangular", "blackman")

# (option name, type, default, help); type bool is registered with add_bool.
FRAME_OPTIONS: List[Tuple[str, type, object, str]] = [
    ("sample-frequency", float, 16000.0, "waveform sample frequency (must match the data)"),
    ("frame-shift", float, 10.0, "frame shift in milliseconds"),
    ("frame-length", float, 25.0, "frame length in milliseconds"),
    ("preemphasis-coefficient", float, 0.97, "coefficient of the signal pre-emphasis"),
    ("remove-dc-offset", bool, True, "subtract the mean of each frame before processing"),
    ("dither", float, 1.0, "dithering constant (0 = no dither); see --seed"),
    ("window-type", str, "povey", "window: hamming|hanning|povey|rectangular|blackman"),
    ("blackman-coeff", float, 0.42, "constant coefficient of the generalized Blackman window"),
    ("round-to-power-of-two", bool, True, "zero-pad the FFT input to a power of two"),
    ("snip-edges", bool, True, "only frames that fit in the file (false: reflect at the ends)"),
    ("allow-downsample", bool, False, "resample audio whose rate is above --sample-frequency"),
    ("allow-upsample", bool, False, "resample audio whose rate is below --sample-frequency"),
    ("max-feature-vectors", int, -1, "accepted for compatibility (memory option of online "
                                     "feature extraction; no effect here)"),
]
MEL_OPTIONS = [
    ("num-mel-bins", int, 23, "number of triangular mel-frequency bins"),
    ("low-freq", float, 20.0, "low cutoff frequency of the mel bins"),
    ("high-freq", float, 0.0, "high cutoff frequency of the mel bins (<= 0: offset from Nyquist)"),
    ("vtln-low", float, 100.0, "low inflection point of the piecewise linear VTLN warping"),
    ("vtln-high", float, -500.0, "high inflection point of the VTLN warping (< 0: offset from "
                                 "the high frequency)"),
    ("debug-mel", bool, False, "accepted for compatibility (prints nothing here)"),
]
COMMON_ENERGY_OPTIONS = [
    ("energy-floor", float, 0.0, "floor on the log-energy's energy (absolute; 0 = none)"),
    ("raw-energy", bool, True, "compute energy before pre-emphasis and windowing"),
    ("htk-compat", bool, False, "put energy / C0 last (not enough for HTK-compatible features)"),
]
MFCC_ONLY_OPTIONS = [
    ("num-ceps", int, 13, "number of cepstra in the MFCC (including C0)"),
    ("use-energy", bool, True, "use energy (not C0) as the first coefficient"),
    ("cepstral-lifter", float, 22.0, "constant of the cepstral liftering (0 = none)"),
]
FBANK_ONLY_OPTIONS = [
    ("use-energy", bool, False, "add an extra first dimension with the log energy"),
    ("use-log-fbank", bool, True, "log filterbank energies (false: linear)"),
    ("use-power", bool, True, "power spectrum (false: magnitude)"),
]


def _dest(name: str) -> str:
    return name.replace("-", "_")


def _register(parser: argparse.ArgumentParser, specs) -> None:
    for name, typ, default, help in specs:
        if typ is bool:
            add_bool(parser, f"--{name}", default, help)
        else:
            parser.add_argument(f"--{name}", type=typ, default=default,
                                help=f"{help} (default: {default})")


def feature_option_specs(kind: str):
    if kind == "mfcc":
        return FRAME_OPTIONS + MEL_OPTIONS + COMMON_ENERGY_OPTIONS + MFCC_ONLY_OPTIONS
    if kind == "fbank":
        return FRAME_OPTIONS + MEL_OPTIONS + COMMON_ENERGY_OPTIONS + FBANK_ONLY_OPTIONS
    raise ValueError(f"unknown feature kind {kind!r}")


def add_feature_options(parser: argparse.ArgumentParser, kind: str) -> None:
    """Registers every conf-file option of compute-{mfcc,fbank}-feats with Kaldi's defaults."""
    _register(parser, feature_option_specs(kind))


@dataclass(frozen=True)
class FeatureOptions:
    """Everything the computation needs (one object for MFCC and fbank)."""
    kind: str = "mfcc"
    sample_frequency: float = 16000.0
    frame_shift: float = 10.0
    frame_length: float = 25.0
    preemphasis_coefficient: float = 0.97
    remove_dc_offset: bool = True
    dither: float = 1.0
    window_type: str = "povey"
    blackman_coeff: float = 0.42
    round_to_power_of_two: bool = True
    snip_edges: bool = True
    allow_downsample: bool = False
    allow_upsample: bool = False
    num_mel_bins: int = 23
    low_freq: float = 20.0
    high_freq: float = 0.0
    vtln_low: float = 100.0
    vtln_high: float = -500.0
    energy_floor: float = 0.0
    raw_energy: bool = True
    htk_compat: bool = False
    use_energy: bool = True
    num_ceps: int = 13
    cepstral_lifter: float = 22.0
    use_log_fbank: bool = True
    use_power: bool = True

    @classmethod
    def from_args(cls, kind: str, args: argparse.Namespace) -> "FeatureOptions":
        values = {"kind": kind}
        for name, _, _, _ in feature_option_specs(kind):
            d = _dest(name)
            if d in {f.name for f in fields(cls)}:
                values[d] = getattr(args, d)
        if kind == "fbank":
            values.setdefault("use_energy", False)
        opts = cls(**values)
        opts.validate()
        return opts

    @classmethod
    def kaldi_defaults(cls, kind: str, **overrides) -> "FeatureOptions":
        """Kaldi's defaults for ``kind`` ('mfcc' or 'fbank'), with overrides."""
        values = {_dest(n): d for n, _, d, _ in feature_option_specs(kind)
                  if _dest(n) in {f.name for f in fields(cls)}}
        values.update(overrides)
        opts = cls(kind=kind, **values)
        opts.validate()
        return opts

    # Kaldi: static_cast<int32>(samp_freq * 0.001 * frame_shift_ms)
    @property
    def window_shift(self) -> int:
        return int(self.sample_frequency * 0.001 * self.frame_shift)

    @property
    def window_size(self) -> int:
        return int(self.sample_frequency * 0.001 * self.frame_length)

    @property
    def padded_window_size(self) -> int:
        n = self.window_size
        return 1 << (n - 1).bit_length() if self.round_to_power_of_two else n

    @property
    def feature_dim(self) -> int:
        if self.kind == "mfcc":
            return self.num_ceps
        return self.num_mel_bins + (1 if self.use_energy else 0)

    def num_frames(self, num_samples: int) -> int:
        """Kaldi's NumFrames()."""
        shift, size = self.window_shift, self.window_size
        if self.snip_edges:
            return 0 if num_samples < size else 1 + (num_samples - size) // shift
        return (num_samples + shift // 2) // shift

    def validate(self) -> None:
        def bad(msg):
            raise ConfigError(f"bad feature options: {msg}")
        if self.sample_frequency <= 0:
            bad(f"--sample-frequency={self.sample_frequency} must be > 0")
        if self.window_shift <= 0:
            bad(f"--frame-shift={self.frame_shift} ms gives a shift of {self.window_shift} samples")
        if self.window_size < 2:
            bad(f"--frame-length={self.frame_length} ms gives a window of "
                f"{self.window_size} samples")
        if self.padded_window_size % 2:
            bad(f"the FFT size {self.padded_window_size} is odd: use --round-to-power-of-two "
                f"or change --frame-length")
        if self.window_type not in WINDOW_TYPES:
            bad(f"--window-type={self.window_type}: expected one of {', '.join(WINDOW_TYPES)}")
        if not 0.0 <= self.preemphasis_coefficient <= 1.0:
            bad(f"--preemphasis-coefficient={self.preemphasis_coefficient} not in [0, 1]")
        if self.num_mel_bins < 3:
            bad(f"--num-mel-bins={self.num_mel_bins} (need at least 3)")
        nyquist = 0.5 * self.sample_frequency
        high = self.high_freq if self.high_freq > 0 else self.high_freq + nyquist
        if not (0 <= self.low_freq < nyquist and 0 < high <= nyquist and self.low_freq < high):
            bad(f"--low-freq={self.low_freq} and --high-freq={self.high_freq} do not fit the "
                f"Nyquist frequency {nyquist}")
        if self.kind == "mfcc":
            if not 1 <= self.num_ceps <= self.num_mel_bins:
                bad(f"--num-ceps={self.num_ceps} must be in [1, --num-mel-bins="
                    f"{self.num_mel_bins}]")
        if self.dither < 0:
            bad(f"--dither={self.dither} must be >= 0")
        if self.energy_floor < 0:
            bad(f"--energy-floor={self.energy_floor} must be >= 0")
