"""A Kaldi dict dir (``data/local/dict``), read and checked as Kaldi's ``validate_dict_dir.pl``.

The files: ``silence_phones.txt`` and ``nonsilence_phones.txt`` (one base phone per line, or
several that share a tree root), ``optional_silence.txt`` (one silence phone),
``extra_questions.txt`` (optional: phone sets for the tree's questions) and the lexicon:
``lexiconp.txt`` (``word prob phone...``), preferred when present as by Kaldi's
``prepare_lang.sh``, else ``lexicon.txt`` (``word phone...``; the probability is then 1.0).
When both exist they must agree line by line. ``lexiconp_silprob.txt`` (silence probabilities)
and ``nonterminals.txt`` (grammar decoding) are not supported: Kaldi would use them, so a dir
holding one is refused rather than silently built differently. Other files (a stray
``lexicon (copy).txt``) are ignored.

Checks (each error names the file and line): every line ends in a newline; no carriage
returns, no whitespace other than space and tab (a no-break space would hide inside a word), no
byte-order mark, UTF-8 text; no empty lines; a phone is listed once in one list and is not
written like a disambiguation symbol (``#...``), a word-position variant (``_B _E _I _S``) or
``<eps>``; the lexicon is not empty, has no repeated line, no word ``<eps>``, ``<s>``, ``</s>``
or ``#<n>``, a probability ``0 < p <= 1``, a non-empty pronunciation of listed phones; the
phones of ``extra_questions.txt`` are listed, and two nonsilence phones that share a line
(a tree root) are told apart by some extra question. Nothing in the dict dir is written.
"""
from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from hybridasr.errors import FormatError

__all__ = ["DictDir", "LexiconEntry", "read_dict_dir", "read_text_lines"]

MAX_ERRORS = 20  # reported in one FormatError; the rest are counted
FORBIDDEN_WORDS = ("<eps>", "<s>", "</s>")
_DISAMBIG_LIKE = re.compile(r"#[0-9]+\Z")


@dataclass
class LexiconEntry:
    word: str
    prob: str  # the pron-prob as written ("1.0"); Kaldi copies it verbatim
    phones: List[str]
    lineno: int
    text: str  # the line as written, without its newline

    @property
    def prob_value(self) -> float:
        return float(self.prob)


@dataclass
class DictDir:
    path: str
    silence: List[List[str]]  # the lines of silence_phones.txt
    nonsilence: List[List[str]]
    optional_silence: str
    optional_silence_text: str  # optional_silence.txt as it is (copied to phones/)
    extra_questions: List[List[str]] = field(default_factory=list)
    lexicon: List[LexiconEntry] = field(default_factory=list)
    lexicon_path: str = ""  # the lexicon read: lexiconp.txt, else lexicon.txt
    has_probs: bool = True  # lexicon_path is a lexiconp.txt
    word_boundary_text: Optional[str] = None  # word_boundary.txt, if the dir has one

    @property
    def silence_phones(self) -> List[str]:
        return [p for line in self.silence for p in line]

    @property
    def nonsilence_phones(self) -> List[str]:
        return [p for line in self.nonsilence for p in line]


class _Errors:
    """Collects errors; ``raise_if_any`` raises one FormatError listing them."""

    def __init__(self, dict_dir: str):
        self.dict_dir, self.msgs, self.count = dict_dir, [], 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.msgs) < MAX_ERRORS:
            self.msgs.append(msg)

    def raise_if_any(self) -> None:
        if not self.count:
            return
        more = self.count - len(self.msgs)
        tail = f"\n... and {more} more error(s)" if more else ""
        head = "" if self.count == 1 else f"{self.count} errors in dict dir {self.dict_dir}:\n"
        raise FormatError(head + "\n".join(self.msgs) + tail)


def _whitespace_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}"


