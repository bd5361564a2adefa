"""``utils/data/get_utt2dur.sh``: utterance durations of a data dir.

As Kaldi finds them: from ``segments`` (end - start); else from the audio of ``wav.scp`` (a
plain file: its header only; a ``cmd |`` pipe or an ``ark:offset`` entry: the audio is read);
else from ``feats.scp`` (frames x frame shift). Values are written as ``%g`` (6 significant
digits), as the feature programs write ``utt2dur``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, List, Tuple

from hybridasr.errors import FormatError
from hybridasr.datadir.files import data_file, has, read_table, segment_recordings
from hybridasr.kaldi.io.matrix_lengths import read_scp_lengths
from hybridasr.kaldi.io.table import write_lines
from hybridasr.options import option


@dataclass
class Utt2durOptions:
    frame_shift: float = option(0.01, "seconds per frame, when only feats.scp is there",
                                minimum=0.0)


def _wav_duration(spec: str) -> float:
    """Seconds of audio a wav.scp value names; headers only for plain files."""
    spec = spec.strip()
    if not spec.endswith("|") and os.path.isfile(spec):
        import soundfile as sf
        try:
            info = sf.info(spec)
            if info.frames > 0 and info.samplerate > 0:
                return info.frames / float(info.samplerate)
        except (RuntimeError, sf.LibsndfileError):
            pass  # an odd header: read the audio the way the feature programs do
    from hybridasr.features.audio import read_extended_filename

    samples, rate = read_extended_filename(spec)
    return samples.shape[0] / float(rate)


def utt2dur_entries(data: str, frame_shift: float = Utt2durOptions.frame_shift,
                    warn: Callable[[str], None] = lambda m: None) -> List[Tuple[str, float]]:
    """(utt, seconds) for every utterance of ``data``; raises FormatError naming the line."""
    if has(data, "segments"):
        segments = read_table(data_file(data, "segments"))
        segment_recordings(segments)  # checks the format
        out = []
        for e in segments.entries:
            _, start, end = e.value.split()[:3]
            if float(end) == -1:
                raise FormatError(f"{segments.where(e)}: end -1 (to the end of the recording) "
                                  f"is not supported here; give the end time")
            out.append((e.key, float(end) - float(start)))
        return out
    if has(data, "wav.scp"):
        return _wav_scp_durations(data)
    if has(data, "feats.scp"):
        warn(f"no wav.scp or segments in {data}: durations from feats.scp with frame shift "
             f"{frame_shift}")
        return [(u, n * frame_shift)
                for u, n in read_scp_lengths(data_file(data, "feats.scp")).items()]
    raise FormatError(f"{data}: needs segments, wav.scp or feats.scp to get durations")


def _wav_scp_durations(data: str) -> List[Tuple[str, float]]:
    """(recording, seconds) of each ``wav.scp`` entry: headers of plain files, pipes read."""
    wav = read_table(data_file(data, "wav.scp"))
    out = []
    for e in wav.entries:
        try:
            out.append((e.key, _wav_duration(e.value)))
        except OSError as err:
            raise FormatError(f"{wav.where(e)}: cannot read the audio of {e.key!r}: "
                              f"{err}") from None
    return out


def write_utt2dur(data: str, frame_shift: float = Utt2durOptions.frame_shift,
                  warn: Callable[[str], None] = lambda m: None) -> int:
    entries = utt2dur_entries(data, frame_shift, warn)
    write_lines(data_file(data, "utt2dur"), (f"{u} {d:g}" for u, d in entries))
    return len(entries)


def write_reco2dur(data: str) -> int:
    """``<data>/reco2dur`` (Kaldi's ``utils/data/get_reco2dur.sh``): without ``segments`` the
    recordings are the utterances (``utt2dur``'s values, made first when missing); with it,
    each ``wav.scp`` recording's audio length (headers of plain files, pipes read)."""
    if not has(data, "segments"):
        if not has(data, "utt2dur"):
            write_utt2dur(data)
        entries = [(e.key, e.value) for e in read_table(data_file(data, "utt2dur")).entries]
        write_lines(data_file(data, "reco2dur"), (f"{r} {d}" for r, d in entries))
        return len(entries)
    out = _wav_scp_durations(data)
    write_lines(data_file(data, "reco2dur"), (f"{r} {d:g}" for r, d in out))
    return len(out)
