"""``utils/fix_data_dir.sh``: sort the tables and keep what every table agrees on.

As Kaldi's script: the old files go to ``<data>/.backup/``; every table is sorted with unique
keys; the utterances kept are those of ``utt2spk`` that also have ``feats.scp``, ``text``,
``segments`` (or ``wav.scp`` without segments), ``utt2lang`` lines and a positive ``utt2dur`` /
``utt2num_frames`` where those files exist; the speakers kept are those with utterances left
and ``cmvn.scp``/``spk2gender`` lines; the recordings those with segments and ``wav.scp``
lines. ``spk2utt`` is rebuilt from ``utt2spk``. Unlike Kaldi's script it also repairs what
would stop it: Windows line endings, empty lines, duplicate keys (the first line is kept).
"""
from __future__ import annotations

import os
import shutil
from typing import Callable, Dict, List, Optional, Set

from hybridasr.errors import FormatError
from hybridasr.datadir.files import (RECO_FILES, SPK_FILES, UTT_FILES, Table, data_file,
                                     has, read_table, sort_entries, utt2spk_to_spk2utt,
                                     write_entries)
from hybridasr.kaldi.io.table import write_lines

_ALL = UTT_FILES + SPK_FILES + RECO_FILES + ("wav.scp",)


def _positive(value: str) -> bool:
    try:
        return float(value) > 0
    except ValueError:
        return False


def fix_data_dir(data: str, utt_extra_files: Optional[List[str]] = None,
                 spk_extra_files: Optional[List[str]] = None,
                 log: Callable[[str], None] = print) -> int:
    """Fixes ``data`` in place; returns the number of utterances kept."""
    if not os.path.isdir(data):
        raise FormatError(f"no such directory {data}")
    if not has(data, "utt2spk"):
        raise FormatError(f"no such file {data_file(data, 'utt2spk')}")
    utt_files = list(UTT_FILES) + list(utt_extra_files or [])
    spk_files = list(SPK_FILES) + list(spk_extra_files or [])
    backup = os.path.join(data, ".backup")
    os.makedirs(backup, exist_ok=True)

    tables: Dict[str, Table] = {}
    for name in dict.fromkeys(_ALL + tuple(utt_files) + tuple(spk_files)):
        path = data_file(data, name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(backup, name))
            t = read_table(path, lenient=True)
            for note in t.notes:
                log(f"fix_data_dir.sh: {note}")
            before = [e.key for e in t.entries]
            t.entries = sort_entries(t.entries)
            if [e.key for e in t.entries] != before:
                log(f"fix_data_dir.sh: file {path} is not in sorted order or not unique, "
                    f"sorting it")
            tables[name] = t
    segments = "segments" in tables

    utt2spk = tables["utt2spk"]
    bad = [e for e in utt2spk.entries if len(e.value.split()) != 1]
    if bad:
        raise FormatError(f"{utt2spk.where(bad[0])}: expected '<utterance> <speaker>', got "
                          f"{bad[0].line()!r}")
    old_nutts = len(utt2spk)

    def keys(name: str) -> Set[str]:
        return set(tables[name].keys())

    # recordings: in wav.scp and used by segments
    recos: Optional[Set[str]] = None
    if segments:
        if "wav.scp" not in tables:
            raise FormatError(f"{data_file(data, 'segments')} exists but not "
                              f"{data_file(data, 'wav.scp')}")
        recos = {e.value.split()[0] for e in tables["segments"].entries if e.value}
        recos &= keys("wav.scp")

    # utterances: in utt2spk and every utterance table that restricts them
    utts = keys("utt2spk")
    restricting = ["feats.scp", "text", "utt2lang"] + (["segments"] if segments else ["wav.scp"])
    for name in restricting:
        if name in tables:
            utts &= keys(name)
    for name in ("utt2dur", "utt2num_frames"):
        if name in tables:
            utts &= {e.key for e in tables[name].entries if _positive(e.value)}
    if segments:
        utts &= {e.key for e in tables["segments"].entries
                 if e.value and e.value.split()[0] in recos}

    # speakers: with utterances left, and cmvn.scp / spk2gender lines
    speakers = {e.value for e in utt2spk.entries if e.key in utts}
    for name in ("cmvn.scp", "spk2gender"):
        if name in tables:
            speakers &= keys(name)
    utts = {e.key for e in utt2spk.entries if e.key in utts and e.value in speakers}
    if not utts:
        raise FormatError(f"fix_data_dir.sh: no utterances remained in {data}: not proceeding "
                          f"further")
    if segments:
        recos = {e.value.split()[0] for e in tables["segments"].entries if e.key in utts}

    def keep(name: str, allowed: Set[str]) -> None:
        t = tables[name]
        kept = [e for e in t.entries if e.key in allowed]
        if len(kept) != len(t):
            log(f"fix_data_dir.sh: filtered {t.path} from {len(t)} to {len(kept)} lines")
        write_entries(t.path, kept)

    for name in utt_files:
        if name in tables and name != "spk2utt":
            keep(name, utts)
    if segments:
        for name in ("wav.scp",) + RECO_FILES:
            if name in tables:
                keep(name, recos)
    else:
        for name in ("wav.scp",) + RECO_FILES:
            if name in tables:
                keep(name, utts)
    for name in spk_files:
        if name in tables and name != "spk2utt":
            keep(name, speakers)
    pairs = [(e.key, e.value) for e in utt2spk.entries if e.key in utts]
    spk2utt = utt2spk_to_spk2utt(pairs)
    write_lines(data_file(data, "spk2utt"), (f"{s} {' '.join(u)}" for s, u in spk2utt.items()))
    if len(utts) != old_nutts:
        log(f"fix_data_dir.sh: kept {len(utts)} utterances out of {old_nutts}")
    else:
        log(f"fix_data_dir.sh: kept all {old_nutts} utterances.")
    log(f"fix_data_dir.sh: old files are kept in {backup}")
    return len(utts)

