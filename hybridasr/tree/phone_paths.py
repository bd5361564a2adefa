"""Pieces of Kaldi's ``ConvertAlignment`` (``hmm/hmm-utils.cc``) for a frame subsampling factor
above 1 or a change of HMM topology (e.g. to the chain topology of ``gen_topo.py``):

- ``new_phone_lengths``: ``ComputeNewPhoneLengths``, each phone's length at the subsampled
  rate (``(t + shift) / factor`` at its boundaries, ``shift = factor - 1`` so the result is
  as long as ``subsample-feats``' output), then frames borrowed from the nearest phone that
  can spare one until every phone has its topology's minimum length;
- ``phone_path``: a path of exactly ``length`` frames through a phone's HMM, as the
  transition (HMM state, transition index) of each frame, in Kaldi's non-reordered order.
  Kaldi draws a random path (``GetRandomAlignmentForPhone``); here one is drawn uniformly
  over the paths of that length with a generator seeded from the phone and length, so the
  result is reproducible. Topologies with one path per length (the chain topology, Kaldi's
  3-state left-to-right ones at their minimum length) give Kaldi's path exactly."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import NO_PDF, HmmTopology

__all__ = ["min_length", "new_phone_lengths", "phone_path"]


def min_length(topo: HmmTopology, phone: int) -> int:
    """Kaldi's ``HmmTopology::MinLength``: the fewest frames a path through the phone emits."""
    entry = topo.topology_for_phone(phone)
    n = len(entry)
    inf = 1 << 30
    best = [inf] * n  # fewest frames from state s to the final state
    best[n - 1] = 0
    for _ in range(n + 1):  # Bellman-Ford over the small HMM
        for s, st in enumerate(entry):
            if st.forward_pdf_class == NO_PDF and s != n - 1:
                cost = 0
            else:
                cost = 1 if s != n - 1 else 0
            for dst, _ in st.transitions:
                if dst != s and best[dst] < inf:
                    best[s] = min(best[s], cost + best[dst])
    if best[0] >= inf:
        raise FormatError(f"phone {phone}: its HMM has no path to the final state")
    return best[0]


def new_phone_lengths(min_lengths: Sequence[int], old_lengths: Sequence[int],
                      conversion_shift: int, factor: int) -> Optional[List[int]]:
    """``ComputeNewPhoneLengths``; None where the phones cannot all get their minimum."""
    n = len(old_lengths)
    new, elapsed = [0] * n, 0
    for i in range(n):
        t0 = (elapsed + conversion_shift) // factor
        elapsed += int(old_lengths[i])
        new[i] = (elapsed + conversion_shift) // factor - t0
    changed = True
    while changed:
        changed = False
        for i in range(n):
            if new[i] >= min_lengths[i]:
                continue
            changed = True
            best, best_dist, dist = -1, 1 << 60, 0
            for j in range(i - 1, -1, -1):
                if new[j] > min_lengths[j]:
                    best, best_dist = j, dist
                    break
                dist += new[j]
            dist = 0
            for j in range(i + 1, n):
                if new[j] > min_lengths[j]:
                    if dist < best_dist:
                        best, best_dist = j, dist
                    break
                dist += new[j]
            if best == -1:
                return None
            new[i] += 1
            new[best] -= 1
    return new


def phone_path(topo: HmmTopology, phone: int, length: int) -> List[Tuple[int, int]]:
    """(HMM state, transition index) per frame of a path of ``length`` frames through the
    phone's HMM from state 0 to its final state (non-reordered: each frame is the transition
    leaving the emitting state it is in)."""
    entry = topo.topology_for_phone(phone)
    final = len(entry) - 1
    if entry[0].forward_pdf_class == NO_PDF:
        raise FormatError(f"phone {phone}: HMMs starting in a non-emitting state are not "
                          f"supported")
    # ways[r][s]: number of paths emitting r frames from emitting state s to the final state
    ways = np.zeros((length + 1, len(entry)), dtype=np.float64)
    ways[0, final] = 1.0
    for r in range(1, length + 1):
        for s, st in enumerate(entry[:final]):
            ways[r, s] = sum(ways[r - 1, d] if d != final else float(r == 1)
                             for d, _ in st.transitions)
    if ways[length, 0] == 0:
        raise FormatError(f"phone {phone}: no path of {length} frames through its HMM")
    rng = np.random.default_rng(phone * 100003 + length)
    out, s = [], 0
    for r in range(length, 0, -1):
        w = np.array([ways[r - 1, d] if d != final else float(r == 1)
                      for d, _ in entry[s].transitions])
        k = int(rng.choice(len(w), p=w / w.sum())) if np.count_nonzero(w) > 1 else \
            int(np.flatnonzero(w)[0])
        out.append((s, k))
        s = entry[s].transitions[k][0]
    return out
