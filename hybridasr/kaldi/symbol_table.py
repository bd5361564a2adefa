"""OpenFst/Kaldi text symbol tables (``words.txt``, ``phones.txt``): ``symbol integer`` lines."""
from __future__ import annotations

import os
from typing import Dict, Iterable

from hybridasr.errors import FormatError


def read_symbol_table(path: str) -> Dict[int, str]:
    """``symbol integer`` lines -> {integer: symbol}; errors name the file and line."""
    if not os.path.isfile(path):
        raise FormatError(f"missing symbol table {path}")
    out: Dict[int, str] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise FormatError(f"{path}:{lineno}: expected 'symbol integer', got "
                                  f"{line.rstrip()!r}")
            out[int(parts[1])] = parts[0]
    return out


def ids_to_text(symbols: Dict[int, str], ids: Iterable[int]) -> str:
    """Word ids as their symbols, space-separated (``<id N>`` for one the table lacks)."""
    return " ".join(symbols.get(i, f"<id {i}>") for i in ids)
