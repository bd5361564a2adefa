"""``utils/data/get_utt2dur.sh`` and ``get_utt2num_frames.sh``: utterance durations and lengths.

Durations, as Kaldi finds them: from ``segments`` (end - start); else from the audio of
``wav.scp`` (a plain file: its header only; a ``cmd |`` pipe or an ``ark:offset`` entry: the
audio is read); else from ``feats.scp`` (frames x frame shift). Values are written as ``%g``
(6 significant digits), as the feature programs write ``utt2dur``.

Frame counts come from the matrix headers of ``feats.scp`` (``hybridasr.data.lengths``), or
without features from ``utt2dur`` (``int((dur - frame_overlap) / frame_shift)``, Kaldi's
formula for 25 ms windows every 10 ms).
"""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Callable, List, Tuple

from hybridasr.errors import FormatError
from hybridasr.kaldi.datadir import (data_file, has, read_table, segment_recordings,
                                     write_lines)


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


def utt2dur_entries(data: str, frame_shift: float = 0.01,
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
        wav = read_table(data_file(data, "wav.scp"))
        out = []
        for e in wav.entries:
            try:
                out.append((e.key, _wav_duration(e.value)))
            except OSError as err:
                raise FormatError(f"{wav.where(e)}: cannot read the audio of {e.key!r}: "
                                  f"{err}") from None
        return out
    if has(data, "feats.scp"):
        from hybridasr.data.lengths import read_scp_lengths
        warn(f"no wav.scp or segments in {data}: durations from feats.scp with frame shift "
             f"{frame_shift}")
        return [(u, n * frame_shift)
                for u, n in read_scp_lengths(data_file(data, "feats.scp")).items()]
    raise FormatError(f"{data}: needs segments, wav.scp or feats.scp to get durations")


def write_utt2dur(data: str, frame_shift: float = 0.01,
                  warn: Callable[[str], None] = lambda m: None) -> int:
    entries = utt2dur_entries(data, frame_shift, warn)
    write_lines(data_file(data, "utt2dur"), (f"{u} {d:g}" for u, d in entries))
    return len(entries)


def num_frames_from_durations(utt2dur_path: str, frame_shift: float = 0.01,
                              frame_overlap: float = 0.015) -> "OrderedDict[str, int]":
    out: "OrderedDict[str, int]" = OrderedDict()
    table = read_table(utt2dur_path)
    for e in table.entries:
        try:
            dur = float(e.value)
        except ValueError:
            raise FormatError(f"{table.where(e)}: expected '<utterance> <seconds>', got "
                              f"{e.line()!r}") from None
        out[e.key] = int((dur - frame_overlap) / frame_shift)
    return out


def feat_lengths(rspecifier: str) -> "OrderedDict[str, int]":
    """Rows of every matrix of ``scp:feats.scp`` (headers only where possible) or
    ``ark:feats.ark`` (read whole), Kaldi's ``feat-to-len``."""
    from hybridasr.data.lengths import read_scp_lengths
    from hybridasr.errors import ConfigError
    from hybridasr.features.copy_table import iter_feature_table

    kinds = rspecifier.split(":", 1)[0].split(",") if ":" in rspecifier else []
    if "scp" in kinds:
        return read_scp_lengths(rspecifier.split(":", 1)[1])
    if "ark" in kinds:
        return OrderedDict((k, int(m.shape[0])) for k, m in iter_feature_table(rspecifier))
    raise ConfigError(f"bad rspecifier {rspecifier!r}: expected scp:<feats.scp> or ark:<ark>")


def feat_length_of_file(rxfilename: str) -> int:
    """Rows of the single matrix in a file (``feat-to-len <rxfilename>``)."""
    import kaldiio

    try:
        return int(kaldiio.load_mat(rxfilename).shape[0])
    except Exception as e:  # noqa: BLE001 - kaldiio raises many kinds
        raise FormatError(f"cannot read a matrix from {rxfilename}: {e}") from None
