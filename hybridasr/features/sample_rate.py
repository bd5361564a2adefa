"""The features' sample rate, read from the audio rather than from a conf that may be stale.

``survey_rates`` reads the rate of every recording of some data dirs' ``wav.scp``: from the
header alone where an entry is a plain file (a wav's ``fmt`` chunk, else libsndfile's header
reading), by decoding the audio (``audio.read_extended_filename``) for a bounded, evenly spread
sample of the other entries (commands, ``ark:offset``), whose others are counted as not read.
The features' rate is the most common one (a tie: the higher); recordings at other rates are
resampled, as Kaldi's ``--allow-downsample``/``--allow-upsample`` do.

``choose_feature_conf`` decides the conf the features are computed with: the Kaldi dir's
``conf/<kind>.conf`` where its rate (named, or Kaldi's default 16000 when it names none) is the
audio's, or where its own ``--allow-*`` options accept every recording; else (a stale rate) that
conf with the rate replaced; with no such conf, the recipe's at the audio's rate. Options are
added where the data has mixed rates. The reason comes as one line.
"""
from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from hybridasr.errors import ConfigError
from hybridasr.features.audio import read_extended_filename
from hybridasr.kaldi.conf import normalize_option_name, read_config_file
from hybridasr.kaldi.io.table import iter_map_lines
from hybridasr.options import to_bool

KALDI_DEFAULT_RATE = 16000  # compute-mfcc-feats/compute-fbank-feats --sample-frequency
_RATE = "sample-frequency"
_ALLOW = ("allow-downsample", "allow-upsample")


def wav_header_rate(path: str) -> Optional[int]:
    """The rate in a RIFF/RF64 wav's ``fmt`` chunk, reading only the header; None when the
    file is no wav (or its header is cut short)."""
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
            return None
        while True:
            chunk = f.read(8)
            if len(chunk) < 8:
                return None
            cid, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if cid == b"fmt ":
                body = f.read(8)
                return struct.unpack_from("<I", body, 4)[0] if len(body) == 8 else None
            if cid == b"data":  # no fmt chunk before the samples
                return None
            f.seek(size + (size & 1), os.SEEK_CUR)


def recording_rate(spec: str) -> int:
    """The sample rate of one ``wav.scp`` value; raises OSError naming why it cannot be read."""
    spec = spec.strip()
    if not spec.endswith("|") and os.path.isfile(spec):
        rate = wav_header_rate(spec)
        if rate:
            return rate
        import soundfile as sf

        try:
            return int(sf.info(spec).samplerate)
        except (sf.LibsndfileError, RuntimeError, TypeError):
            pass  # (a wav soundfile cannot parse: decoded below, as the features read it)
    return read_extended_filename(spec)[1]


@dataclass
class AudioRates:
    """The recordings' rates: ``counts`` (rate -> recordings), those that could not be read
    (``unreadable``, the first reason in ``first_error``) and those not read at all
    (``not_read``: commands beyond the bounded sample)."""
    counts: Dict[int, int] = field(default_factory=dict)
    unreadable: int = 0
    first_error: str = ""
    not_read: int = 0

    @property
    def num_read(self) -> int:
        return sum(self.counts.values())

    @property
    def rate(self) -> Optional[int]:
        """The most common rate (a tie: the higher); None when no recording was read."""
        if not self.counts:
            return None
        return max(self.counts, key=lambda r: (self.counts[r], r))

    def resampled(self, target: float) -> Tuple[Dict[int, int], Dict[int, int]]:
        """({rate: recordings} downsampled to ``target``, {rate: recordings} upsampled)."""
        down = {r: n for r, n in sorted(self.counts.items()) if r > target}
        up = {r: n for r, n in sorted(self.counts.items()) if r < target}
        return down, up


