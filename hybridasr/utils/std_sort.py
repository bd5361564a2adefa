"""``std::sort`` as GNU libstdc++ does it (introsort), so that ties come out in the same order.

Kaldi's ``fstarcsort`` sorts each state's arcs with OpenFst's ``ArcSort``, which calls
``std::sort``: not a stable sort, so arcs with equal keys (a word's two arcs into the loop and
the silence state, say) end in an order that only the algorithm decides. Doing the same steps
here (median-of-three pivot, unguarded Hoare partition, depth limit ``2 * floor(log2 n)`` with a
heap-sort fallback, then insertion sort of the runs of at most 16) puts ``L.fst``'s arcs in
Kaldi's order, so the file is the same byte for byte, and CLG's (``mkgraph.sh`` arc-sorts it):
that order decides how H o CLG numbers its states, so how determinize-star's log-semiring sums
round, and so, through the quantized ``fstminimizeencoded``, the exact size of HCLG. Any sorted
order is a correct FST; this buys identity with Kaldi's files and graphs.
"""
from __future__ import annotations

from typing import Callable, List, Sequence, TypeVar

T = TypeVar("T")
Less = Callable[[T, T], bool]

__all__ = ["std_sort", "std_sort_order"]

_THRESHOLD = 16  # libstdc++'s _S_threshold


def std_sort(a: List[T], less: Less) -> None:
    """Sorts ``a`` in place exactly as libstdc++'s ``std::sort(a.begin(), a.end(), less)``."""
    n = len(a)
    if n < 2:
        return
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
    _final_insertion_sort(a, 0, n, less)


def std_sort_order(key: Sequence) -> List[int]:
    """The permutation ``std::sort`` applies to ``key`` (compared with ``<``): position i of
    the result holds the index of the element that ends there."""
    order = list(range(len(key)))
    std_sort(order, lambda i, j: key[i] < key[j])
    return order


def _introsort_loop(a: List[T], first: int, last: int, depth: int, less: Less) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: List[T], first: int, last: int, less: Less) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _move_median_to_first(a: List[T], result: int, i: int, j: int, k: int,
                          less: Less) -> None:
    if less(a[i], a[j]):
        if less(a[j], a[k]):
            m = j
        elif less(a[i], a[k]):
            m = k
        else:
            m = i
    elif less(a[i], a[k]):
        m = i
    elif less(a[j], a[k]):
        m = k
    else:
        m = j
    a[result], a[m] = a[m], a[result]


def _unguarded_partition(a: List[T], first: int, last: int, pivot: int, less: Less) -> int:
    p = a[pivot]
    while True:
        while less(a[first], p):
            first += 1
        last -= 1
        while less(p, a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a: List[T], first: int, last: int, less: Less) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: List[T], first: int, last: int, less: Less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            v = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = v
        else:
            _unguarded_linear_insert(a, i, less)


def _unguarded_linear_insert(a: List[T], last: int, less: Less) -> None:
    v = a[last]
    nxt = last - 1
    while less(v, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = v


# ---- the depth-limit fallback: std::__partial_sort(first, last, last) = make_heap + sort_heap
def _heap_sort(a: List[T], first: int, last: int, less: Less) -> None:
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(a, first, parent, n, a[first + parent], less)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)


def _adjust_heap(a: List[T], base: int, hole: int, n: int, value: T, less: Less) -> None:
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if less(a[base + child], a[base + child - 1]):
            child -= 1
        a[base + hole] = a[base + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[base + hole] = a[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[base + parent], value):
        a[base + hole] = a[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[base + hole] = value
