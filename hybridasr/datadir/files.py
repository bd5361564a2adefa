"""Kaldi data directories: the files, how they are keyed, reading, filtering and writing them.

A data dir (``data/train``) holds text tables keyed by utterance (``utt2spk``, ``text``,
``feats.scp``, ``segments``, ``utt2dur``, ``utt2num_frames``, ...), by speaker (``spk2utt``,
``cmvn.scp``, ``spk2gender``) and by recording (``wav.scp`` when there is a ``segments`` file,
``reco2file_and_channel``, ``reco2dur``); without ``segments`` ``wav.scp`` is keyed by
utterance. Every table is sorted on its key with ``LC_ALL=C`` (byte order; Python's ``str``
order is the same for UTF-8) and ``utt2spk`` is the primary table: ``spk2utt`` is derived from it.

The operations of Kaldi's ``utils/*`` live in sibling modules: ``datadir_validate``,
``datadir_fix``, ``datadir_split``, ``datadir_subset``, ``datadir_tr_cv``; the lines are read
and written by ``hybridasr.kaldi.io.table``.
"""
from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.table import iter_map_lines, write_lines

# Tables keyed by utterance (wav.scp joins them when there is no segments file).
UTT_FILES = ("utt2spk", "text", "feats.scp", "segments", "utt2dur", "utt2num_frames",
             "utt2uniq", "utt2lang", "utt2warp", "vad.scp")
# Tables keyed by speaker.
SPK_FILES = ("spk2utt", "cmvn.scp", "spk2gender", "spk2warp")
# Tables keyed by recording (wav.scp joins them when there is a segments file).
RECO_FILES = ("reco2file_and_channel", "reco2dur")
# Copied as they are.
PLAIN_FILES = ("frame_shift",)


@dataclass
class Entry:
    lineno: int
    key: str
    value: str  # the rest of the line, stripped ("" when there is none)

    def line(self) -> str:
        return f"{self.key} {self.value}" if self.value else self.key


@dataclass
class Table:
    """One key-value table of a data dir, in file order, with line numbers for messages."""
    path: str
    entries: List[Entry] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # what lenient reading dropped or repaired

    def keys(self) -> List[str]:
        return [e.key for e in self.entries]

    def as_dict(self) -> "OrderedDict[str, str]":
        return OrderedDict((e.key, e.value) for e in self.entries)

    def where(self, e: Entry) -> str:
        return f"{self.path}:{e.lineno}"

    def __len__(self) -> int:
        return len(self.entries)


def read_table(path: str, lenient: bool = False) -> Table:
    """Reads ``key rest-of-line`` lines.

    Strict (the default): a Windows line ending, an empty line, a line starting with
    whitespace or bytes that are not UTF-8 raise FormatError naming file and line (duplicates
    and order are :func:`check_sorted_unique`'s job). Lenient (for fixing): such lines are
    repaired or dropped, duplicate keys keep their first line, and ``notes`` says what happened.
    """
    table = Table(path)
    seen: Set[str] = set()
    for lineno, key, value in iter_map_lines(path, lenient, table.notes):
        if lenient:
            if key in seen:
                table.notes.append(f"{path}:{lineno}: duplicate key {key!r} removed (the first "
                                   f"line is kept)")
                continue
            seen.add(key)
        table.entries.append(Entry(lineno, key, value))
    return table


def check_sorted_unique(table: Table) -> None:
    """Raises FormatError at the first key out of ``LC_ALL=C`` order or repeated."""
    prev: Optional[Entry] = None
    for e in table.entries:
        if prev is not None:
            if e.key == prev.key:
                raise FormatError(f"{table.where(e)}: duplicate key {e.key!r} (also on line "
                                  f"{prev.lineno})")
            if e.key < prev.key:
                raise FormatError(f"{table.where(e)}: not sorted: key {e.key!r} comes after "
                                  f"{prev.key!r} (line {prev.lineno}); sort with "
                                  f"'LC_ALL=C sort -k1,1' or use utils/fix_data_dir.sh")
        prev = e


def sort_entries(entries: Iterable[Entry]) -> List[Entry]:
    return sorted(entries, key=lambda e: e.key.encode("utf-8"))


def write_entries(path: str, entries: Iterable[Entry]) -> None:
    write_lines(path, (e.line() for e in entries))


def utt2spk_to_spk2utt(pairs: Iterable[Tuple[str, str]]) -> "OrderedDict[str, List[str]]":
    """Speakers in order of first appearance, each with its utterances in order (Kaldi's
    ``utt2spk_to_spk2utt.pl``)."""
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for utt, spk in pairs:
        out.setdefault(spk, []).append(utt)
    return out