def survey_rates(wav_scps: Sequence[str], max_decoded: int = 20) -> AudioRates:
    """The rates of the recordings of ``wav_scps`` (a recording listed twice counts once):
    plain files from their headers, up to ``max_decoded`` others (evenly spread) decoded."""
    specs: List[str] = []
    seen = set()
    for scp in wav_scps:
        for _, _, rest in iter_map_lines(scp):
            spec = rest.strip()
            if spec and spec not in seen:
                seen.add(spec)
                specs.append(spec)
    plain = [s for s in specs if not s.endswith("|") and os.path.isfile(s)]
    others = [s for s in specs if s.endswith("|") or not os.path.isfile(s)]
    if len(others) > max_decoded:
        step = len(others) / float(max_decoded)
        chosen = [others[int(i * step)] for i in range(max_decoded)]
    else:
        chosen = others
    out = AudioRates(not_read=len(others) - len(chosen))
    counts: Counter = Counter()
    for spec in plain + chosen:
        try:
            counts[recording_rate(spec)] += 1
        except OSError as e:
            out.unreadable += 1
            out.first_error = out.first_error or str(e)
    out.counts = dict(counts)
    return out


@dataclass
class ConfRate:
    """What a feature conf says of the rate: ``named`` (None: it names none, so Kaldi's
    default), and whether it allows resampling down or up."""
    named: Optional[float]
    allow_downsample: bool = False
    allow_upsample: bool = False

    @property
    def rate(self) -> float:
        return KALDI_DEFAULT_RATE if self.named is None else self.named

    def accepts(self, audio_rate: float) -> bool:
        """Whether Kaldi computes features of audio at ``audio_rate`` with this conf."""
        return (audio_rate == self.rate or (audio_rate > self.rate and self.allow_downsample)
                or (audio_rate < self.rate and self.allow_upsample))


def read_conf_rate(path: str) -> ConfRate:
    """The rate options of a Kaldi feature conf (the last of each wins, as in Kaldi)."""
    out = ConfRate(None)
    for e in read_config_file(path):
        if e.name == _RATE:
            try:
                out.named = float(e.value or "")
            except ValueError:
                raise ConfigError(f"{path}:{e.lineno}: --sample-frequency={e.value} is not a "
                                  f"number") from None
        elif e.name in _ALLOW:
            flag = True if e.value is None else to_bool(e.value)
            setattr(out, e.name.replace("-", "_"), flag)
    return out


def conf_fits_audio(conf_path: Optional[str], audio: AudioRates) -> bool:
    """Whether the conf at ``conf_path`` (absent: Kaldi's defaults) computes features of every
    recording read: its rate is theirs, or its own --allow-* options resample them."""
    conf = read_conf_rate(conf_path) if conf_path and os.path.isfile(conf_path) else ConfRate(None)
    return all(conf.accepts(r) for r in audio.counts)


@dataclass
class FeatureConf:
    """The chosen conf: its text, its rate and the one-line reason (the text's header says
    where its options come from without naming paths, so that it stays the same wherever the
    recipe runs)."""
    text: str
    rate: float
    reason: str


def _rate_str(rate: float) -> str:
    return f"{rate:g}"


def _resampling_note(audio: AudioRates, target: float) -> str:
    down, up = audio.resampled(target)
    parts = [f"{n} at {_rate_str(r)} Hz downsampled" for r, n in down.items()]
    parts += [f"{n} at {_rate_str(r)} Hz upsampled" for r, n in up.items()]
    return "; " + ", ".join(parts) if parts else ""


def _audio_note(audio: AudioRates, rate: float) -> str:
    """``30 of 40 recordings; 10 at 8000 Hz upsampled`` (and those not read)."""
    note = f"{audio.counts.get(int(rate), 0)} of {audio.num_read} recordings"
    note += _resampling_note(audio, rate)
    if audio.unreadable:
        note += f"; {audio.unreadable} unreadable, e.g. {audio.first_error}"
    if audio.not_read:
        note += f"; {audio.not_read} read by a command not checked"
    return note


def _said(path: str, conf: ConfRate) -> str:
    if conf.named is None:
        return f"{path} says nothing: Kaldi's default {KALDI_DEFAULT_RATE}"
    return f"{path} says {_rate_str(conf.named)}"


def _high_freq_line(value: str, old_rate: float, new_rate: float) -> Optional[str]:
    """A positive --high-freq above the new Nyquist, kept as the same distance below it."""
    try:
        high = float(value)
    except ValueError:
        return None
    if high <= 0 or high <= new_rate / 2:
        return None
    offset = high - old_rate / 2
    return f"--high-freq={_rate_str(min(offset, 0.0))}  # was {value} at {_rate_str(old_rate)} Hz"


