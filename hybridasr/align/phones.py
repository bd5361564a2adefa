"""Phones of an alignment, as Kaldi's ``SplitToPhones`` (``hmm/hmm-utils.cc``) finds them.

A phone ends at a transition into its HMM's final state; in a *reordered* alignment (self-loops
after the forward transition) the self-loops that follow that transition still belong to it.
Kaldi decides reordering from the first pair of adjacent frames in different transition-states:
a self-loop before the change means reordered. The split is flagged not ok (Kaldi: "SplitToPhones
failed") when the phone changes without a final transition, the alignment does not end in one,
or a phone starts anywhere but in HMM state 0 (when state 0 emits): a model that does not match
the alignment shows up this way.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.transition_model import TransitionModel


def is_reordered(tm: TransitionModel, ali: np.ndarray) -> bool:
    if len(ali) < 2:
        return False
    ts = tm.tid2tstate[ali]
    change = np.flatnonzero(ts[:-1] != ts[1:])
    loop = tm.tid_is_self_loop[ali]
    for i in change.tolist():
        if loop[i]:
            return True  # the self-loop comes last
        if loop[i + 1]:
            return False  # the self-loop comes first
    # no change of transition-state next to a self-loop: Kaldi's IsReordered looks at the ends
    if loop[0]:
        return False  # the self-loop comes first
    return bool(loop[-1])  # a self-loop last: reordered (none: either reading is the same)


def split_to_phones(tm: TransitionModel, ali: np.ndarray) -> Tuple[np.ndarray, bool]:
    """End points (exclusive frame indices) of the phones of ``ali`` and whether the split is
    consistent. ``ali`` must hold valid transition-ids (see ``TransitionModel.check_alignment``)."""
    ali = np.asarray(ali)
    n = len(ali)
    if n == 0:
        return np.zeros(0, dtype=np.int64), True
    final = tm.tid_is_final[ali]
    ok = True
    if is_reordered(tm, ali):
        ends: List[int] = []
        ts = tm.tid2tstate[ali]
        loop = tm.tid_is_self_loop[ali]
        i = 0
        final_idx = np.flatnonzero(final)
        for f in final_idx:
            if f < i:
                continue
            j = f
            while j + 1 < n and loop[j + 1] and ts[j + 1] == ts[f]:
                j += 1
            ends.append(j + 1)
            i = j + 1
        ends_arr = np.array(ends, dtype=np.int64)
    else:
        ends_arr = np.flatnonzero(final) + 1
    # frames where the phone changes without a phone end there: Kaldi adds an end point
    phone = tm.tid2phone[ali]
    change = np.flatnonzero(phone[:-1] != phone[1:]) + 1
    missing = np.setdiff1d(change, ends_arr)
    if len(missing):
        ok = False
        ends_arr = np.union1d(ends_arr, missing)
    if len(ends_arr) == 0 or ends_arr[-1] != n:
        ok = False
        ends_arr = np.append(ends_arr, n)
    starts = np.concatenate([[0], ends_arr[:-1]])
    first = ali[starts]
    bad_start = tm.phone_starts_emitting[tm.tid2phone[first]] & (tm.tid2hmm_state[first] != 0)
    if bad_start.any():
        ok = False
    return ends_arr, ok


def phone_segments(tm: TransitionModel, ali: np.ndarray, what: str = "alignment",
                   strict: bool = True) -> List[Tuple[int, int]]:
    """(phone, number of frames) of each phone of ``ali``; FormatError naming ``what`` if
    the alignment does not split into phones of this model (with ``strict=False``, Kaldi's
    ``ali-to-phones`` behaviour: the split is used as it is)."""
    tm.check_alignment(ali, what)
    ends, ok = split_to_phones(tm, ali)
    if not ok and strict:
        raise FormatError(f"{what}: the alignment does not split into phones of model "
                          f"{tm.name} (SplitToPhones failed): wrong final.mdl for these "
                          f"alignments?")
    starts = np.concatenate([[0], ends[:-1]])
    phones = tm.tid2phone[np.asarray(ali)[starts]] if len(ends) else np.zeros(0, np.int32)
    return list(zip(phones.tolist(), (ends - starts).tolist()))
