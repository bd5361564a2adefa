"""Kaldi text archives of token sequences (``text``, ``*.tra``): ``key tok tok ...`` lines.

A line holding only a key is an empty sequence (what a decoder writes for an utterance it
could not decode). Errors name the file and line.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, List, Sequence, TextIO, Tuple

from hybridasr.errors import FormatError


def parse_text_archive(lines: Iterable[str], name: str) -> "OrderedDict[str, List[str]]":
    """Parses ``key tokens...`` lines (file order kept; a duplicate key is an error)."""
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\n")
        if line.endswith("\r"):
            raise FormatError(f"{name}:{lineno}: Windows line ending (CR LF)")
        if not line.strip():
            raise FormatError(f"{name}:{lineno}: empty line")
        if line[0].isspace():
            raise FormatError(f"{name}:{lineno}: line starts with whitespace")
        parts = line.split()
        key = parts[0]
        if key in out:
            raise FormatError(f"{name}:{lineno}: duplicate key {key!r}")
        out[key] = parts[1:]
    return out


def read_text_archive(path: str) -> "OrderedDict[str, List[str]]":
    """Reads a text archive from a file (``-`` is stdin)."""
    import sys

    if path == "-":
        return parse_text_archive(sys.stdin, "<stdin>")
    try:
        with open(path, encoding="utf-8") as f:
            return parse_text_archive(f, path)
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None


def write_text_archive(f: TextIO, items: Iterable[Tuple[str, Sequence]]) -> None:
    """Writes ``key tok tok `` lines the way Kaldi's ``ark,t:`` does (a space after every
    field, so an empty sequence is ``key `` )."""
    for key, toks in items:
        f.write(key + " " + "".join(f"{t} " for t in toks) + "\n")


def read_text_rspecifier(rspecifier: str) -> "OrderedDict[str, List[str]]":
    """``ark[,t,p,...]:path`` (``-`` = stdin) or a plain path; ``scp:`` is not supported."""
    kind, sep, path = rspecifier.partition(":")
    if not sep:
        return read_text_archive(rspecifier)
    opts = {o.strip() for o in kind.split(",")}
    if "ark" not in opts:
        raise FormatError(f"unsupported rspecifier {rspecifier!r}: expected ark:<file> "
                          f"(text archive of token sequences)")
    if path.endswith("|"):
        raise FormatError(f"rspecifier {rspecifier!r}: pipes are not supported here; "
                          f"pipe into '-' instead")
    return read_text_archive(path)
