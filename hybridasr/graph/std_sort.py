"""The order in which C++'s ``std::sort`` (GNU libstdc++: introsort, median-of-three pivot,
insertion sort below 16 elements, heapsort past the depth limit) leaves equal elements.

``std::sort`` is not stable, and OpenFst's ``fstarcsort`` (``ArcSortMapper``) uses it, so
the order of arcs with the same label after Kaldi's ``fstarcsort`` is this algorithm's. That
order decides how a composition numbers its states, and so how determinize-star's
log-semiring sums round, and so (through the quantized ``fstminimizeencoded``) the exact
size of HCLG. ``arcsort_like_kaldi`` reproduces it, so that our graphs equal Kaldi's state
for state. ``key[i]`` is compared with ``<`` only, as the C++ comparator."""
from __future__ import annotations

from typing import List, Sequence

__all__ = ["std_sort_order"]

_THRESHOLD = 16


def std_sort_order(key: Sequence) -> List[int]:
    """The permutation ``std::sort`` applies: position i of the result holds the index of the
    element that ends there."""
    a = list(range(len(key)))
    n = len(a)
    if n < 2:
        return a

    def less(i, j):
        return key[i] < key[j]

    def introsort(first, last, depth):
        while last - first > _THRESHOLD:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            cut = partition_pivot(first, last)
            introsort(cut, last, depth)
            last = cut

    def move_median_to_first(result, x, y, z):
        if less(a[x], a[y]):
            if less(a[y], a[z]):
                m = y
            elif less(a[x], a[z]):
                m = z
            else:
                m = x
        elif less(a[x], a[z]):
            m = x
        elif less(a[y], a[z]):
            m = z
        else:
            m = y
        a[result], a[m] = a[m], a[result]

    def partition_pivot(first, last):
        mid = first + (last - first) // 2
        move_median_to_first(first, first + 1, mid, last - 1)
        lo, hi, pivot = first + 1, last, first
        while True:
            while less(a[lo], a[pivot]):
                lo += 1
            hi -= 1
            while less(a[pivot], a[hi]):
                hi -= 1
            if not lo < hi:
                return lo
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1

    def adjust_heap(first, hole, length, value):
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if less(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def heap_sort(first, last):  # std::__partial_sort(first, last, last): make + sort heap
        length = last - first
        parent = (length - 2) // 2
        while True:
            adjust_heap(first, parent, length, a[first + parent])
            if parent == 0:
                break
            parent -= 1
        while last - first > 1:
            last -= 1
            value = a[last]
            a[last] = a[first]
            adjust_heap(first, 0, last - first, value)

    def linear_insert(i):
        val = a[i]
        j = i - 1
        while less(val, a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = val

    def insertion_sort(first, last):
        for i in range(first + 1, last):
            if less(a[i], a[first]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                linear_insert(i)

    introsort(0, n, 2 * (n.bit_length() - 1))
    if n > _THRESHOLD:
        insertion_sort(0, _THRESHOLD)
        for i in range(_THRESHOLD, n):
            linear_insert(i)
    else:
        insertion_sort(0, n)
    return a