def _conf_text(base_lines: List[str], base_conf: ConfRate, rate: float, rate_note: str,
               audio: AudioRates, header: str) -> str:
    """``base_lines`` without their rate options, then the rate and the --allow-* the data
    needs (those the base sets being kept where they still accept every recording)."""
    down, up = audio.resampled(rate)
    same = rate == base_conf.rate
    allow = {"allow-downsample": bool(down) or (same and base_conf.allow_downsample),
             "allow-upsample": bool(up) or (same and base_conf.allow_upsample)}
    out = [f"# {header} (make_feat_config.py)"]
    for raw in base_lines:
        line = raw.split("#", 1)[0].strip()
        name, _, value = line.partition("=")
        name = normalize_option_name(name) if line.startswith("--") else ""
        if name == _RATE or name in _ALLOW:
            continue
        if name == "high-freq" and rate != base_conf.rate:
            changed = _high_freq_line(value, base_conf.rate, rate)
            if changed:
                out.append(changed)
                continue
        if raw.strip():
            out.append(raw.rstrip())
    out.append(f"--{_RATE}={_rate_str(rate)}  # {rate_note}")
    for name in _ALLOW:
        if allow[name]:
            n = sum((down if name == "allow-downsample" else up).values())
            out.append(f"--{name}=true  # {n} recording(s) resampled" if n else f"--{name}=true")
    return "\n".join(out) + "\n"


def choose_feature_conf(kind: str, audio: AudioRates, kaldi_conf: Optional[str],
                        recipe_conf: str) -> FeatureConf:
    """The conf of ``kind`` features for the recordings ``audio`` describes (see the module
    doc). ``kaldi_conf`` may name no file (the Kaldi dir has none)."""
    have_kaldi = bool(kaldi_conf) and os.path.isfile(kaldi_conf)
    base_path = kaldi_conf if have_kaldi else recipe_conf
    base_conf = read_conf_rate(base_path)
    with open(base_path, encoding="utf-8") as f:
        base_lines = f.read().splitlines()
    said = _said(base_path, base_conf)
    source = "the Kaldi dir's" if have_kaldi else "the recipe's"
    if audio.rate is None:  # nothing read: the conf's own rate, as Kaldi would take it
        rate = base_conf.rate
        why = f", e.g. {audio.first_error}" if audio.first_error else ""
        reason = (f"{kind} at {_rate_str(rate)} Hz: no recording's rate could be read "
                  f"({audio.unreadable} unreadable{why}); {said}")
        note, header = "the conf's", f"{source} {kind} conf: no recording's rate read"
    elif have_kaldi and base_conf.rate != audio.rate and conf_fits_audio(base_path, audio):
        rate = base_conf.rate  # resampled on purpose by the Kaldi dir's own options
        reason = (f"{kind} at {_rate_str(rate)} Hz: {said}, whose --allow-* options resample "
                  f"the audio ({_audio_note(audio, rate)})")
        note, header = "the conf's", f"{source} {kind} conf: its --allow-* resample the audio"
    else:
        rate = float(audio.rate)
        reason = f"{kind} at {_rate_str(rate)} Hz: the audio's rate ({_audio_note(audio, rate)}); "
        if not have_kaldi:
            reason += f"no {kaldi_conf}: {said}, the rate replaced" if kaldi_conf else \
                f"{said}, the rate replaced"
        elif base_conf.rate == rate:
            reason += said
        else:
            reason += f"{said}, stale: not used (its other options kept, the rate replaced)"
        note = "the audio's rate"
        header = f"{source} {kind} conf, " + (
            "at the audio's rate" if base_conf.rate == rate else
            f"its rate {_rate_str(base_conf.rate)} replaced by the audio's") + \
            f" ({audio.counts.get(int(rate), 0)} of {audio.num_read} recordings)"
    return FeatureConf(_conf_text(base_lines, base_conf, rate, note, audio, header), rate, reason)
