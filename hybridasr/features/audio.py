"""Reading the audio of a Kaldi data dir: ``wav.scp`` (+ ``segments``), as Kaldi does.

A ``wav.scp`` value is a Kaldi extended filename: a path (relative to the cwd, the recipe dir),
a command whose stdout is the audio (``sox a.flac -t wav - |``, ``sph2pipe -f wav a.sph |``),
or ``ark-file:offset`` (a wav inside an archive). The command runs through
``hybridasr.kaldi.io.streams.InputStream``; a failed command skips the utterance, as Kaldi. 16-bit PCM wav, the
common case, is parsed directly (a data chunk whose length was never filled in, as in a wav
written to a pipe, runs to the end of the stream); everything else goes to soundfile
(libsndfile: 8/24/32-bit PCM, float wav, flac, ...), with kaldiio's reader as the fallback.

Samples come out on Kaldi's scale: Kaldi does not normalise PCM, so 16-bit samples are the
integers themselves (24/32-bit and 8-bit the same: raw integer values). Float wav (which Kaldi
cannot read) is scaled by 32768, so that a float copy of a 16-bit file gives the same features.

``segments`` lines are ``utt recording start end [channel]``; the cut follows Kaldi's
``extract-segments`` (samples ``int(start*rate) .. int(end*rate)``, ``end = -1`` to the end,
an overshoot past the end below ``max_overshoot`` seconds is truncated, longer ones and segments
shorter than ``min_segment_length`` are skipped). The last few recordings read are kept, so
a recording is read once for its segments when they are (nearly) consecutive, as in Kaldi's
sorted segments files.

Problems with one utterance (missing or unreadable file, failing command, empty audio, a segment
outside its recording) are reported as :class:`UtteranceError` items, never raised, so the
caller can skip the utterance and count it.
"""
from __future__ import annotations

import io
import os
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterator, Optional, Tuple, Union

import numpy as np
import soundfile as sf

from hybridasr.datadir.speed_perturb import parse_speed_pipe
from hybridasr.errors import FormatError, HybridAsrError
from hybridasr.features.speed import speed_perturb
from hybridasr.kaldi.io.streams import InputStream, split_offset
from hybridasr.kaldi.io.table import iter_map_lines, read_map

# soundfile subtype -> the factor that turns its float samples into Kaldi's values
_SCALE = {"PCM_16": 32768.0, "PCM_24": 8388608.0, "PCM_32": 2147483648.0, "PCM_U8": 128.0,
          "PCM_S8": 128.0, "FLOAT": 32768.0, "DOUBLE": 32768.0}


@dataclass
class Audio:
    """One utterance's samples (frames x channels float32, Kaldi scale) and rate."""
    key: str
    samples: np.ndarray
    rate: int

    @property
    def duration(self) -> float:
        return self.samples.shape[0] / float(self.rate)


@dataclass
class UtteranceError:
    """Why an utterance could not be read (the caller skips it with a warning)."""
    key: str
    reason: str


def _parse_pcm16_wav(raw: bytes) -> Optional[Tuple[np.ndarray, int]]:
    """The fast path for the common case, 16-bit PCM wav: (samples, rate), or None for
    anything else (left to soundfile). A data chunk whose length was never filled in (a wav
    written to a pipe) runs to the end of the bytes, as Kaldi reads it."""
    if len(raw) < 12 or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        return None
    pos, fmt = 12, None
    while pos + 8 <= len(raw):
        cid, size = raw[pos:pos + 4], struct.unpack_from("<I", raw, pos + 4)[0]
        body = pos + 8
        if cid == b"fmt ":
            if size < 16 or body + 16 > len(raw):  # a header cut short: soundfile says why
                return None
            tag, nch, rate, _, _, bits = struct.unpack_from("<HHIIHH", raw, body)
            # WAVE_FORMAT_EXTENSIBLE: the subformat's tag
            if tag == 0xFFFE and size >= 26 and body + 26 <= len(raw):
                tag = struct.unpack_from("<H", raw, body + 24)[0]
            fmt = (tag, nch, rate, bits)
        elif cid == b"data":
            if fmt is None or fmt[0] != 1 or fmt[3] != 16 or fmt[1] < 1:
                return None
            end = len(raw) if size in (0, 0xFFFFFFFF) or body + size > len(raw) else body + size
            n = (end - body) // (2 * fmt[1])
            x = np.frombuffer(raw, dtype="<i2", count=n * fmt[1], offset=body)
            return x.astype(np.float32).reshape(n, fmt[1]), int(fmt[2])
        pos = body + size + (size & 1)
    return None


