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
