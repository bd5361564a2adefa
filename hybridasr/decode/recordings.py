"""The recordings ``transcribe.py`` is given, and reading their audio: file paths (id: the name
without its extension), ``-`` (wav bytes on stdin, id ``stdin``) and the lines of a
``wav.scp`` (id: the key); a recording that cannot be used is a ``HybridAsrError`` naming it."""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Iterable, List, Optional

from hybridasr.decode.ctm import CtmWord
from hybridasr.errors import ConfigError, FormatError, HybridAsrError
from hybridasr.features.audio import Audio, decode_audio, read_extended_filename
from hybridasr.kaldi.io.table import iter_map_lines

log = logging.getLogger("hybridasr.decode.transcribe")

__all__ = ["Recording", "Result", "recordings", "read_audio"]


@dataclass
class Recording:
    key: str
    source: str               # what messages name: the file, the wav.scp line, stdin
    spec: Optional[str] = None  # a wav.scp value (path or "cmd |"); None: ``data``
    data: Optional[bytes] = None


@dataclass
class Result:
    key: str
    words: List[str] = field(default_factory=list)
    ctm: Optional[List[CtmWord]] = None
    error: Optional[str] = None


def recordings(paths: Iterable[str], wav_scp: str = "",
               stdin=None) -> List[Recording]:
    """The recordings named on the command line: files (id: the name without its extension),
    ``-`` (wav bytes on stdin, id ``stdin``), and each line of ``wav_scp`` (id: its key)."""
    out: List[Recording] = []
    for p in paths:
        if p == "-":
            data = (stdin or sys.stdin.buffer).read()
            out.append(Recording("stdin", "stdin", data=data))
        else:
            key = os.path.splitext(os.path.basename(p))[0]
            out.append(Recording(key, p, spec=p))
    if wav_scp:
        if not os.path.isfile(wav_scp):
            raise FormatError(f"no such wav.scp: {wav_scp}")
        for lineno, key, value in iter_map_lines(wav_scp):
            out.append(Recording(key, f"{wav_scp}:{lineno} ({value})", spec=value))
    seen = {}
    for r in out:
        if r.key in seen:
            raise ConfigError(f"two recordings with the id {r.key!r}: {seen[r.key]} and "
                              f"{r.source} (give them in a wav.scp with keys of their own)")
        seen[r.key] = r.source
    if not out:
        raise ConfigError("no audio given: file paths, - (stdin) or --wav-scp FILE")
    return out


def read_audio(rec: Recording) -> Audio:
    """Mono samples; HybridAsrError naming the file when it is empty or not audio."""
    if rec.data is not None:
        if not rec.data:
            raise HybridAsrError(f"{rec.source}: empty input (no bytes)")
        try:
            samples, rate = decode_audio(rec.data, rec.source)
        except OSError as e:
            raise HybridAsrError(f"{rec.source}: not audio ({e})") from None
    else:
        spec = rec.spec.strip()
        if not spec.endswith("|"):
            if not os.path.exists(spec):
                raise HybridAsrError(f"{rec.source}: no such file")
            if os.path.isfile(spec) and os.path.getsize(spec) == 0:
                raise HybridAsrError(f"{rec.source}: empty file")
        try:
            samples, rate = read_extended_filename(spec)
        except OSError as e:
            raise HybridAsrError(f"{rec.source}: not audio ({e})") from None
    if samples.shape[0] == 0:
        raise HybridAsrError(f"{rec.source}: the audio has no samples")
    if samples.shape[1] > 1:
        log.warning("%s: %d channels: using channel 0 (as compute-mfcc-feats --channel=-1)",
                    rec.source, samples.shape[1])
    return Audio(rec.key, samples[:, 0], rate)
