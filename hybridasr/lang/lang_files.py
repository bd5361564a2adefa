"""The text files of a lang dir, as Kaldi's ``utils/prepare_lang.sh`` writes them.

Every function returns file contents (str) in Kaldi's exact layout (trailing spaces of
``extra_questions.txt`` and ``phone_map.txt`` included), so a lang dir made here is Kaldi's byte
for byte. Sorting is bytewise (``LC_ALL=C sort``, which Kaldi's ``path.sh`` sets).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from hybridasr.errors import FormatError
from hybridasr.kaldi.symbol_table import read_symbol_ids
from hybridasr.lang.dict_dir import DictDir

__all__ = ["POSITIONS", "phone_map", "mark_positions", "sets_and_roots", "extra_questions",
           "word_boundary", "phones_table", "words_table", "align_lexicon", "sym2int",
           "int_lines", "topo", "lines"]

POSITIONS = ("_B", "_E", "_I", "_S")  # begin, end, internal, singleton
_BOUNDARY = {"_I": "internal", "_B": "begin", "_S": "singleton", "_E": "end"}


def lines(items: Sequence[str]) -> str:
    return "".join(f"{x}\n" for x in items)


def _bytewise(items) -> List[str]:
    return sorted(items, key=lambda s: s.encode("utf-8", "surrogateescape"))


def phone_map(d: DictDir, position_dependent: bool) -> Dict[str, List[str]]:
    """base phone -> the phones made of it (for a silence phone also the bare one: it is the
    optional silence between words)."""
    if not position_dependent:
        return {p: [p] for p in d.silence_phones + d.nonsilence_phones}
    out = {p: [p] + [p + s for s in POSITIONS] for p in d.silence_phones}
    out.update({p: [p + s for s in POSITIONS] for p in d.nonsilence_phones})
    return out


def phone_map_text(d: DictDir, position_dependent: bool) -> str:
    """``<tmp-dir>/phone_map.txt``: a silence phone's line names it twice (Kaldi's loop)."""
    if not position_dependent:
        return lines(f"{p} {p}" for p in d.silence_phones + d.nonsilence_phones)
    out = ["".join(f"{p}{s} " for s in ("", "") + POSITIONS) for p in d.silence_phones]
    out += ["".join(f"{p}{s} " for s in ("",) + POSITIONS) for p in d.nonsilence_phones]
    return lines(out)


def mark_positions(phones: Sequence[str]) -> List[str]:
    """A pronunciation with word-position markers: ``a_B b_I c_E``, or ``a_S`` alone."""
    if len(phones) == 1:
        return [phones[0] + "_S"]
    return [phones[0] + "_B"] + [p + "_I" for p in phones[1:-1]] + [phones[-1] + "_E"]


def _apply_map(pmap: Dict[str, List[str]], phones: Sequence[str]) -> str:
    return " ".join(x for p in phones for x in pmap[p])


def sets_and_roots(d: DictDir, pmap: Dict[str, List[str]], share_silence: bool):
    """``phones/sets.txt`` and ``phones/roots.txt``."""
    if share_silence:
        sets = [_apply_map(pmap, d.silence_phones)] + [_apply_map(pmap, line)
                                                       for line in d.nonsilence]
        roots = [("not-shared not-split " if i == 0 else "shared split ") + s
                 for i, s in enumerate(sets)]
    else:
        sets = [_apply_map(pmap, line) for line in d.silence + d.nonsilence]
        roots = ["shared split " + s for s in sets]
    return lines(sets), lines(roots)


def extra_questions(d: DictDir, pmap: Dict[str, List[str]], position_dependent: bool) -> str:
    """The dict dir's questions (mapped), then, with positions, one question per position for
    the nonsilence and (also bare) the silence phones; those lines end in a space."""
    out = [_apply_map(pmap, q) for q in d.extra_questions]
    if position_dependent:
        out += ["".join(f"{p}{s} " for p in d.nonsilence_phones) for s in POSITIONS]
        out += ["".join(f"{p}{s} " for p in d.silence_phones) for s in ("",) + POSITIONS]
    return lines(out)


def word_boundary(phones: Sequence[str]) -> str:
    return lines(f"{p} {_BOUNDARY.get(p[-2:], 'nonword')}" for p in phones)


def phones_table(phones: Sequence[str], disambig: Sequence[str],
                 given: Optional[str] = None, position_dependent: bool = True,
                 base_phones: Sequence[str] = ()) -> str:
    """``phones.txt``: ``<eps>``, the phones, the disambiguation symbols, numbered in order;
    with ``given`` (``--phone-symbol-table``) the phones keep that table's ids (sorted on
    them) and the disambiguation symbols count up from its ``#0``."""
    if given is None:
        return lines(f"{s} {i}" for i, s in enumerate(["<eps>", *phones, *disambig]))
    table = read_symbol_ids(given)
    names = [s for s in table if not re.fullmatch(r"#[0-9]+", s)]
    has_positions = len({re.sub(r"_[BIES]\Z", "", s) for s in names}) != len(names)
    if position_dependent and not has_positions:
        raise FormatError(f"{given}: position-dependent phones requested, but the phone "
                          f"symbol table has none (use --position-dependent-phones=false)")
    if not position_dependent and has_positions:
        raise FormatError(f"{given}: position-dependent phones not requested, but the phone "
                          f"symbol table has them")
    bases = {re.sub(r"_[BEIS]\Z", "", s) for s in table}
    for p in base_phones:
        if p not in bases:
            raise FormatError(f"{given}: the dictionary's phone {p!r} is not in the phone "
                              f"symbol table")
    missing = [p for p in ["<eps>", *phones] if p not in table]
    if missing or "#0" not in table:
        raise FormatError(f"{given}: lacks {(missing or ['#0'])[0]!r}, which this lang dir "
                          f"needs")
    rows = sorted(((table[p], p) for p in ["<eps>", *phones]), key=lambda r: r[0])
    start = table["#0"]
    rows += [(start + i, s) for i, s in enumerate(disambig)]
    return lines(f"{s} {i}" for i, s in rows)


