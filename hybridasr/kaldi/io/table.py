"""Kaldi text tables: ``key value...`` lines (``utt2spk``, ``text``, ``feats.scp``, ``*.tra``).

``iter_map_lines`` is the one line reader: errors name the file and line (a Windows line
ending, an empty line, a line starting with whitespace, bytes that are not UTF-8); with
``lenient`` such lines are repaired or dropped and ``notes`` says so (``fix_data_dir.sh``).
``read_map``/``read_int_map`` read maps; ``read_text_archive`` token sequences (``text``,
``hyp.tra``: a line holding only a key is an empty sequence, what a decoder writes for an
utterance it could not decode). ``write_map`` writes a map atomically and durably
(``hybridasr.kaldi.io.table_writer``); ``write_lines`` any text lines.
"""
from __future__ import annotations

from collections import OrderedDict
import os
from typing import IO, Iterable, Iterator, List, Optional, Tuple

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.specifier import SpecifierError, WSpecifier, parse_rspecifier
from hybridasr.kaldi.io.streams import InputStream, label
from hybridasr.kaldi.io.table_writer import TextTableWriter
from hybridasr.utils.atomic import atomic_open


def iter_lines(f: IO[bytes], name: str, lenient: bool = False,
               notes: Optional[List[str]] = None) -> Iterator[Tuple[int, str, str]]:
    """Yields (lineno, key, rest) for each line of a binary stream; ``name`` is for messages."""
    for lineno, raw in enumerate(f, start=1):
        where = f"{name}:{lineno}"
        raw = raw[:-1] if raw.endswith(b"\n") else raw
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            if not lenient:
                raise FormatError(f"{where}: not valid UTF-8") from None
            line = raw.decode("utf-8", errors="replace")
            _note(notes, f"{where}: not valid UTF-8 (kept with replacement characters)")
        if line.endswith("\r"):
            if not lenient:
                raise FormatError(f"{where}: Windows line ending (CR LF); convert the file "
                                  f"with dos2unix (or utils/fix_data_dir.sh for a data dir)")
            line = line.rstrip("\r")
            if notes is not None and not any("Windows" in n for n in notes):
                notes.append(f"{name}: Windows line endings removed")
        if not line.strip():
            if not lenient:
                raise FormatError(f"{where}: empty line")
            _note(notes, f"{where}: empty line removed")
            continue
        if line[0].isspace():
            if not lenient:
                raise FormatError(f"{where}: line starts with whitespace")
            line = line.lstrip()
        parts = line.split(None, 1)
        yield lineno, parts[0], parts[1].strip() if len(parts) > 1 else ""


def _note(notes: Optional[List[str]], msg: str) -> None:
    if notes is not None:
        notes.append(msg)