def read_text_lines(path: str, errors: Optional[_Errors] = None) -> List[Tuple[int, str]]:
    """(line number, text without newline) of a dict-dir file, checked as Kaldi does: UTF-8,
    a newline at the end, no CR, no whitespace but space and tab, no byte-order mark. A bad
    line goes to ``errors`` (then it is left out) or raises FormatError."""
    def bad(msg: str) -> None:
        if errors is None:
            raise FormatError(msg)
        errors.add(msg)

    with open(path, "rb") as f:
        data = f.read()
    raw_lines = data.split(b"\n")
    if raw_lines[-1]:
        bad(f"{path}:{len(raw_lines)}: the last line does not end in a newline")
    else:
        raw_lines.pop()
    out = []
    for lineno, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            bad(f"{path}:{lineno}: not UTF-8 (byte {e.start + 1} of the line is "
                f"0x{raw[e.start]:02x}); convert the file to UTF-8")
            continue
        if lineno == 1 and text.startswith("\ufeff"):
            bad(f"{path}:1: starts with a byte-order mark (U+FEFF); save it without one")
            continue
        if "\r" in text:
            bad(f"{path}:{lineno}: contains a carriage return (CR, a Windows line end?); "
                f"convert it with dos2unix")
            continue
        odd = [c for c in text if c.isspace() and c not in " \t"]
        if odd:
            bad(f"{path}:{lineno}: contains whitespace other than space and tab "
                f"({_whitespace_name(odd[0])}) in {text.strip()!r}")
            continue
        out.append((lineno, text))
    return out


def _need_file(path: str, what: str) -> None:
    if not os.path.isfile(path):
        raise FormatError(f"missing {what} {path}")
    if os.path.getsize(path) == 0:
        raise FormatError(f"{path} is empty: it must list the {what}")


def _read_phone_list(path: str, what: str, errors: _Errors,
                     seen: Dict[str, str]) -> List[List[str]]:
    """The lines of silence_phones.txt or nonsilence_phones.txt; ``seen``: phone -> where it
    was listed first (shared by both files, so a phone in both lists is caught)."""
    _need_file(path, what)
    lines = []
    for lineno, text in read_text_lines(path, errors):
        phones = text.split()
        where = f"{path}:{lineno}"
        if not phones:
            errors.add(f"{where}: empty line")
            continue
        for p in phones:
            if p in seen:
                errors.add(f"{where}: phone {p!r} is listed twice (also at {seen[p]})")
                continue
            seen[p] = where
            if p.startswith("#") or p == "<eps>" or re.search(r"_[BESI]\Z", p):
                errors.add(f"{where}: phone {p!r} has a disallowed form (a phone may not "
                           f"start with '#', end in _B, _E, _I or _S, or be <eps>)")
        lines.append(phones)
    return lines


def _read_lexicon(path: str, has_probs: bool, phones: Dict[str, str],
                  errors: _Errors) -> List[LexiconEntry]:
    entries: List[LexiconEntry] = []
    first_seen: Dict[str, int] = {}
    for lineno, text in read_text_lines(path, errors):
        where = f"{path}:{lineno}"
        if text in first_seen:
            errors.add(f"{where}: repeats line {first_seen[text]} ({text.strip()!r})")
            continue
        first_seen[text] = lineno
        fields = text.split()
        if not fields:
            errors.add(f"{where}: empty line")
            continue
        word, rest = fields[0], fields[1:]
        if word in FORBIDDEN_WORDS or _DISAMBIG_LIKE.match(word):
            errors.add(f"{where}: the word {word!r} is not allowed in a lexicon (<eps>, <s>, "
                       f"</s> and disambiguation symbols #0, #1, ... are reserved)")
            continue
        prob = "1.0"
        if has_probs:
            if not rest:
                errors.add(f"{where}: expected 'word prob phone...', got {text.strip()!r}")
                continue
            prob, rest = rest[0], rest[1:]
            try:
                value = float(prob)
            except ValueError:
                value = float("nan")
            if not 0.0 < value <= 1.0:  # also catches nan
                errors.add(f"{where}: bad pronunciation probability {prob!r} of {word!r} "
                           f"(expected a number 0 < p <= 1)")
                continue
        if not rest:
            errors.add(f"{where}: the word {word!r} has an empty pronunciation")
            continue
        unknown = [p for p in rest if p not in phones]
        if unknown:
            errors.add(f"{where}: phone {unknown[0]!r} of {word!r} is in neither "
                       f"silence_phones.txt nor nonsilence_phones.txt")
            continue
        entries.append(LexiconEntry(word, prob, rest, lineno, text))
    return entries


def _check_pair(plain: List[LexiconEntry], with_probs: List[LexiconEntry], plain_path: str,
                probs_path: str, errors: _Errors) -> None:
    """lexicon.txt and lexiconp.txt must hold the same entries in the same order."""
    for a, b in zip(plain, with_probs):
        if a.word != b.word or a.phones != b.phones:
            errors.add(f"{plain_path}:{a.lineno} and {probs_path}:{b.lineno} differ "
                       f"({a.text.strip()!r} vs {b.text.strip()!r}): the two lexicons must "
                       f"agree line by line (remove the stale one; lexiconp.txt is used)")
            return
    if len(plain) != len(with_probs):
        errors.add(f"{plain_path} has {len(plain)} entries but {probs_path} has "
                   f"{len(with_probs)}: the two lexicons must agree line by line")