def words_table(words: Sequence[str]) -> str:
    """``words.txt``: ``<eps>``, the words sorted bytewise, ``#0``, ``<s>``, ``</s>``."""
    uniq = _bytewise(set(words))
    return lines(f"{s} {i}" for i, s in enumerate(["<eps>", *uniq, "#0", "<s>", "</s>"]))


def align_lexicon(tmp_align_lines: Sequence[str]) -> str:
    """``phones/align_lexicon.txt``: ``word word phones...``, sorted bytewise, unique."""
    out = set()
    for line in tmp_align_lines:
        f = line.split()
        out.add(" ".join([f[0]] + f))
    return lines(_bytewise(out))


def sym2int(table: Dict[str, int], text: str, what: str, first: int = 0,
            last: Optional[int] = None) -> str:
    """Kaldi's ``utils/sym2int.pl -f first+1-last+1``: fields in that range mapped, each line
    re-joined with single spaces."""
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        f = line.split()
        for n in range(first, len(f) if last is None else min(last + 1, len(f))):
            if f[n] not in table:
                raise FormatError(f"{what}:{lineno}: undefined symbol {f[n]!r}")
            f[n] = str(table[f[n]])
        out.append(" ".join(f))
    return lines(out)


def int_lines(ids: Sequence[int]) -> str:
    return lines(str(i) for i in ids)


def topo(num_nonsil_states: int, num_sil_states: int, nonsil: Sequence[int],
         sil: Sequence[int]) -> str:
    """Kaldi's ``utils/gen_topo.pl``: left-to-right nonsilence HMMs (self-loop 0.75); the
    silence HMM's first and middle states may jump to any middle state."""
    out = ["<Topology>", "<TopologyEntry>", "<ForPhones>", " ".join(map(str, nonsil)),
           "</ForPhones>"]
    out += [f"<State> {s} <PdfClass> {s} <Transition> {s} 0.75 <Transition> {s + 1} 0.25 "
            f"</State>" for s in range(num_nonsil_states)]
    out += [f"<State> {num_nonsil_states} </State>", "</TopologyEntry>",
            "<TopologyEntry>", "<ForPhones>", " ".join(map(str, sil)), "</ForPhones>"]
    n = num_sil_states
    if n > 1:
        p = f"{1.0 / (n - 1):.15g}"  # perl's number format
        out.append("<State> 0 <PdfClass> 0 " +
                   "".join(f"<Transition> {t} {p} " for t in range(n - 1)) + "</State>")
        for s in range(1, n - 1):
            out.append(f"<State> {s} <PdfClass> {s} " +
                       "".join(f"<Transition> {t} {p} " for t in range(1, n)) + "</State>")
        out.append(f"<State> {n - 1} <PdfClass> {n - 1} <Transition> {n - 1} 0.75 "
                   f"<Transition> {n} 0.25 </State>")
    else:
        out.append("<State> 0 <PdfClass> 0 <Transition> 0 0.75 <Transition> 1 0.25 </State>")
    out += [f"<State> {n} </State>", "</TopologyEntry>", "</Topology>"]
    return lines(out)