def _decode(data: Union[str, bytes], what: str) -> Tuple[np.ndarray, int]:
    """(frames x channels float32 on Kaldi's scale, rate)."""
    if isinstance(data, str):
        with open(data, "rb") as fh:
            raw = fh.read()
    else:
        raw = data
    fast = _parse_pcm16_wav(raw)
    if fast is not None:
        return fast
    src = io.BytesIO(raw) if isinstance(data, str) else io.BytesIO(data)
    try:
        with sf.SoundFile(src) as f:
            scale = _SCALE.get(f.subtype, 32768.0)
            x = f.read(dtype="float32", always_2d=True)
            rate = f.samplerate
    except (sf.LibsndfileError, RuntimeError, TypeError) as e:
        if raw[:4] != b"RIFF":
            raise OSError(f"cannot decode audio from {what}: {e}") from None
        from kaldiio.wavio import read_wav  # tolerant of streamed wav headers (16-bit PCM)
        try:
            rate, arr = read_wav(io.BytesIO(raw))
        except Exception as e2:  # noqa: BLE001 - any decoding failure is a bad utterance
            raise OSError(f"cannot decode audio from {what}: {e2}") from None
        arr = arr.reshape(arr.shape[0], -1)
        if arr.dtype == np.uint8:
            return (arr.astype(np.float32) - 128.0), int(rate)
        return arr.astype(np.float32), int(rate)
    if scale != 1.0:
        x *= scale
    return x, int(rate)


def decode_audio(data: bytes, what: str) -> Tuple[np.ndarray, int]:
    """(frames x channels float32 on Kaldi's scale, rate) of a wav (or flac, ...) in memory."""
    return _decode(data, what)


def read_extended_filename(spec: str) -> Tuple[np.ndarray, int]:
    """Reads the audio a wav.scp value names. Raises OSError (with the reason) on failure.

    A speed-perturbed entry written by ``utils/data/perturb_data_dir_speed.sh`` without sox
    (``wav_speed_perturb.py --factor=F <in> - |``) is done in this process, with the same
    samples as the pipe: starting a Python per utterance costs more than the features."""
    spec = spec.strip()
    perturbed = parse_speed_pipe(spec) if spec.endswith("|") else None
    if perturbed is not None:
        inner, factor = perturbed
        samples, rate = read_extended_filename(inner)
        try:
            out = np.stack([speed_perturb(samples[:, c], factor)
                            for c in range(samples.shape[1])], axis=1)
        except HybridAsrError as e:  # a bad factor: this entry cannot be read
            raise OSError(str(e)) from None
        return out, rate
    if spec.endswith("|"):
        try:
            with InputStream(spec) as f:
                data = f.read()
        except FormatError as e:  # the command failed: this utterance is skipped
            raise OSError(str(e)) from None
        if not data:
            raise OSError(f"command {spec!r} wrote no audio")
        return _decode(data, f"the output of {spec!r}")
    if not os.path.exists(spec):
        ark = split_offset(spec)
        if ark and os.path.exists(ark[0]):
            import kaldiio

            try:
                rate, arr = kaldiio.load_mat(spec)
            except Exception as e:  # noqa: BLE001
                raise OSError(f"cannot read a wav from {spec}: {e}") from None
            arr = np.asarray(arr).reshape(len(arr), -1)
            return arr.astype(np.float32), int(rate)
        raise OSError(f"no such file: {spec}")
    return _decode(spec, spec)


def read_segments(path: str):
    """[(utt, recording, start, end, channel or None)] from a Kaldi segments file."""
    out = []
    for lineno, utt, rest in iter_map_lines(path):
        parts = rest.split()
        if len(parts) not in (3, 4):
            raise FormatError(f"{path}:{lineno}: expected 'utt recording start end [channel]'")
        try:
            start, end = float(parts[1]), float(parts[2])
            channel = int(parts[3]) if len(parts) == 4 else None
        except ValueError:
            raise FormatError(f"{path}:{lineno}: bad start/end/channel in {rest!r}") from None
        if (channel or 0) < 0:
            raise FormatError(f"{path}:{lineno}: negative channel in {rest!r}")
        out.append((utt, parts[0], start, end, channel))
    return out


