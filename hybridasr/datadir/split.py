"""``utils/split_data.sh``: split a data dir into ``<data>/split<N>/<n>/`` for N parallel jobs.

By speaker (the default): each speaker goes to one part, consecutive speakers together, and
speakers at the borders move between neighbouring parts while that makes the utterance counts
more even (the balancing of Kaldi's ``split_scp.pl --utt2spk``). ``--per-utt`` splits
``utt2spk`` into N runs of consecutive lines, sizes differing by at most one, into
``split<N>utt/``. Each part gets every table of the data dir filtered to its utterances,
speakers and recordings. As in Kaldi, nothing is rewritten when ``split<N>/1`` already holds
every file and none is older than its source.
"""
from __future__ import annotations

import os
from typing import List, Tuple

from hybridasr.errors import FormatError
from hybridasr.datadir.files import (PLAIN_FILES, RECO_FILES, SPK_FILES, UTT_FILES, data_file,
                                     read_utt2spk, subset_files)

Pairs = List[Tuple[str, str]]


def split_by_speaker(pairs: Pairs, num_parts: int, where: str = "utt2spk") -> List[Pairs]:
    """Kaldi's ``split_scp.pl --utt2spk`` partition of (utt, spk) pairs."""
    speakers: List[str] = []
    lines = {}
    for utt, spk in pairs:
        if not speakers or speakers[-1] != spk:
            if spk in lines:
                raise FormatError(f"{where}: the utterances of speaker {spk!r} are not "
                                  f"contiguous (utt2spk must be sorted by speaker too)")
            speakers.append(spk)
            lines[spk] = []
        lines[spk].append((utt, spk))
    if len(speakers) < num_parts:
        raise FormatError(f"{where}: refusing to split into {num_parts} parts: there are only "
                          f"{len(speakers)} speakers (use --per-utt, or fewer jobs)")
    count = {s: len(lines[s]) for s in speakers}
    parts: List[List[str]] = [[] for _ in range(num_parts)]
    for i, s in enumerate(speakers):
        parts[i * num_parts // len(speakers)].append(s)
    sizes = [sum(count[s] for s in p) for p in parts]
    changed = True
    while changed:
        changed = False
        for i in range(num_parts):
            if i + 1 < num_parts and parts[i]:  # move my last speaker to the next part?
                c = count[parts[i][-1]]
                if abs((sizes[i + 1] + c) - (sizes[i] - c)) < abs(sizes[i + 1] - sizes[i]):
                    parts[i + 1].insert(0, parts[i].pop())
                    sizes[i] -= c
                    sizes[i + 1] += c
                    changed = True
            if i > 0 and parts[i]:  # move my first speaker to the previous part?
                c = count[parts[i][0]]
                if abs((sizes[i] - c) - (sizes[i - 1] + c)) < abs(sizes[i] - sizes[i - 1]):
                    parts[i - 1].append(parts[i].pop(0))
                    sizes[i] -= c
                    sizes[i - 1] += c
                    changed = True
    for i, p in enumerate(parts):
        if not p:
            raise FormatError(f"{where}: split part {i + 1} of {num_parts} would be empty "
                              f"(too many parts for too few speakers)")
    return [[pair for s in p for pair in lines[s]] for p in parts]


def split_evenly(pairs: Pairs, num_parts: int, where: str = "utt2spk") -> List[Pairs]:
    """N runs of consecutive lines, the first ``len % N`` one longer (``split_scp.pl``)."""
    if len(pairs) < num_parts:
        raise FormatError(f"{where}: cannot split {len(pairs)} utterances into {num_parts} "
                          f"parts; use fewer jobs")
    base, extra = divmod(len(pairs), num_parts)
    out, pos = [], 0
    for i in range(num_parts):
        n = base + (1 if i < extra else 0)
        out.append(pairs[pos:pos + n])
        pos += n
    return out


def split_dir_name(data: str, num_parts: int, per_utt: bool = False) -> str:
    return os.path.join(data, f"split{num_parts}{'utt' if per_utt else ''}")


def is_up_to_date(data: str, num_parts: int, per_utt: bool = False) -> bool:
    """Kaldi's test: ``split<N>/1`` holds every file of the data dir, none older."""
    first = os.path.join(split_dir_name(data, num_parts, per_utt), "1")
    if not os.path.isdir(first):
        return False
    for name in UTT_FILES + SPK_FILES + RECO_FILES + ("wav.scp",) + PLAIN_FILES:
        src = data_file(data, name)
        if os.path.isfile(src):
            dst = os.path.join(first, name)
            if not os.path.isfile(dst) or os.path.getmtime(dst) < os.path.getmtime(src):
                return False
    return True


def split_data_dir(data: str, num_parts: int, per_utt: bool = False) -> Tuple[str, bool]:
    """Splits ``data``; returns (split dir, whether anything was written)."""
    if num_parts <= 0:
        raise FormatError(f"invalid number of parts {num_parts}")
    out = split_dir_name(data, num_parts, per_utt)
    if is_up_to_date(data, num_parts, per_utt):
        return out, False
    utt2spk = read_utt2spk(data)
    pairs = [(e.key, e.value) for e in utt2spk.entries]
    parts = (split_evenly(pairs, num_parts, utt2spk.path) if per_utt
             else split_by_speaker(pairs, num_parts, utt2spk.path))
    for n, part in enumerate(parts, start=1):
        subset_files(data, os.path.join(out, str(n)), part)
    return out, True