def spk2utt_to_utt2spk(pairs: Iterable[Tuple[str, Sequence[str]]]) -> List[Tuple[str, str]]:
    """``spk u1 u2`` -> ``u1 spk``, ``u2 spk`` in order (Kaldi's ``spk2utt_to_utt2spk.pl``)."""
    return [(utt, spk) for spk, utts in pairs for utt in utts]


def data_file(data: str, name: str) -> str:
    return os.path.join(data, name)


def has(data: str, name: str) -> bool:
    return os.path.isfile(data_file(data, name))


def read_utt2spk(data: str, lenient: bool = False) -> Table:
    path = data_file(data, "utt2spk")
    if not os.path.isfile(path):
        raise FormatError(f"no such file {path}")
    table = read_table(path, lenient=lenient)
    for e in table.entries:
        if len(e.value.split()) != 1:
            raise FormatError(f"{table.where(e)}: expected '<utterance> <speaker>', got "
                              f"{e.line()!r}")
    return table


def segment_recordings(segments: Table) -> Dict[str, str]:
    """utterance -> recording, checking the ``utt reco start end [channel]`` format."""
    out = {}
    for e in segments.entries:
        f = e.value.split()
        if len(f) not in (3, 4):
            raise FormatError(f"{segments.where(e)}: expected '<utterance> <recording> <start> "
                              f"<end>', got {e.line()!r}")
        try:
            start, end = float(f[1]), float(f[2])
        except ValueError:
            raise FormatError(f"{segments.where(e)}: start and end must be numbers, got "
                              f"{e.line()!r}") from None
        if start < 0 or (end <= start and end != -1):
            raise FormatError(f"{segments.where(e)}: bad segment times {f[1]} {f[2]} "
                              f"(need 0 <= start < end, or end = -1)")
        out[e.key] = f[0]
    return out


def subset_files(src: str, dst: str, utt2spk: Sequence[Tuple[str, str]],
                 map_utt: Optional[Callable[[str], str]] = None,
                 map_spk: Optional[Callable[[str], str]] = None) -> None:
    """Writes the data dir ``dst`` holding the utterances of ``utt2spk`` (pairs from ``src``):
    every table of ``src`` filtered to those utterances, their speakers and their recordings
    (Kaldi's filtering in ``subset_data_dir.sh``/``split_data.sh``). ``map_utt``/``map_spk``
    rename keys (``copy_data_dir.sh``'s prefixes); the output is sorted (``LC_ALL=C``)."""
    mu = map_utt or (lambda u: u)
    ms = map_spk or (lambda s: s)
    os.makedirs(dst, exist_ok=True)
    utts = {u for u, _ in utt2spk}
    new_pairs = sorted(((mu(u), ms(s)) for u, s in utt2spk), key=lambda p: p[0].encode())
    write_lines(data_file(dst, "utt2spk"), (f"{u} {s}" for u, s in new_pairs))
    spk2utt = utt2spk_to_spk2utt(new_pairs)
    write_lines(data_file(dst, "spk2utt"), (f"{s} {' '.join(us)}" for s, us in spk2utt.items()))
    speakers = {s for _, s in utt2spk}

    def copy_filtered(name: str, keep: Set[str], rename: Callable[[str], str]) -> None:
        if not has(src, name):
            _remove(data_file(dst, name))
            return
        table = read_table(data_file(src, name), lenient=True)
        kept = [Entry(e.lineno, rename(e.key), e.value) for e in table.entries if e.key in keep]
        write_entries(data_file(dst, name), sort_entries(kept))

    segments = has(src, "segments")
    for name in UTT_FILES:
        if name not in ("utt2spk",):
            copy_filtered(name, utts, mu)
    for name in SPK_FILES:
        if name != "spk2utt":
            copy_filtered(name, speakers, ms)
    if segments:
        seg = read_table(data_file(src, "segments"), lenient=True)
        recos = {e.value.split()[0] for e in seg.entries if e.key in utts and e.value}
        for name in ("wav.scp",) + RECO_FILES:
            copy_filtered(name, recos, lambda r: r)
    else:
        copy_filtered("wav.scp", utts, mu)
        for name in RECO_FILES:
            copy_filtered(name, utts, mu)
    for name in PLAIN_FILES:
        if has(src, name):
            shutil.copyfile(data_file(src, name), data_file(dst, name))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_id_list(path: str) -> List[str]:
    """The first field of each line of a list file (``filter_scp.pl``'s id list)."""
    return [e.key for e in read_table(path, lenient=True).entries]