def _pick_channel(samples: np.ndarray, channel: int) -> Union[np.ndarray, str]:
    """Kaldi's --channel: -1 expects mono (takes channel 0 of multi-channel audio with a
    warning, as compute-mfcc-feats does); otherwise that channel or an error string."""
    nch = samples.shape[1]
    if channel < 0:
        return samples[:, 0]
    if channel >= nch:
        return f"has {nch} channel(s) but channel {channel} was asked for"
    return samples[:, channel]


def iter_audio(wav_scp: str, segments: Optional[str] = None, channel: int = -1,
               min_segment_length: float = 0.1, max_overshoot: float = 0.5,
               warn=None, recording_cache: int = 4) -> Iterator[Union[Audio, UtteranceError]]:
    """Yields, in file order, an :class:`Audio` (mono, 1-D samples) or an
    :class:`UtteranceError` for each utterance of ``wav_scp`` (or of ``segments``)."""
    recordings = read_map(wav_scp)
    if segments is None:
        for key, spec in recordings.items():
            try:
                samples, rate = read_extended_filename(spec)
            except OSError as e:
                yield UtteranceError(key, str(e))
                continue
            if samples.shape[0] == 0:
                yield UtteranceError(key, f"empty recording ({spec})")
                continue
            if channel < 0 and samples.shape[1] > 1 and warn:
                warn(f"{key}: {samples.shape[1]} channels but --channel=-1 (expects mono); "
                     f"using channel 0")
            x = _pick_channel(samples, channel)
            if isinstance(x, str):
                yield UtteranceError(key, x)
                continue
            yield Audio(key, x, rate)
        return
    cache: "OrderedDict[str, object]" = OrderedDict()  # the last few recordings read
    for utt, rec, start, end, seg_channel in read_segments(segments):
        if start < 0 or (end != -1 and (end <= 0 or start >= end)):
            yield UtteranceError(utt, f"empty or invalid segment ({start}s to {end}s)")
            continue
        if rec not in recordings:
            yield UtteranceError(utt, f"recording {rec} is not in {wav_scp}")
            continue
        cached = cache.get(rec)
        if cached is None:
            try:
                cached = read_extended_filename(recordings[rec])
            except OSError as e:
                cached = str(e)
            cache[rec] = cached
            if len(cache) > recording_cache:
                cache.popitem(last=False)
        else:
            cache.move_to_end(rec)
        if isinstance(cached, str):
            yield UtteranceError(utt, f"recording {rec}: {cached}")
            continue
        samples, rate = cached
        n = samples.shape[0]
        if n == 0:
            yield UtteranceError(utt, f"recording {rec} is empty")
            continue
        s = int(start * rate)
        e = n if end == -1 else int(end * rate)
        if s >= n:
            yield UtteranceError(utt, f"segment starts at {start}s, beyond the end of "
                                      f"recording {rec} ({n / rate:.3f}s)")
            continue
        if e > n:
            if e >= n + int(max_overshoot * rate):
                yield UtteranceError(utt, f"segment ends at {end}s, beyond the end of "
                                          f"recording {rec} ({n / rate:.3f}s)")
                continue
            e = n
        if e <= s + int(min_segment_length * rate):
            yield UtteranceError(utt, f"segment shorter than {min_segment_length}s")
            continue
        ch = channel if seg_channel is None else seg_channel
        if seg_channel is None and samples.shape[1] > 1 and channel < 0 and warn:
            # Kaldi's extract-segments stops here; we read channel 0 as compute-mfcc-feats
            # --channel=-1 does with a multi-channel wav.scp entry, and say so
            warn(f"{utt}: recording {rec} has {samples.shape[1]} channels and the segments "
                 f"file gives none: using channel 0 (give the channel as a 5th column or "
                 f"--channel)")
        x = _pick_channel(samples, ch)
        if isinstance(x, str):
            yield UtteranceError(utt, f"recording {rec} {x}")
            continue
        yield Audio(utt, x[s:e], rate)