def iter_map_lines(path: str, lenient: bool = False,
                   notes: Optional[List[str]] = None) -> Iterator[Tuple[int, str, str]]:
    """Yields (lineno, key, rest) for each line of a Kaldi map file; errors name file:line."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    with f:
        yield from iter_lines(f, path, lenient, notes)


def read_map(path: str, allow_empty_value: bool = False,
             allow_duplicates: bool = False) -> "OrderedDict[str, str]":
    """Reads ``key rest-of-line`` into an ordered dict (file order)."""
    out: "OrderedDict[str, str]" = OrderedDict()
    for lineno, key, rest in iter_map_lines(path):
        if not rest and not allow_empty_value:
            raise FormatError(f"{path}:{lineno}: key {key!r} has no value")
        if key in out and not allow_duplicates:
            raise FormatError(f"{path}:{lineno}: duplicate key {key!r}")
        out[key] = rest
    return out


def read_int_map(path: str) -> "OrderedDict[str, int]":
    """Reads ``key int`` (utt2num_frames, ...)."""
    out: "OrderedDict[str, int]" = OrderedDict()
    for lineno, key, rest in iter_map_lines(path):
        try:
            out[key] = int(rest)
        except ValueError:
            raise FormatError(f"{path}:{lineno}: expected an integer after {key!r}, "
                              f"got {rest!r}") from None
    return out


# ------------------------------------------------------------------ token sequences
def parse_text_archive(lines: Iterable[str], name: str) -> "OrderedDict[str, List[str]]":
    """Parses ``key tokens...`` lines (file order kept; a duplicate key is an error)."""
    return _token_table(iter_lines((ln.encode("utf-8") for ln in lines), name), name)


def _token_table(rows: Iterable[Tuple[int, str, str]], name: str):
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for lineno, key, rest in rows:
        if key in out:
            raise FormatError(f"{name}:{lineno}: duplicate key {key!r}")
        out[key] = rest.split()
    return out


def read_text_archive(rxfilename: str) -> "OrderedDict[str, List[str]]":
    """Reads a text archive of token sequences from a file, ``-`` (stdin) or ``cmd |``."""
    name = "<stdin>" if rxfilename == "-" else label(rxfilename)
    with InputStream(rxfilename) as f:
        return _token_table(iter_lines(f.f, name), name)


def read_text_rspecifier(rspecifier: str) -> "OrderedDict[str, List[str]]":
    """``ark[,t,s,cs,...]:<rxfilename>`` or a plain path; ``scp:`` is refused."""
    spec = parse_rspecifier(rspecifier, plain_ok=True)
    if spec.kind != "ark":
        raise SpecifierError(f"unsupported rspecifier {rspecifier!r}: expected ark:<file> "
                             f"(text archive of token sequences)")
    return read_text_archive(spec.rxfilename)


# ------------------------------------------------------------------ writing
def write_lines(path: str, lines: Iterable[str]) -> None:
    """Writes lines (no newline in them) to a file, atomically and durably."""
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def write_map(path: str, items) -> None:
    """Writes ``key value`` lines (value str or list) in the given order, atomically and
    durably."""
    with TextTableWriter(WSpecifier(path, None, text=True)) as w:
        for key, value in (items.items() if hasattr(items, "items") else items):
            w.write(key, value)


def read_int_lists(path: str) -> List[List[int]]:
    """A file of integer lines (Kaldi's ``ReadIntegerVectorVectorSimple``: ``phones/sets.int``,
    ``extra_questions.int``), one list per non-empty line."""
    if not os.path.isfile(path):
        raise FormatError(f"missing file {path}")
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            try:
                out.append([int(w) for w in words])
            except ValueError:
                raise FormatError(f"{path}:{n}: expected integers, got {line.strip()[:60]!r}") \
                    from None
    return out


def read_csl(path: str) -> List[int]:
    """A colon-separated list of integers on one line (a lang dir's ``phones/silence.csl``,
    ``nonsilence.csl``)."""
    if not os.path.isfile(path):
        raise FormatError(f"missing file {path}")
    with open(path, encoding="utf-8") as f:
        return parse_csl(f.read(), path)


def parse_csl(text: str, where: str) -> List[int]:
    """``1:2:3`` as integers (empty: none); a FormatError naming ``where`` otherwise."""
    text = text.strip()
    try:
        return [int(x) for x in text.split(":")] if text else []
    except ValueError:
        raise FormatError(f"{where}: expected colon-separated integers, got {text[:60]!r}") \
            from None


def read_int_list(path: str, missing_ok: bool = False) -> List[int]:
    """A file of whitespace-separated integers (Kaldi's ``ReadIntegerVectorSimple``:
    ``phones/disambig.int``, ``oov.int``); ``missing_ok``: a missing file is empty."""
    if not os.path.isfile(path):
        if missing_ok:
            return []
        raise FormatError(f"missing file {path}")
    with open(path, encoding="utf-8") as f:
        words = f.read().split()
    try:
        return [int(w) for w in words]
    except ValueError:
        raise FormatError(f"{path}: expected integers") from None
