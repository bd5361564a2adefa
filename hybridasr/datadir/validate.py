"""``utils/validate_data_dir.sh``: is a data dir what Kaldi expects?

The checks of Kaldi's script: every table sorted on its key (``LC_ALL=C``) with unique keys,
no empty lines or Windows line endings; ``spk2utt`` is ``utt2spk`` inverted and ``utt2spk``
stays sorted when sorted on the speaker (speaker ids prefix utterance ids; ``--no-spk-sort``
turns this off); ``text``, ``feats.scp``, ``segments`` (or ``wav.scp`` without segments),
``utt2dur``, ``utt2num_frames`` hold exactly the utterances of ``utt2spk``; ``cmvn.scp`` and
``spk2gender`` exactly its speakers; ``wav.scp``/``reco2file_and_channel`` exactly the recordings
of ``segments``. The first problem raises FormatError naming the file and line.
"""
from __future__ import annotations

import os
import unicodedata
from typing import Dict, List

from hybridasr.errors import FormatError
from hybridasr.datadir.files import (Table, check_sorted_unique, data_file, has, read_table,
                                     read_utt2spk, segment_recordings, utt2spk_to_spk2utt)


def _read_sorted(data: str, name: str) -> Table:
    table = read_table(data_file(data, name))
    check_sorted_unique(table)
    return table


def _read_required(data: str, name: str, flag: str) -> Table:
    if not has(data, name):
        raise FormatError(f"no such file {data_file(data, name)} (if this is by design, "
                          f"pass {flag})")
    return _read_sorted(data, name)


def _same_keys(table: Table, ref: Table, what: str, ref_what: str = "") -> None:
    """``table`` and ``ref`` hold the same keys; the first difference names file and line."""
    ref_keys = set(ref.keys())
    for e in table.entries:
        if e.key not in ref_keys:
            raise FormatError(f"{table.where(e)}: {what} {e.key!r} is not in {ref.path}")
    keys = set(table.keys())
    for e in ref.entries:
        if e.key not in keys:
            raise FormatError(f"{ref.where(e)}: {what} {e.key!r} has no line in {table.path}"
                              + (f" ({ref_what})" if ref_what else ""))


def _check_spk2utt(utt2spk: Table, spk2utt: Table) -> None:
    spk_of = utt2spk.as_dict()
    listed = set()
    for e in spk2utt.entries:
        if not e.value:
            raise FormatError(f"{spk2utt.where(e)}: speaker {e.key!r} has no utterances")
        for utt in e.value.split():
            if utt not in spk_of:
                raise FormatError(f"{spk2utt.where(e)}: utterance {utt!r} of speaker {e.key!r} "
                                  f"is not in {utt2spk.path}")
            if spk_of[utt] != e.key:
                raise FormatError(f"{spk2utt.where(e)}: utterance {utt!r} is listed under "
                                  f"speaker {e.key!r} but {utt2spk.path} gives speaker "
                                  f"{spk_of[utt]!r}")
            if utt in listed:
                raise FormatError(f"{spk2utt.where(e)}: utterance {utt!r} is listed twice")
            listed.add(utt)
    for e in utt2spk.entries:
        if e.key not in listed:
            raise FormatError(f"{utt2spk.where(e)}: utterance {e.key!r} is not in "
                              f"{spk2utt.path} (regenerate it: utils/utt2spk_to_spk2utt.pl "
                              f"<utt2spk >spk2utt)")
    expected = utt2spk_to_spk2utt((e.key, e.value) for e in utt2spk.entries)
    for e in spk2utt.entries:
        if e.value.split() != expected[e.key]:
            raise FormatError(f"{spk2utt.where(e)}: the utterances of speaker {e.key!r} are not "
                              f"in the order of {utt2spk.path} (regenerate it: "
                              f"utils/utt2spk_to_spk2utt.pl <utt2spk >spk2utt)")


def _check_spk_sort(utt2spk: Table) -> None:
    prev = None
    for e in utt2spk.entries:
        cur = (e.value.encode(), e.line().encode())
        if prev is not None and cur < prev[0]:
            raise FormatError(
                f"{utt2spk.where(e)}: utt2spk is not in sorted order when sorted first on the "
                f"speaker ({e.line()!r} after {prev[1]!r}); make speaker ids prefixes of "
                f"utterance ids, or pass --no-spk-sort")
        prev = (cur, e.line())


