"""Kaldi "table" files: text maps (utt2spk, text, ...) and ark/scp archives.

``read_map`` reads any ``key value...`` file a Kaldi data dir holds, with errors that name the
file and line. ``ArkScpWriter`` writes a binary ark and its scp atomically: both are written
under temporary names and renamed at the end (ark first, then scp), so an interrupted job never
leaves a valid scp pointing into a half-written ark. The scp holds the ark's *final* path as it
was given (relative paths stay relative, as Kaldi recipes expect).
"""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np
from kaldiio.matio import write_array

from hybridasr.errors import FormatError
from hybridasr.utils.atomic import tmp_path_for


def iter_map_lines(path: str) -> Iterator[Tuple[int, str, str]]:
    """Yields (lineno, key, rest) for each line of a Kaldi map file; errors name file:line."""
    try:
        f = open(path, "r", encoding="utf-8", newline="")
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    with f:
        for lineno, line in enumerate(f, start=1):
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                raise FormatError(f"{path}:{lineno}: Windows line ending (CR LF); "
                                  f"convert the file with dos2unix")
            if not line.strip():
                raise FormatError(f"{path}:{lineno}: empty line")
            parts = line.split(None, 1)
            if line[0].isspace():
                raise FormatError(f"{path}:{lineno}: line starts with whitespace")
            yield lineno, parts[0], parts[1].strip() if len(parts) > 1 else ""


def read_map(path: str, allow_empty_value: bool = False,
             allow_duplicates: bool = False) -> "OrderedDict[str, str]":
    """Reads ``key rest-of-line`` into an ordered dict (file order)."""
    out: "OrderedDict[str, str]" = OrderedDict()
    for lineno, key, rest in iter_map_lines(path):
        if not rest and not allow_empty_value:
            raise FormatError(f"{path}:{lineno}: key {key!r} has no value")
        if key in out and not allow_duplicates:
            raise FormatError(f"{path}:{lineno}: duplicate key {key!r}")
        out[key] = rest
    return out


def read_int_map(path: str) -> "OrderedDict[str, int]":
    """Reads ``key int`` (utt2num_frames, ...)."""
    out: "OrderedDict[str, int]" = OrderedDict()
    for lineno, key, rest in iter_map_lines(path):
        try:
            out[key] = int(rest)
        except ValueError:
            raise FormatError(f"{path}:{lineno}: expected an integer after {key!r}, "
                              f"got {rest!r}") from None
    return out


def write_map(path: str, items, atomic: bool = True) -> None:
    """Writes ``key value`` lines (value str or list) in the given order."""
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(path, "w", encoding="utf-8") as f:
        for key, value in (items.items() if hasattr(items, "items") else items):
            if isinstance(value, (list, tuple)):
                value = " ".join(str(v) for v in value)
            f.write(f"{key} {value}\n")


class ArkScpWriter:
    """Writes (key, numpy array) pairs to ``ark`` and ``scp`` atomically.

    ``compression_method`` follows kaldiio (2 = Kaldi's kSpeechFeature, what
    ``copy-feats --compress=true`` writes). ``scp`` may be None (ark only).
    """

    def __init__(self, ark: str, scp: Optional[str] = None,
                 compression_method: Optional[int] = None):
        self.ark, self.scp = ark, scp
        self.compression_method = compression_method
        self._ark_tmp = tmp_path_for(ark)
        self._scp_tmp = tmp_path_for(scp) if scp else None
        self._fd = open(self._ark_tmp, "wb")
        self._scp_fd = open(self._scp_tmp, "w", encoding="utf-8") if scp else None
        self.num_written = 0

    def write(self, key: str, array: np.ndarray) -> None:
        if not key or any(c.isspace() for c in key):
            raise FormatError(f"{self.ark}: bad key {key!r} (empty or with whitespace)")
        self._fd.write((key + " ").encode("utf-8"))
        offset = self._fd.tell()
        write_array(self._fd, array, compression_method=self.compression_method)
        if self._scp_fd:
            self._scp_fd.write(f"{key} {self.ark}:{offset}\n")
        self.num_written += 1

    def close(self) -> None:
        """Renames the finished files into place."""
        if self._fd is None:
            return
        self._fd.flush()
        os.fsync(self._fd.fileno())
        self._fd.close()
        self._fd = None
        os.replace(self._ark_tmp, self.ark)
        if self._scp_fd:
            self._scp_fd.close()
            os.replace(self._scp_tmp, self.scp)

    def abort(self) -> None:
        """Removes the temporary files; the targets are left as they were."""
        for fd in (self._fd, self._scp_fd):
            if fd is not None:
                fd.close()
        self._fd = self._scp_fd = None
        for p in (self._ark_tmp, self._scp_tmp):
            if p and os.path.exists(p):
                os.unlink(p)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def parse_wspecifier(wspecifier: str) -> Tuple[List[str], Optional[str], Optional[str]]:
    """``ark,scp:a.ark,a.scp`` -> (["ark","scp"...opts], ark, scp). Only ark[,scp] forms."""
    if ":" not in wspecifier:
        raise FormatError(f"bad wspecifier {wspecifier!r}: expected e.g. ark,scp:f.ark,f.scp")
    kinds, paths = wspecifier.split(":", 1)
    opts = [k.strip() for k in kinds.split(",")]
    if "ark" not in opts:
        raise FormatError(f"bad wspecifier {wspecifier!r}: must write an ark")
    if "scp" in opts:
        if opts.index("ark") > opts.index("scp"):
            raise FormatError(f"bad wspecifier {wspecifier!r}: write 'ark,scp:<ark>,<scp>'")
        if paths.count(",") != 1:
            raise FormatError(f"bad wspecifier {wspecifier!r}: expected <ark>,<scp>")
        ark, scp = paths.split(",")
        return opts, ark, scp
    return opts, paths, None


def load_scp_lazy(path: str) -> Dict[str, object]:
    """Random access over an scp (kaldiio), keys in file order; nothing is read up front."""
    import kaldiio

    if not os.path.exists(path):
        raise FormatError(f"no such scp file: {path}")
    return kaldiio.load_scp(path)