def _read_extra_questions(path: str, phones: Dict[str, str], nonsilence: List[List[str]],
                          errors: _Errors) -> List[List[str]]:
    questions = []
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        for lineno, text in read_text_lines(path, errors):
            q = text.split()
            if not q:
                errors.add(f"{path}:{lineno}: empty line")
                continue
            for p in q:
                if p not in phones:
                    errors.add(f"{path}:{lineno}: phone {p!r} is in neither "
                               f"silence_phones.txt nor nonsilence_phones.txt")
            questions.append(q)
    # Phones on one line of nonsilence_phones.txt share a tree root; only an extra question
    # that holds one and not the other can tell them apart.
    for root in nonsilence:
        for i, p1 in enumerate(root):
            for p2 in root[i + 1:]:
                if not any((p1 in q) != (p2 in q) for q in questions):
                    errors.add(f"{phones.get(p1, path)}: phones {p1!r} and {p2!r} share a "
                               f"tree root but no line of extra_questions.txt tells them "
                               f"apart (they would be acoustically indistinguishable)")
    return questions


def read_dict_dir(path: str) -> DictDir:
    """Reads and checks a dict dir; FormatError naming file and line on any problem."""
    if not os.path.isdir(path):
        raise FormatError(f"dict dir {path} does not exist")
    join = lambda name: os.path.join(path, name)  # noqa: E731
    lexp, lex = join("lexiconp.txt"), join("lexicon.txt")
    for name, why in (("lexiconp_silprob.txt", "silence probabilities"),
                      ("nonterminals.txt", "grammar decoding (nonterminals)")):
        if os.path.exists(join(name)):
            only = "" if os.path.isfile(lexp) or os.path.isfile(lex) else \
                " (and it is the only lexicon there)"
            raise FormatError(f"{join(name)}: {why} are not supported here{only}; Kaldi's "
                              f"prepare_lang.sh would use it, so build this lang dir with "
                              f"Kaldi's, or remove {name} to build without it")
    if not (os.path.isfile(lexp) or os.path.isfile(lex)):
        raise FormatError(f"dict dir {path} has neither lexicon.txt nor lexiconp.txt")

    errors = _Errors(path)
    seen: Dict[str, str] = {}
    silence = _read_phone_list(join("silence_phones.txt"), "silence phones", errors, seen)
    sil_set = set(seen)
    nonsilence = _read_phone_list(join("nonsilence_phones.txt"), "nonsilence phones", errors,
                                  seen)

    opt_path = join("optional_silence.txt")
    _need_file(opt_path, "optional-silence phone")
    opt_lines = read_text_lines(opt_path, errors)
    optional_silence = ""
    for lineno, text in opt_lines:
        cols = text.split()
        if lineno > 1 or len(cols) != 1:
            errors.add(f"{opt_path}:{lineno}: expected exactly one phone (on one line), got "
                       f"{text.strip()!r}")
        elif cols[0] not in sil_set:
            errors.add(f"{opt_path}:{lineno}: the optional-silence phone {cols[0]!r} is not "
                       f"in silence_phones.txt")
        else:
            optional_silence = cols[0]
    with open(opt_path, encoding="utf-8", errors="surrogateescape") as f:
        optional_silence_text = f.read()

    plain = probs = None
    if os.path.isfile(lex):
        plain = _read_lexicon(lex, False, seen, errors)
    if os.path.isfile(lexp):
        probs = _read_lexicon(lexp, True, seen, errors)
    if plain is not None and probs is not None and not errors.count:
        _check_pair(plain, probs, lex, lexp, errors)
    lexicon_path, entries = (lexp, probs) if probs is not None else (lex, plain)
    if not entries and not errors.count:
        errors.add(f"{lexicon_path}: the lexicon is empty")

    questions = _read_extra_questions(join("extra_questions.txt"), seen, nonsilence, errors)
    errors.raise_if_any()

    wb_path = join("word_boundary.txt")
    wb_text = None
    if os.path.isfile(wb_path):
        with open(wb_path, encoding="utf-8") as f:
            wb_text = f.read()
    return DictDir(path, silence, nonsilence, optional_silence, optional_silence_text,
                   questions, entries, lexicon_path, probs is not None, wb_text)
