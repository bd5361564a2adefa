"""The small FST steps of ``mkgraph.sh`` on kaldifst and ``FstArrays``: table compose,
determinize-star in the log semiring (with the cause named when it cannot), ``fstrmsymbols``."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays

__all__ = ["arcsort_like_kaldi", "compose", "determinize_star", "rm_input_symbols", "rm_arcs_with_output"]


def arcsort_like_kaldi(fst: FstArrays, on: str = "ilabel") -> FstArrays:
    """``fstarcsort --sort_type=ilabel|olabel`` as Kaldi's OpenFst does it (``std::sort``,
    so arcs with equal labels end in that algorithm's order, see ``hybridasr.utils.std_sort``)."""
    from hybridasr.utils.std_sort import std_sort_order

    label = fst.ilabel if on == "ilabel" else fst.olabel
    order = np.lexsort((label, fst.src))  # right for states whose labels are all distinct
    first = np.searchsorted(fst.src, np.arange(fst.num_states + 1))
    ties = np.flatnonzero((np.diff(label[order]) == 0) & (np.diff(fst.src[order]) == 0))
    for s in np.unique(fst.src[order][ties]).tolist():
        a, b = int(first[s]), int(first[s + 1])
        order[a:b] = a + np.asarray(std_sort_order(label[a:b].tolist()), dtype=np.int64)
    return FstArrays(fst.start, fst.final, fst.src[order], fst.ilabel[order],
                     fst.olabel[order], fst.weight[order], fst.dst[order])


def _olabel_sorted(fst) -> bool:
    a = FstArrays.from_fst(fst)
    return bool(np.all((np.diff(a.olabel) >= 0) | (np.diff(a.src) != 0)))


def compose(left, right, what: str):
    """``fsttablecompose left right``: OpenFst composition, ``left`` arc-sorted on output
    labels if it is not (Kaldi's table matcher needs no sorting; a sorted ``left`` is
    matched in the same arc order)."""
    import kaldifst

    if not _olabel_sorted(left):
        left = FstArrays.from_fst(left)
        left = arcsort_like_kaldi(left, "olabel").to_fst()
    out = kaldifst.StdVectorFst(kaldifst.compose(left, right))
    if out.start < 0 or out.num_states == 0:
        raise FormatError(f"{what} is empty: no word sequence of the grammar can be spelt "
                          f"with the lexicon and the model's phones")
    return out


def determinize_star(fst, what: str, hint: str):
    """``fstdeterminizestar --use-log=true`` in place. A non-functional input (one input
    sequence with two outputs, e.g. homophones without disambiguation symbols) is an error
    that says so and gives ``hint``."""
    import kaldifst

    try:
        kaldifst.determinize_star(fst, use_log=True)
    except RuntimeError as e:
        msg = str(e).splitlines()[-1] if str(e) else type(e).__name__
        raise FormatError(f"{what} cannot be determinized ({msg.strip()}): {hint}") from None
    return fst


def rm_input_symbols(fst: FstArrays, symbols: Iterable[int]) -> FstArrays:
    """``fstrmsymbols``: the listed input labels become epsilon."""
    sym = np.asarray(sorted(set(int(s) for s in symbols)), dtype=np.int64)
    il = np.where(np.isin(fst.ilabel, sym), 0, fst.ilabel)
    return FstArrays(fst.start, fst.final, fst.src, il, fst.olabel, fst.weight, fst.dst)


def rm_arcs_with_output(fst: FstArrays, symbols: Iterable[int]) -> FstArrays:
    """``fstrmsymbols --remove-arcs=true --apply-to-output=true``: arcs whose output label
    is listed are deleted."""
    keep = ~np.isin(fst.olabel, np.asarray(list(symbols), dtype=np.int64))
    return FstArrays(fst.start, fst.final, fst.src[keep], fst.ilabel[keep], fst.olabel[keep],
                     fst.weight[keep], fst.dst[keep])
