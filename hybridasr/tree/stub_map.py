"""Kaldi's ``GetStubMap`` (``tree/build-tree-utils.cc``): the initial event map with one leaf
per phone set (a "shared" root) or per phone set and pdf-class (not shared), numbered in set
order. The monophone tree is this map; tree building starts from it and splits its leaves."""
from __future__ import annotations

from typing import List, Sequence

from hybridasr.errors import FormatError
from hybridasr.kaldi.tree import PDF_CLASS_KEY, Node

__all__ = ["stub_map"]


def stub_map(position: int, phone_sets: Sequence[Sequence[int]],
             phone2num_pdf_classes: Sequence[int], share_roots: Sequence[bool],
             first_leaf: int = 0) -> tuple:
    """Returns ``(event map, number of leaves)``; the leaves are ``first_leaf`` onwards.

    ``position`` is the key of the central phone (Kaldi's P). Phone sets must be disjoint,
    each sorted; ``phone2num_pdf_classes[p]`` is the number of pdf-classes of phone p."""
    seen = set()
    for s in phone_sets:
        if not s or list(s) != sorted(set(s)):
            raise FormatError(f"phone set {list(s)} is empty or not sorted and unique")
        if seen & set(s):
            raise FormatError(f"phone sets overlap: {sorted(seen & set(s))}")
        seen |= set(s)
    if len(share_roots) != len(phone_sets):
        raise ValueError("one share-roots flag per phone set")
    counter = [first_leaf]
    root = _stub(position, [list(s) for s in phone_sets], phone2num_pdf_classes,
                 list(share_roots), counter)
    return root, counter[0] - first_leaf


def _stub(position: int, sets: List[List[int]], num_classes: Sequence[int],
          share: List[bool], counter: List[int]) -> Node:
    if len(sets) == 1:
        if share[0]:
            counter[0] += 1
            return ("CE", counter[0] - 1)
        lengths = []
        for p in sets[0]:
            if p >= len(num_classes) or num_classes[p] <= 0:
                raise FormatError(f"phone {p} has no pdf-classes in the topology")
            lengths.append(num_classes[p])
        table = []
        for _ in range(max(lengths)):
            table.append(("CE", counter[0]))
            counter[0] += 1
        return ("TE", PDF_CLASS_KEY, table)
    highest = max(max(s) for s in sets)
    if max(len(s) for s in sets) == 1 and len(sets) <= 2 * highest:
        table: List[Node] = [None] * (highest + 1)
        for s, sh in zip(sets, share):
            table[s[0]] = _stub(position, [s], num_classes, [sh], counter)
        return ("TE", position, table)
    half = len(sets) // 2
    first = _stub(position, sets[:half], num_classes, share[:half], counter)
    second = _stub(position, sets[half:], num_classes, share[half:], counter)
    yes = frozenset(p for s in sets[:half] for p in s)
    return ("SE", position, yes, first, second)
