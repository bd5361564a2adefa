"""The feature types (``compute_<type>_feats.py``): MFCC and filterbank, one class each, and
their registry (``hybridasr.registry``), one line per type.

``FeatureExtractor`` (``hybridasr.features.extractor``) does what every type shares (framing,
dither, DC offset, energy, pre-emphasis, window, FFT, mel banks); a type does the rest: what
spectrum the mel banks take (``spectrum``) and how the mel energies become features
(``from_mel``). Its options are its ``Options`` (``hybridasr.features.options``), whose
``kind`` is the name it is registered under.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torchaudio.functional as taF

from hybridasr.features.options import FbankOptions, FeatureOptions, MfccOptions
from hybridasr.registry import Registry

EPS = float(np.finfo(np.float32).eps)  # Kaldi: std::numeric_limits<float>::epsilon()


class FeatureType:
    """The part of a feature type after the power spectrum; built once per extractor."""

    Options = FeatureOptions

    def __init__(self, opts: FeatureOptions):
        self.opts = opts

    def spectrum(self, power: torch.Tensor) -> torch.Tensor:
        """The spectrum the mel banks take (in place): the power spectrum by default."""
        return power

    def from_mel(self, mel: torch.Tensor, energy) -> torch.Tensor:
        """The features of the mel energies [frames, bins] and the log energy (None unless
        ``--use-energy``)."""
        raise NotImplementedError


class Mfcc(FeatureType):
    """compute-mfcc-feats: log mel energies, DCT, liftering; energy replaces C0."""

    Options = MfccOptions

    def __init__(self, opts: MfccOptions):
        super().__init__(opts)
        dct = taF.create_dct(opts.num_ceps, opts.num_mel_bins, "ortho")  # (bins, ceps)
        dct[:, 0] = math.sqrt(1.0 / opts.num_mel_bins)
        if opts.cepstral_lifter != 0.0:
            q = opts.cepstral_lifter
            lifter = 1.0 + 0.5 * q * np.sin(math.pi * np.arange(opts.num_ceps) / q)
            dct = dct * torch.from_numpy(lifter.astype(np.float32))[None, :]
        self.dct = dct.contiguous()

    def from_mel(self, mel: torch.Tensor, energy) -> torch.Tensor:
        o = self.opts
        feats = torch.matmul(mel.clamp_min_(EPS).log_(), self.dct)
        if o.use_energy:
            feats[:, 0] = energy
        if o.htk_compat:
            c0 = feats[:, :1] if o.use_energy else feats[:, :1] * math.sqrt(2.0)
            feats = torch.cat([feats[:, 1:], c0], dim=1)
        return feats


class Fbank(FeatureType):
    """compute-fbank-feats: (log) mel energies; energy an extra first (HTK: last) dimension."""

    Options = FbankOptions

    def spectrum(self, power: torch.Tensor) -> torch.Tensor:
        return power if self.opts.use_power else power.sqrt_()

    def from_mel(self, mel: torch.Tensor, energy) -> torch.Tensor:
        o = self.opts
        feats = mel.clamp_min_(EPS).log_() if o.use_log_fbank else mel
        if o.use_energy:
            e = energy[:, None]
            feats = torch.cat([feats, e] if o.htk_compat else [e, feats], dim=1)
        return feats


FEATURE_TYPES = Registry("feature type", "the feature type", one_command_line=False)
FEATURE_TYPES.add("mfcc", Mfcc)
FEATURE_TYPES.add("fbank", Fbank)


def feature_type(opts: FeatureOptions) -> FeatureType:
    """The feature type of ``opts`` (its ``kind``), built."""
    return FEATURE_TYPES.entry(opts.kind).build(opts)