def _check_text(text: Table, non_print: bool) -> None:
    if non_print:
        return
    for e in text.entries:
        for ch in e.value:
            if ch != "\t" and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs"):
                raise FormatError(f"{text.where(e)}: non-printable character U+{ord(ch):04X} "
                                  f"in the text of {e.key!r} (pass --non-print to allow)")


def _check_numbers(table: Table, kind, what: str) -> None:
    for e in table.entries:
        try:
            v = kind(e.value)
        except ValueError:
            raise FormatError(f"{table.where(e)}: expected '<utterance> <{what}>', got "
                              f"{e.line()!r}") from None
        if v <= 0:
            raise FormatError(f"{table.where(e)}: {what} of {e.key!r} must be positive, got "
                              f"{e.value}")


def validate_data_dir(data: str, no_feats: bool = False, no_text: bool = False,
                      no_wav: bool = False, no_spk_sort: bool = False,
                      non_print: bool = False) -> List[str]:
    """Raises FormatError at the first problem; returns notes (warnings) otherwise."""
    notes: List[str] = []
    if not os.path.isdir(data):
        raise FormatError(f"no such directory {data}")
    utt2spk = read_utt2spk(data)
    check_sorted_unique(utt2spk)
    if not len(utt2spk):
        raise FormatError(f"{utt2spk.path}: empty")
    if not has(data, "spk2utt"):
        raise FormatError(f"no such file {data_file(data, 'spk2utt')} (create it: "
                          f"utils/utt2spk_to_spk2utt.pl <utt2spk >spk2utt)")
    spk2utt = _read_sorted(data, "spk2utt")
    _check_spk2utt(utt2spk, spk2utt)
    if not no_spk_sort:
        _check_spk_sort(utt2spk)

    if not no_text:
        text = _read_required(data, "text", "--no-text")
        _same_keys(text, utt2spk, "utterance")
        _check_text(text, non_print)

    if not no_wav:
        wav = _read_required(data, "wav.scp", "--no-wav")
        for e in wav.entries:
            if not e.value:
                raise FormatError(f"{wav.where(e)}: no audio given for {e.key!r}")
        if has(data, "segments"):
            segments = _read_sorted(data, "segments")
            _same_keys(segments, utt2spk, "utterance")
            reco_of = segment_recordings(segments)
            wav_keys = set(wav.keys())
            for e in segments.entries:
                if reco_of[e.key] not in wav_keys:
                    raise FormatError(f"{segments.where(e)}: recording {reco_of[e.key]!r} is "
                                      f"not in {wav.path}")
            used = set(reco_of.values())
            for e in wav.entries:
                if e.key not in used:
                    raise FormatError(f"{wav.where(e)}: recording {e.key!r} has no line in "
                                      f"{segments.path} (recording ids of segments and wav.scp "
                                      f"differ; utils/fix_data_dir.sh removes it)")
            if has(data, "reco2file_and_channel"):
                r2fc = _read_sorted(data, "reco2file_and_channel")
                _same_keys(r2fc, wav, "recording")
        else:
            _same_keys(wav, utt2spk, "utterance")

    if not no_feats:
        feats = _read_required(data, "feats.scp", "--no-feats")
        _same_keys(feats, utt2spk, "utterance")
        for e in feats.entries:
            if not e.value:
                raise FormatError(f"{feats.where(e)}: no features given for {e.key!r}")

    if has(data, "cmvn.scp"):
        _same_keys(_read_sorted(data, "cmvn.scp"), spk2utt, "speaker")
    if has(data, "spk2gender"):
        s2g = _read_sorted(data, "spk2gender")
        _same_keys(s2g, spk2utt, "speaker")
        for e in s2g.entries:
            if e.value not in ("m", "f"):
                raise FormatError(f"{s2g.where(e)}: gender of {e.key!r} must be m or f, got "
                                  f"{e.value!r}")
    checks: Dict[str, object] = {"utt2dur": float, "utt2num_frames": int}
    for name in ("utt2dur", "utt2num_frames", "utt2uniq", "utt2lang", "utt2warp", "vad.scp"):
        if has(data, name):
            table = _read_sorted(data, name)
            _same_keys(table, utt2spk, "utterance")
            if name in checks:
                _check_numbers(table, checks[name], "duration" if name == "utt2dur"
                               else "number of frames")
    for name in ("spk2warp",):
        if has(data, name):
            _same_keys(_read_sorted(data, name), spk2utt, "speaker")
    return notes
