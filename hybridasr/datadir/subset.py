"""``utils/subset_data_dir.sh``, ``utils/copy_data_dir.sh`` (the tr/cv split: ``datadir_tr_cv``).

Which utterances a subset keeps, as Kaldi chooses them:

- ``<n>``: n utterances spread evenly over ``utt2spk`` (``subset_scp.pl``'s halving: the file
  is cut in two halves, each gets half of the count, recursively), so that not all come from
  one speaker;
- ``--first n`` / ``--last n``: the first / last n lines;
- ``--shortest n``: the n with the fewest frames (``utt2num_frames``, else the feature headers);
- ``--per-spk n``: up to n per speaker, spread over the speaker's utterances;
- ``--speakers n``: whole speakers in random order until n utterances are reached;
- ``--utt-list f`` / ``--spk-list f``: the utterances / speakers named in f (first field).
"""
from __future__ import annotations

import os
import random
import re
from typing import Callable, List, Optional, Sequence, Tuple

from hybridasr.errors import FormatError
from hybridasr.datadir.files import (data_file, has, read_id_list, read_table, read_utt2spk,
                                     subset_files, utt2spk_to_spk2utt)

Pairs = List[Tuple[str, str]]


def select_evenly(items: Sequence, n: int) -> list:
    """n of the items spread over the list (Kaldi's ``subset_scp.pl`` without options)."""
    if n > len(items):
        raise FormatError(f"cannot select {n} of {len(items)} utterances")
    out: list = []

    def pick(start: int, end: int, needed: int) -> None:
        if end - start == 1:
            if needed > 0:
                out.append(items[start])
            return
        half = (end - start) // 2
        pick(start, start + half, needed // 2)
        pick(start + half, end, needed - needed // 2)

    if items and n > 0:
        pick(0, len(items), n)
    return out


def select_per_speaker(pairs: Pairs, n: int) -> Pairs:
    """Up to n utterances of each speaker, every ``skip``-th (Kaldi's ``--per-spk``)."""
    out: Pairs = []
    for spk, utts in utt2spk_to_spk2utt(pairs).items():
        skip = 1
        while n * (skip + 1) <= len(utts):
            skip += 1
        out += [(u, spk) for u in utts[:n * skip:skip]]
    return out


def select_speakers(pairs: Pairs, n: int, seed: int = 0) -> Pairs:
    """Random whole speakers until at least n utterances (Kaldi's ``--speakers``)."""
    spk2utt = utt2spk_to_spk2utt(pairs)
    order = list(spk2utt)
    random.Random(seed).shuffle(order)
    chosen, total = set(), 0
    for spk in order:
        if total >= n:
            break
        chosen.add(spk)
        total += len(spk2utt[spk])
    return [p for p in pairs if p[1] in chosen]


def select_shortest(data: str, pairs: Pairs, n: int) -> Pairs:
    if n > len(pairs):
        raise FormatError(f"cannot select {n} of {len(pairs)} utterances")
    if has(data, "utt2num_frames"):
        lengths = {e.key: int(e.value) for e in read_table(data_file(data,
                                                                      "utt2num_frames")).entries}
    elif has(data, "feats.scp"):
        from hybridasr.kaldi.io.matrix_lengths import read_scp_lengths
        lengths = dict(read_scp_lengths(data_file(data, "feats.scp")))
    else:
        raise FormatError(f"--shortest needs {data_file(data, 'utt2num_frames')} or "
                          f"{data_file(data, 'feats.scp')}")
    missing = [u for u, _ in pairs if u not in lengths]
    if missing:
        raise FormatError(f"no length for utterance {missing[0]!r} ({len(missing)} missing)")
    keep = {u for u, _ in sorted(pairs, key=lambda p: (lengths[p[0]], p[0]))[:n]}
    return [p for p in pairs if p[0] in keep]


def select_subset(data: str, pairs: Pairs, mode: str, n: int = 0,
                  list_file: Optional[str] = None, seed: int = 0) -> Pairs:
    """The (utt, spk) pairs a subset keeps; ``mode`` as in the module doc."""
    if mode == "utt-list":
        keep = set(read_id_list(list_file))
        return [p for p in pairs if p[0] in keep]
    if mode == "spk-list":
        keep = set(read_id_list(list_file))
        return [p for p in pairs if p[1] in keep]
    if n <= 0:
        raise FormatError(f"the number of utterances must be positive, got {n}")
    if mode == "evenly":
        if n > len(pairs):
            raise FormatError(f"cannot subset to more utterances ({n}) than {data} has "
                              f"({len(pairs)})")
        return select_evenly(pairs, n)
    if mode in ("first", "last"):
        if n > len(pairs):
            raise FormatError(f"cannot subset to more utterances ({n}) than {data} has "
                              f"({len(pairs)})")
        return pairs[:n] if mode == "first" else pairs[len(pairs) - n:]
    if mode == "per-spk":
        return select_per_speaker(pairs, n)
    if mode == "speakers":
        return select_speakers(pairs, n, seed)
    if mode == "shortest":
        return select_shortest(data, pairs, n)
    raise ValueError(f"unknown subset mode {mode}")


def subset_data_dir(src: str, dst: str, mode: str, n: int = 0, list_file: Optional[str] = None,
                    seed: int = 0) -> Tuple[int, int]:
    """Writes the subset; returns (#utterances in src, #utterances in dst)."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise FormatError(f"source and destination are the same directory: {src}")
    pairs = [(e.key, e.value) for e in read_utt2spk(src).entries]
    chosen = select_subset(src, pairs, mode, n, list_file, seed)
    if not chosen:
        raise FormatError(f"the subset of {src} is empty")
    subset_files(src, dst, chosen)
    return len(pairs), len(chosen)


def _renamer(prefix: str, suffix: str) -> Optional[Callable[[str], str]]:
    if not prefix and not suffix:
        return None
    return lambda key: f"{prefix}{key}{suffix}"


def copy_data_dir(src: str, dst: str, utt_prefix: str = "", utt_suffix: str = "",
                  spk_prefix: str = "", spk_suffix: str = "") -> int:
    """Copies a data dir, renaming utterances and speakers (Kaldi's ``copy_data_dir.sh``)."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise FormatError(f"source and destination are the same directory: {src}")
    for s in (utt_prefix, utt_suffix, spk_prefix, spk_suffix):
        if re.search(r"\s", s):
            raise FormatError(f"a prefix or suffix may not hold whitespace: {s!r}")
    pairs = [(e.key, e.value) for e in read_utt2spk(src).entries]
    subset_files(src, dst, pairs, map_utt=_renamer(utt_prefix, utt_suffix),
                 map_spk=_renamer(spk_prefix, spk_suffix))
    return len(pairs)
