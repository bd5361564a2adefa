"""Speed-perturbed copies of a data dir: Kaldi's ``utils/data/perturb_data_dir_speed.sh`` and
``perturb_data_dir_speed_3way.sh``, and the one home of the wav pipe they write.

A copy at factor F (Kaldi's conventions): utterance, speaker and, with ``segments``, recording
ids get the prefix ``spF-`` (``sp0.9-``; the factor as written); the 1.0 copy of a 3-way dir
keeps its names (``always_include_prefix``: ``sp1.0-``). ``wav.scp`` values are piped through
a speed change; ``segments`` times (``%.2f``, segments shorter than 0.01 s dropped),
``utt2dur`` and ``reco2dur`` (``%g``, as awk prints them) are divided by F; ``text``,
``utt2lang``, ``utt2spk``, ``spk2utt`` and ``spk2gender`` are carried under the new names, and
``utt2uniq`` maps every copy to its source utterance. ``feats.scp``, ``cmvn.scp``,
``utt2num_frames`` and the rest are not carried: the copy needs new features.

The pipe: where sox is on PATH (``use_sox``), Kaldi's own ``sox -t wav <file> -t wav - speed F |``
(``cmd | sox -t wav - -t wav - speed F |`` after a pipe); otherwise, and for ``ark:offset`` wavs
(Kaldi's ``wav-copy`` is not here), the toolkit's ``wav_speed_perturb.py --factor=F <in> - |``.
:func:`parse_speed_pipe` recognises the toolkit's form, so that the feature reader does the
change in its own process instead of starting a Python per utterance.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
from typing import Dict, List, Optional, Sequence, Tuple

from hybridasr.errors import FormatError
from hybridasr.datadir.files import (data_file, has, read_table, read_utt2spk, sort_entries,
                                     Entry, write_entries)
from hybridasr.kaldi.io.table import write_lines

TOOL = "wav_speed_perturb.py"
THREE_WAY = ("0.9", "1.0", "1.1")
_ARK_OFFSET = re.compile(r":[0-9]+$")


def check_factor(factor: str) -> str:
    try:
        ok = float(factor) > 0 and not re.search(r"\s", factor)
    except ValueError:
        ok = False
    if not ok:
        raise FormatError(f"the speed factor must be a positive number, not {factor!r}")
    return factor


def prefix_of(factor: str) -> str:
    """The id prefix of a copy at ``factor`` (Kaldi's ``sp<factor>-``)."""
    return f"sp{factor}-"


def speed_pipe(value: str, factor: str, use_sox: bool) -> str:
    """The ``wav.scp`` value that gives ``value``'s audio at ``factor`` times the speed."""
    value = re.sub(r"\|\s*$", "|", value.strip())
    if value.endswith("|"):
        inner = value[:-1].rstrip()
        if use_sox:
            return f"{inner} | sox -t wav - -t wav - speed {factor} |"
        return f"{inner} | {TOOL} --factor={factor} - - |"
    if use_sox and not _ARK_OFFSET.search(value):
        return f"sox -t wav {value} -t wav - speed {factor} |"
    return f"{TOOL} --factor={factor} {value} - |"


def parse_speed_pipe(value: str) -> Optional[Tuple[str, str]]:
    """``(inner extended filename, factor)`` for a value :func:`speed_pipe` wrote through the
    toolkit's tool (the inner one a file, an ``ark:offset`` or ``cmd |``); None otherwise."""
    v = value.strip()
    if not v.endswith("|"):
        return None
    cmd = v[:-1].rstrip()
    before, bar, last = cmd.rpartition("|")
    try:
        words = shlex.split(last)
    except ValueError:
        return None
    if len(words) != 4 or os.path.basename(words[0]) != TOOL or words[3] != "-" or \
            not words[1].startswith("--factor="):
        return None
    factor, src = words[1][len("--factor="):], words[2]
    if bar:
        if src != "-" or not before.strip():
            return None
        return before.strip() + " |", factor
    if src == "-":
        return None
    return src, factor


def _scaled(value: str, factor: str) -> str:
    return f"{float(value) / float(factor):g}"


def _copy(src: str, factor: str, prefix: str, use_sox: bool) -> Dict[str, List[Entry]]:
    """The tables of one copy of ``src`` (names -> entries, unsorted)."""
    ren = (lambda k: prefix + k) if prefix else (lambda k: k)
    out: Dict[str, List[Entry]] = {}
    utt2spk = read_utt2spk(src)
    out["utt2spk"] = [Entry(e.lineno, ren(e.key), ren(e.value)) for e in utt2spk.entries]
    uniq = read_table(data_file(src, "utt2uniq")).as_dict() if has(src, "utt2uniq") else {}
    out["utt2uniq"] = [Entry(e.lineno, ren(e.key), uniq.get(e.key, e.key))
                       for e in utt2spk.entries]
    for name in ("text", "utt2lang"):
        if has(src, name):
            out[name] = [Entry(e.lineno, ren(e.key), e.value)
                         for e in read_table(data_file(src, name)).entries]
    if has(src, "spk2gender"):
        out["spk2gender"] = [Entry(e.lineno, ren(e.key), e.value)
                             for e in read_table(data_file(src, "spk2gender")).entries]
    same = float(factor) == 1.0
    if has(src, "segments"):
        segs = []
        for e in read_table(data_file(src, "segments")).entries:
            f = e.value.split()
            s, t = float(f[1]) / float(factor), float(f[2]) / float(factor)
            if same:
                segs.append(Entry(e.lineno, ren(e.key), " ".join([ren(f[0])] + f[1:])))
            elif t > s + 0.01:
                segs.append(Entry(e.lineno, ren(e.key),
                                  " ".join([ren(f[0]), f"{s:.2f}", f"{t:.2f}"] + f[3:])))
        out["segments"] = segs
    if has(src, "wav.scp"):
        out["wav.scp"] = [Entry(e.lineno, ren(e.key),
                                e.value if same else speed_pipe(e.value, factor, use_sox))
                          for e in read_table(data_file(src, "wav.scp")).entries]
    if has(src, "reco2file_and_channel"):
        out["reco2file_and_channel"] = [
            Entry(e.lineno, ren(e.key), e.value)
            for e in read_table(data_file(src, "reco2file_and_channel")).entries]
    for name in ("utt2dur", "reco2dur"):
        if has(src, name):
            out[name] = [Entry(e.lineno, ren(e.key), e.value if same else
                               _scaled(e.value, factor))
                         for e in read_table(data_file(src, name)).entries]
    if "segments" in out:  # segments dropped as too short leave the utterance
        kept = {e.key for e in out["segments"]}
        for name in ("utt2spk", "utt2uniq", "text", "utt2lang", "utt2dur"):
            if name in out:
                out[name] = [e for e in out[name] if e.key in kept]
    return out


def perturb_data_dir_speed(src: str, dst: str, factors: Sequence[str],
                           use_sox: bool = False, always_include_prefix: bool = False) -> int:
    """Writes ``dst``: the copies of ``src`` at each factor, combined (a factor of 1.0 keeps
    the names unless ``always_include_prefix``). Needs ``src/utt2dur`` (and with segments
    ``reco2dur``): the caller computes them first, as Kaldi's script does. Returns the number
    of utterances written."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise FormatError(f"{src}: the source and destination must be different dirs")
    if has(dst, "feats.scp"):
        raise FormatError(f"{dst}/feats.scp already exists: refusing to overwrite it (delete "
                          f"it to make the dir again)")
    for name in ("utt2spk", "wav.scp", "utt2dur"):
        if not has(src, name):
            raise FormatError(f"{src}: no {name} (utils/data/get_utt2dur.sh makes utt2dur)")
    if has(src, "segments") and not has(src, "reco2dur"):
        raise FormatError(f"{src}: has segments but no reco2dur")
    tables: Dict[str, List[Entry]] = {}
    for factor in factors:
        check_factor(factor)
        prefix = "" if float(factor) == 1.0 and not always_include_prefix else prefix_of(factor)
        for name, entries in _copy(src, factor, prefix, use_sox).items():
            tables.setdefault(name, []).extend(entries)
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(dst):  # nothing of an earlier dir survives beside the new tables
        p = data_file(dst, name)
        if os.path.isfile(p) and name not in tables:
            os.unlink(p)
        elif os.path.isdir(p) and re.match(r"split\d+", name):
            shutil.rmtree(p)
    for name, entries in tables.items():
        keys = [e.key for e in entries]
        if len(set(keys)) != len(keys):
            raise FormatError(f"{dst}/{name}: the copies share ids (a source id already starts "
                              f"with a prefix?); use always_include_prefix")
        write_entries(data_file(dst, name), sort_entries(entries))
    spk2utt: Dict[str, List[str]] = {}
    for e in sort_entries(tables["utt2spk"]):
        spk2utt.setdefault(e.value, []).append(e.key)
    write_lines(data_file(dst, "spk2utt"),
                (f"{s} {' '.join(u)}" for s, u in sorted(spk2utt.items(),
                                                         key=lambda p: p[0].encode())))
    return len(tables["utt2spk"])
