"""The options of Kaldi's ``compute-mfcc-feats`` / ``compute-fbank-feats``, with Kaldi's defaults.

Declared once, as dataclasses of ``option()`` fields (``hybridasr.options``): ``FeatureOptions``
holds what both share (framing, mel bins, energy); ``MfccOptions`` and ``FbankOptions`` add
their own options, ``--use-energy`` among them (its default and meaning differ: MFCC's
energy replaces C0 and is on, as in Kaldi; fbank's is an extra first dimension, off). The
command line and the conf-file keys come from these declarations, so a Kaldi
``conf/mfcc.conf`` reads unchanged and an option the kind does not declare is an error naming
the conf file and line. The defaults are Kaldi's, not torchaudio's: MFCC has
``--use-energy=true`` and ``--dither=1.0``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hybridasr.errors import ConfigError
from hybridasr.options import check, from_values, option

WINDOW_TYPES = ("hamming", "hanning", "povey", "rectangular", "blackman")


@dataclass(frozen=True)
class FeatureOptions:
    """What MFCC and fbank share; ``kind`` ('mfcc' or 'fbank') is the subclass's, the name
    its feature type is registered under (``hybridasr.features.types.FEATURE_TYPES``).
    ``FeatureOptions.kaldi_defaults(kind, **overrides)`` gives the options of a kind."""
    kind: ClassVar[str] = ""

    # framing (Kaldi's FrameExtractionOptions)
    sample_frequency: float = option(16000.0, "waveform sample frequency (must match the data)")
    frame_shift: float = option(10.0, "frame shift in milliseconds")
    frame_length: float = option(25.0, "frame length in milliseconds")
    preemphasis_coefficient: float = option(0.97, "coefficient of the signal pre-emphasis")
    remove_dc_offset: bool = option(True, "subtract the mean of each frame before processing")
    dither: float = option(1.0, "dithering constant (0 = no dither); see --seed")
    window_type: str = option("povey", "window: " + "|".join(WINDOW_TYPES))
    blackman_coeff: float = option(0.42, "constant coefficient of the generalized Blackman "
                                         "window")
    round_to_power_of_two: bool = option(True, "zero-pad the FFT input to a power of two")
    snip_edges: bool = option(True, "only frames that fit in the file (false: reflect at the "
                                    "ends)")
    allow_downsample: bool = option(False, "resample audio whose rate is above "
                                           "--sample-frequency")
    allow_upsample: bool = option(False, "resample audio whose rate is below "
                                         "--sample-frequency")
    max_feature_vectors: int = option(-1, "accepted for compatibility (memory option of online "
                                          "feature extraction; no effect here)")
    # mel bins (Kaldi's MelBanksOptions)
    num_mel_bins: int = option(23, "number of triangular mel-frequency bins")
    low_freq: float = option(20.0, "low cutoff frequency of the mel bins")
    high_freq: float = option(0.0, "high cutoff frequency of the mel bins (<= 0: offset from "
                                   "Nyquist)")
    vtln_low: float = option(100.0, "low inflection point of the piecewise linear VTLN "
                                    "warping")
    vtln_high: float = option(-500.0, "high inflection point of the VTLN warping (< 0: offset "
                                      "from the high frequency)")
    debug_mel: bool = option(False, "accepted for compatibility (prints nothing here)")
    # energy
    energy_floor: float = option(0.0, "floor on the log-energy's energy (absolute; 0 = none)")
    raw_energy: bool = option(True, "compute energy before pre-emphasis and windowing")
    htk_compat: bool = option(False, "put energy / C0 last (not enough for HTK-compatible "
                                     "features)")

    def __post_init__(self):
        check(self)
        self.validate()

    @classmethod
    def kaldi_defaults(cls, kind: str, **overrides) -> "FeatureOptions":
        """Kaldi's defaults for ``kind`` ('mfcc' or 'fbank'), with overrides (checked)."""
        by_kind = {c.kind: c for c in FeatureOptions.__subclasses__() if c.kind}
        if kind not in by_kind:
            raise ConfigError(f"unknown feature type {kind!r} (one of: {', '.join(by_kind)})")
        return from_values(by_kind[kind], overrides)

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
        raise NotImplementedError

    def num_frames(self, num_samples: int) -> int:
        """Kaldi's NumFrames()."""
        shift, size = self.window_shift, self.window_size
        if self.snip_edges:
            return 0 if num_samples < size else 1 + (num_samples - size) // shift
        return (num_samples + shift // 2) // shift

    def validate(self) -> None:
        """ConfigError naming the option when the options do not fit together."""
        if type(self) is FeatureOptions:
            raise ConfigError("FeatureOptions is shared: use MfccOptions or FbankOptions")
        if self.sample_frequency <= 0:
            _bad(f"--sample-frequency={self.sample_frequency} must be > 0")
        if self.window_shift <= 0:
            _bad(f"--frame-shift={self.frame_shift} ms gives a shift of {self.window_shift} "
                 f"samples")
        if self.window_size < 2:
            _bad(f"--frame-length={self.frame_length} ms gives a window of "
                 f"{self.window_size} samples")
        if self.padded_window_size % 2:
            _bad(f"the FFT size {self.padded_window_size} is odd: use --round-to-power-of-two "
                 f"or change --frame-length")
        if self.window_type not in WINDOW_TYPES:
            _bad(f"--window-type={self.window_type}: expected one of {', '.join(WINDOW_TYPES)}")
        if not 0.0 <= self.preemphasis_coefficient <= 1.0:
            _bad(f"--preemphasis-coefficient={self.preemphasis_coefficient} not in [0, 1]")
        if self.num_mel_bins < 3:
            _bad(f"--num-mel-bins={self.num_mel_bins} (need at least 3)")
        nyquist = 0.5 * self.sample_frequency
        high = self.high_freq if self.high_freq > 0 else self.high_freq + nyquist
        if not (0 <= self.low_freq < nyquist and 0 < high <= nyquist and self.low_freq < high):
            _bad(f"--low-freq={self.low_freq} and --high-freq={self.high_freq} do not fit the "
                 f"Nyquist frequency {nyquist}")
        if self.dither < 0:
            _bad(f"--dither={self.dither} must be >= 0")
        if self.energy_floor < 0:
            _bad(f"--energy-floor={self.energy_floor} must be >= 0")


def _bad(msg: str):
    raise ConfigError(f"bad feature options: {msg}")


@dataclass(frozen=True)
class MfccOptions(FeatureOptions):
    """compute-mfcc-feats (Kaldi's MfccOptions)."""
    kind: ClassVar[str] = "mfcc"

    num_ceps: int = option(13, "number of cepstra in the MFCC (including C0)")
    use_energy: bool = option(True, "use energy (not C0) as the first coefficient")
    cepstral_lifter: float = option(22.0, "constant of the cepstral liftering (0 = none)")

    @property
    def feature_dim(self) -> int:
        return self.num_ceps

    def validate(self) -> None:
        super().validate()
        if not 1 <= self.num_ceps <= self.num_mel_bins:
            _bad(f"--num-ceps={self.num_ceps} must be in [1, --num-mel-bins="
                 f"{self.num_mel_bins}]")


@dataclass(frozen=True)
class FbankOptions(FeatureOptions):
    """compute-fbank-feats (Kaldi's FbankOptions)."""
    kind: ClassVar[str] = "fbank"

    use_energy: bool = option(False, "add an extra first dimension with the log energy")
    use_log_fbank: bool = option(True, "log filterbank energies (false: linear)")
    use_power: bool = option(True, "power spectrum (false: magnitude)")

    @property
    def feature_dim(self) -> int:
        return self.num_mel_bins + (1 if self.use_energy else 0)
