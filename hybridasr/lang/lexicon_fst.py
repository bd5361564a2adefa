"""The lexicon FST (``L.fst``, ``L_disambig.fst``) and the lexicon's disambiguation symbols.

As Kaldi's ``utils/add_lex_disambig.pl`` and ``utils/lang/make_lexicon_fst.py`` followed by
``fstcompile | [fstaddselfloops |] fstarcsort --sort_type=olabel``:

- ``add_disambig``: a pronunciation that is a prefix of another, or that several words share,
  gets ``#1``, ``#2``, ... appended (a different one for each word sharing it), so that L
  composed with G can be determinized.
- ``lexicon_fst``: state 0 starts, state 1 is the loop state (final) where words begin and
  end; with ``sil_prob > 0`` an optional silence may come first (``0 -> 2 -> 1`` through the
  silence state 2) and after each word (its last phone goes either to 1, cost
  ``-log(1 - sil_prob)``, or to 2, cost ``-log(sil_prob)``); a pronunciation's cost
  ``-log(prob)`` is on its first arc. ``L_disambig`` also has the silence disambiguation
  symbol after the optional silence, and the word-level ``#0:#0`` self-loop on every state that
  is final or has a word on an outgoing arc (Kaldi's ``AddSelfLoops``).
- The arcs of each state are then sorted on their output labels the way OpenFst's ``ArcSort``
  does (``hybridasr.utils.std_sort``), so that the files are Kaldi's byte for byte; the FST is compiled with
  kaldifst, keeping the state numbers, and written as an OpenFst binary ``vector`` FST.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from hybridasr.utils.std_sort import std_sort

__all__ = ["add_disambig", "lexicon_fst_arcs", "lexicon_fst"]

Arc = Tuple[int, int, int, int, float]  # (src, dst, ilabel, olabel, cost)

# OpenFst property bits (fst/properties.h)
_ACCEPTOR = 0x10000
_ILABEL_SORTED = 0x10000000
_NOT_ILABEL_SORTED = 0x20000000
_OLABEL_SORTED = 0x40000000
_NOT_OLABEL_SORTED = 0x80000000
_ALL_PROPERTIES = 0xFFFFFFFFFFFFFFFF


def add_disambig(prons: Sequence[Sequence[str]], first_allowed: int = 1
                 ) -> Tuple[List[List[str]], int]:
    """The pronunciations with disambiguation symbols appended where needed, and the highest
    symbol number used (``first_allowed - 1`` when none)."""
    keys = [" ".join(p) for p in prons]
    count: Dict[str, int] = {}
    for k in keys:
        count[k] = count.get(k, 0) + 1
    prefixes = set()
    for p in prons:
        for n in range(len(p)):  # every proper prefix, the empty one included
            prefixes.add(" ".join(p[:n]))
    last_used: Dict[str, int] = {}
    max_disambig = first_allowed - 1
    out = []
    for p, k in zip(prons, keys):
        if k not in prefixes and count[k] == 1:
            out.append(list(p))
            continue
        n = last_used[k] + 1 if k in last_used else first_allowed
        last_used[k] = n
        max_disambig = max(max_disambig, n)
        out.append(list(p) + [f"#{n}"])
    return out, max_disambig


def _word_arcs(arcs: List[Arc], nxt: int, loop: int, word: int, prob: float,
               pron: Sequence[int], exits: Sequence[Tuple[int, float]]) -> int:
    """A word's path out of ``loop``: its phones on new states, the word and its cost on the
    first arc, then one last arc per (target state, extra cost) in ``exits``; returns the next
    free state."""
    cost = -math.log(prob)
    cur = loop
    for i, ph in enumerate(pron[:-1]):
        arcs.append((cur, nxt, ph, word if i == 0 else 0, cost if i == 0 else 0.0))
        cur, nxt = nxt, nxt + 1
    last = len(pron) - 1
    for target, extra in exits:
        arcs.append((cur, target, pron[last], word if last == 0 else 0,
                     extra + (cost if last == 0 else 0.0)))
    return nxt


def lexicon_fst_arcs(entries: Sequence[Tuple[int, float, Sequence[int]]], sil_prob: float,
                     sil_phone: int, sil_disambig: Optional[int] = None
                     ) -> Tuple[List[Arc], int, int]:
    """Arcs of L in make_lexicon_fst.py's order, the number of states and the final state.
    ``entries``: (word id, pron-prob, phone ids); labels are ids (0 is epsilon)."""
    arcs: List[Arc] = []
    if sil_prob == 0.0:
        loop, nxt = 0, 1
        for word, prob, pron in entries:
            nxt = _word_arcs(arcs, nxt, loop, word, prob, pron, [(loop, 0.0)])
        return arcs, nxt, loop

    sil_cost, no_sil_cost = -math.log(sil_prob), -math.log(1.0 - sil_prob)
    start, loop, sil_state, nxt = 0, 1, 2, 3
    arcs.append((start, loop, 0, 0, no_sil_cost))
    arcs.append((start, sil_state, 0, 0, sil_cost))
    if sil_disambig is None:
        arcs.append((sil_state, loop, sil_phone, 0, 0.0))
    else:
        arcs.append((sil_state, nxt, sil_phone, 0, 0.0))
        arcs.append((nxt, loop, sil_disambig, 0, 0.0))
        nxt += 1
    for word, prob, pron in entries:
        nxt = _word_arcs(arcs, nxt, loop, word, prob, pron,
                         [(loop, no_sil_cost), (sil_state, sil_cost)])
    return arcs, nxt, loop


def lexicon_fst(entries: Sequence[Tuple[int, float, Sequence[int]]], sil_prob: float,
                sil_phone: int, sil_disambig: Optional[int] = None,
                self_loops: Sequence[Tuple[int, int]] = ()):
    """L (or L_disambig, with ``sil_disambig`` and ``self_loops`` [(phone #0, word #0)]) as a
    kaldifst.StdVectorFst, arcs sorted on output labels as Kaldi's fstarcsort leaves them."""
    import kaldifst

    arcs, num_states, final = lexicon_fst_arcs(entries, sil_prob, sil_phone, sil_disambig)
    by_state: List[List[Arc]] = [[] for _ in range(num_states)]
    for arc in arcs:
        by_state[arc[0]].append(arc)
    if self_loops:
        for s, out in enumerate(by_state):
            if s == final or any(a[3] != 0 for a in out):
                out.extend((s, s, i, o, 0.0) for i, o in self_loops)
    by_olabel = lambda x, y: x[3] < y[3]  # noqa: E731  (OpenFst's OLabelCompare)
    lines = []
    for out in by_state:
        std_sort(out, by_olabel)
        lines.extend(f"{a[0]}\t{a[1]}\t{a[2]}\t{a[3]}\t{a[4]!r}" for a in out)
    lines.append(f"{final}\t0.0")
    fst = kaldifst.compile("\n".join(lines) + "\n", keep_state_numbering=True)
    # what fstarcsort --sort_type=olabel leaves: the other properties, olabel-sorted
    props = fst.properties(_ALL_PROPERTIES, False)
    props &= ~(_ILABEL_SORTED | _NOT_ILABEL_SORTED | _NOT_OLABEL_SORTED)
    props |= _OLABEL_SORTED | (_ILABEL_SORTED if props & _ACCEPTOR else 0)
    fst.set_properties(props, _ALL_PROPERTIES)
    return fst
