"""OpenFst/Kaldi text symbol tables (``words.txt``, ``phones.txt``): ``symbol integer`` lines."""
from __future__ import annotations

import os
import re
from typing import Dict, Iterable

from hybridasr.errors import FormatError


def read_symbol_ids(path: str) -> Dict[str, int]:
    """``symbol integer`` lines (split on spaces and tabs, as OpenFst reads them; blank lines
    skipped) -> {symbol: integer}; errors name the file and line."""
    if not os.path.isfile(path):
        raise FormatError(f"missing symbol table {path}")
    out: Dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            parts = [x for x in re.split(r"[ \t]+", line.strip(" \t\r\n")) if x]
            if not parts:
                continue
            if len(parts) != 2 or not parts[1].isdigit():
                raise FormatError(f"{path}:{lineno}: expected 'symbol integer', got "
                                  f"{line.rstrip()!r}")
            out[parts[0]] = int(parts[1])
    return out


def read_symbol_table(path: str) -> Dict[int, str]:
    """``symbol integer`` lines -> {integer: symbol}; errors name the file and line."""
    return {i: sym for sym, i in read_symbol_ids(path).items()}


def ids_to_text(symbols: Dict[int, str], ids: Iterable[int]) -> str:
    """Word ids as their symbols, space-separated (``<id N>`` for one the table lacks)."""
    return " ".join(symbols.get(i, f"<id {i}>") for i in ids)


# ------------------------------------------------------------------ phone lists
_DISAMBIG = re.compile(r"#\d+")


def phone_ids(path: str) -> Dict[str, int]:
    """The phones of a ``phones.txt``: {phone: id} without ``<eps>`` (id 0) and the
    disambiguation symbols (``#0``, ``#1``, ...)."""
    return {p: i for p, i in read_symbol_ids(path).items()
            if i != 0 and not _DISAMBIG.fullmatch(p)}


def check_phones_compatible(first: str, second: str, why: str = "") -> None:
    """Kaldi's ``utils/lang/check_phones_compatible.sh``: two ``phones.txt`` are the same,
    disambiguation symbols aside; otherwise a FormatError naming both and the first
    difference."""
    a, b = phone_ids(first), phone_ids(second)
    if a == b:
        return
    diff = next((p for p in sorted(set(a) | set(b), key=lambda p: (a.get(p, b.get(p)), p))
                 if a.get(p) != b.get(p)), None)
    detail = (f"phone {diff!r} is {a.get(diff, 'absent')} in the first, "
              f"{b.get(diff, 'absent')} in the second" if diff is not None else "")
    raise FormatError(f"{first} and {second} do not match ({len(a)} and {len(b)} phones; "
                      f"{detail}){': ' + why if why else ''}")


def check_model_phones(model: str, model_phones: Iterable[int], phones_txt: str,
                       why: str = "") -> None:
    """A model's phones (its topology's, e.g. ``TransitionModel.topology.phones``) are those
    of ``phones_txt``; otherwise a FormatError naming both files."""
    have = set(int(p) for p in model_phones)
    listed = phone_ids(phones_txt)
    ids = set(listed.values())
    if have == ids:
        return
    by_id = {i: p for p, i in listed.items()}
    missing = sorted(ids - have)
    extra = sorted(have - ids)
    what = []
    if missing:
        what.append(f"{len(missing)} of its phones are not in the model (e.g. "
                    f"{by_id[missing[0]]!r}, id {missing[0]})")
    if extra:
        what.append(f"the model has {len(extra)} phone ids it lacks (e.g. {extra[0]})")
    raise FormatError(f"{model} does not fit {phones_txt}: the model's topology has "
                      f"{len(have)} phones, the phone list {len(ids)}; {'; '.join(what)}"
                      f"{': ' + why if why else ''}")
