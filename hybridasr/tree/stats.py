"""Tree statistics, as Kaldi's ``acc-tree-stats`` / ``sum-tree-stats`` (``hmm/tree-accu.cc``).

An *event* is what a decision tree is asked about: the phone window of an alignment's phone
(context width N, the phone itself at central position P, 0 outside the utterance) and the
pdf-class of a frame. Each event gets Gaussian statistics of the frames aligned to it (count,
sum and sum of squares of the feature vectors): Kaldi's ``GaussClusterable`` with its variance
floor (0.01), whose objective (``gauss_objf``) is the frames' log-likelihood under the
maximum-likelihood diagonal Gaussian.

A context-independent phone (``--ci-phones``, Kaldi's ``context_indep.csl``) as central phone
gets no context keys at all: its events hold only the pdf-class and the central phone, so no
tree question can ever ask about its neighbours (Kaldi omits the keys rather than zeroing
them). Here an absent key is -1 in the window.

``TreeStats`` holds the events as arrays (``events``: one row per event, the pdf-class then
the N window positions; ``counts``, ``sums``, ``sumsqs`` in double, as Kaldi's), is written
and read as a numpy ``.npz`` file (our own format; Kaldi's ``treeacc`` is not read or written),
and sums with others (``sum_tree_stats``). ``hybridasr.tree.accumulate`` builds them from
alignments and features (``acc-tree-stats``).
"""
from __future__ import annotations

import math
import os
import zipfile
from dataclasses import dataclass
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.options import option
from hybridasr.utils.atomic import atomic_path

__all__ = ["ContextOptions", "TreeStatsOptions", "TreeFeatureOptions", "TreeStats", "gauss_objf",
           "parse_ci_phones", "read_tree_stats", "write_tree_stats", "sum_tree_stats",
           "tid_to_pdf_class", "phone_windows", "ABSENT", "check_code_range", "event_codes",
           "decode_codes", "reduce_sorted"]

ABSENT = -1  # a window position whose key the event does not have (context of a CI phone)
_FORMAT = "hybridasr-tree-stats-1"
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class ContextOptions:
    """The phone window of the tree (Kaldi's ``--context-width``, ``--central-position``;
    ``$context_opts`` in Kaldi's scripts)."""
    context_width: int = option(3, "context window size N (3: triphone)", minimum=1)
    central_position: int = option(1, "position of the central phone in the window (0-based)",
                                   minimum=0)

    def check_context(self) -> None:
        if self.central_position >= self.context_width:
            raise ConfigError(f"--central-position={self.central_position} must be less than "
                              f"--context-width={self.context_width}")


@dataclass
class TreeStatsOptions(ContextOptions):
    """``acc-tree-stats``' options (Kaldi's ``AccumulateTreeStatsOptions``)."""
    ci_phones: str = option("", "colon-separated context-independent phones, e.g. 1:2:3 "
                                "(phones/context_indep.csl): their events get no context")
    var_floor: float = option(0.01, "variance floor of the Gaussian statistics", minimum=0.0)

    def check(self) -> None:
        self.check_context()
        parse_ci_phones(self.ci_phones)


@dataclass
class TreeFeatureOptions:
    """The features the statistics are of: a data dir's ``feats.scp`` with per-speaker CMVN
    (``cmvn.scp``, ``utt2spk``) and deltas, as Kaldi's ``train_deltas.sh`` builds them
    (``apply-cmvn $cmvn_opts ... | add-deltas $delta_opts``)."""
    cmvn_opts: str = option("", "Kaldi cmvn_opts string (e.g. \"--norm-vars=true\"); empty: "
                                "apply-cmvn's defaults (means only)")
    delta_order: int = option(2, "add-deltas order", minimum=0)
    delta_window: int = option(2, "add-deltas window", minimum=1)
    frame_subsampling_factor: int = option(1, "keep every n-th frame of the features, as "
                                              "subsample-feats --n (chain trees: 3)", minimum=1)


def parse_ci_phones(text: str) -> List[int]:
    """Kaldi's ``--ci-phones`` (colon-separated, positive, no duplicates), sorted."""
    text = (text or "").strip()
    if not text:
        return []
    try:
        phones = sorted(int(w) for w in text.split(":"))
    except ValueError:
        raise ConfigError(f"--ci-phones={text}: expected a colon-separated list of integers") \
            from None
    if phones[0] <= 0 or len(set(phones)) != len(phones):
        raise ConfigError(f"--ci-phones={text}: phones must be positive and unique")
    return phones


# ------------------------------------------------------------------ the Gaussian objective
def gauss_objf(counts, sums, sumsqs, var_floor: float) -> np.ndarray:
    """Kaldi's ``GaussClusterable::Objf`` over the leading dimensions: the log-likelihood of
    the frames under their ML diagonal Gaussian, variances floored at ``var_floor``; 0 for a
    count <= 0 (or a NaN). float64 (Kaldi returns it as a float)."""
    counts = np.asarray(counts, dtype=np.float64)
    sums = np.asarray(sums, dtype=np.float64)
    sumsqs = np.asarray(sumsqs, dtype=np.float64)
    dim = sums.shape[-1]
    pos = counts > 0.0
    safe = np.where(pos, counts, 1.0)[..., None]
    mean = sums / safe
    var = sumsqs / safe - mean * mean
    floored = np.maximum(var, var_floor)
    per_frame = (-0.5 * (var / floored).sum(axis=-1)
                 - 0.5 * (np.log(floored).sum(axis=-1) + _LOG_2PI * dim))
    out = per_frame * counts
    return np.where(pos & ~np.isnan(out), out, 0.0)


# ------------------------------------------------------------------ the statistics
class TreeStats:
    """Events and their Gaussian statistics; rows sorted by event."""

    def __init__(self, context_width: int, central_position: int, var_floor: float,
                 events: np.ndarray, counts: np.ndarray, sums: np.ndarray, sumsqs: np.ndarray,
                 name: str = "<tree stats>"):
        self.context_width = int(context_width)
        self.central_position = int(central_position)
        self.var_floor = float(var_floor)
        self.events = np.asarray(events, dtype=np.int32).reshape(-1, self.context_width + 1)
        self.counts = np.asarray(counts, dtype=np.float64).reshape(-1)
        self.sums = np.asarray(sums, dtype=np.float64)
        self.sumsqs = np.asarray(sumsqs, dtype=np.float64)
        self.name = name
        n = len(self.events)
        if not (len(self.counts) == n and self.sums.ndim == 2 and self.sums.shape[0] == n
                and self.sumsqs.shape == self.sums.shape):
            raise FormatError(f"{name}: inconsistent tree statistics (events {n}, counts "
                              f"{len(self.counts)}, sums {self.sums.shape}, sums of squares "
                              f"{self.sumsqs.shape})")
        if not 0 <= self.central_position < self.context_width:
            raise FormatError(f"{name}: bad context width {self.context_width} / central "
                              f"position {self.central_position}")

    @property
    def dim(self) -> int:
        return int(self.sums.shape[1])

    @property
    def num_events(self) -> int:
        return len(self.events)

    @property
    def pdf_classes(self) -> np.ndarray:
        return self.events[:, 0]

    @property
    def windows(self) -> np.ndarray:
        """(events, N) phone windows; -1 where the event has no such key."""
        return self.events[:, 1:]

    @property
    def central_phones(self) -> np.ndarray:
        return self.events[:, 1 + self.central_position]

    def total_count(self) -> float:
        return float(self.counts.sum())

    def items(self) -> Iterator[Tuple[Tuple[Tuple[int, ...], int], Tuple[float, np.ndarray,
                                                                            np.ndarray]]]:
        """((window, pdf_class), (count, sum, sum of squares)) per event; -1 in a window is
        a key the event does not have (context of a context-independent phone)."""
        for i in range(self.num_events):
            yield ((tuple(self.events[i, 1:].tolist()), int(self.events[i, 0])),
                   (float(self.counts[i]), self.sums[i], self.sumsqs[i]))

    def as_dict(self) -> Dict[Tuple[Tuple[int, ...], int], Tuple[float, np.ndarray, np.ndarray]]:
        return dict(self.items())

    def objf(self) -> np.ndarray:
        """Each event's own objective (``GaussClusterable::Objf``)."""
        return gauss_objf(self.counts, self.sums, self.sumsqs, self.var_floor)

    def stacked(self) -> np.ndarray:
        """(events, 1 + 2 dim) float64: count, sums, sums of squares (what clustering adds)."""
        return np.concatenate([self.counts[:, None], self.sums, self.sumsqs], axis=1)

    def __repr__(self) -> str:
        return (f"TreeStats({self.name}: N={self.context_width}, P={self.central_position}, "
                f"{self.num_events} events, {self.total_count():.0f} frames, dim {self.dim})")


def check_code_range(base: int, ncols: int, top: int) -> None:
    if top * base ** (ncols - 1) >= 2 ** 62:
        raise ConfigError(f"a context of {ncols - 1} phones over phone ids up to {base - 2} is "
                          f"too wide for the statistics' event codes (64 bits)")


def event_codes(events: np.ndarray, base: int) -> np.ndarray:
    """One int64 per event row, ordered as the rows sort lexicographically."""
    check_code_range(base, events.shape[1], int(events[:, 0].max(initial=0)) + 2)
    code = np.zeros(len(events), dtype=np.int64)
    for c in range(events.shape[1]):
        code = code * base + (events[:, c].astype(np.int64) + 1)
    return code


def decode_codes(codes: np.ndarray, base: int, ncols: int) -> np.ndarray:
    """The event rows of ``event_codes`` (the first column may exceed ``base``)."""
    codes = codes.copy()
    events = np.zeros((len(codes), ncols), dtype=np.int32)
    for c in range(ncols - 1, 0, -1):
        events[:, c] = codes % base - 1
        codes //= base
    events[:, 0] = codes - 1
    return events


def reduce_sorted(codes: np.ndarray, rows: np.ndarray):
    """Unique codes and the row sums of each (``codes`` need not be sorted)."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], sc[1:] != sc[:-1]]))
    return sc[starts], np.add.reduceat(rows[order], starts, axis=0)


def _merge(parts: Sequence[TreeStats], name: str) -> TreeStats:
    first = parts[0]
    for p in parts[1:]:
        if (p.context_width, p.central_position) != (first.context_width,
                                                     first.central_position):
            raise FormatError(f"{p.name}: context width/central position {p.context_width}/"
                              f"{p.central_position}, but {first.name} has "
                              f"{first.context_width}/{first.central_position}")
        if p.dim != first.dim and p.num_events and first.num_events:
            raise FormatError(f"{p.name}: feature dimension {p.dim}, but {first.name} has "
                              f"{first.dim}")
        if p.var_floor != first.var_floor:
            raise FormatError(f"{p.name}: variance floor {p.var_floor}, but {first.name} has "
                              f"{first.var_floor}")
    parts = [p for p in parts if p.num_events] or [first]
    events = np.concatenate([p.events for p in parts])
    if not len(events):
        return TreeStats(first.context_width, first.central_position, first.var_floor,
                         events, np.zeros(0), np.zeros((0, first.dim)),
                         np.zeros((0, first.dim)), name=name)
    base = int(events.max()) + 2
    uniq, summed = reduce_sorted(event_codes(events, base),
                                  np.concatenate([p.stacked() for p in parts]))
    dim = parts[0].dim
    return TreeStats(first.context_width, first.central_position, first.var_floor,
                     decode_codes(uniq, base, events.shape[1]), summed[:, 0],
                     summed[:, 1:1 + dim], summed[:, 1 + dim:], name=name)


def sum_tree_stats(stats: Sequence[TreeStats], name: str = "<summed tree stats>") -> TreeStats:
    """Kaldi's ``sum-tree-stats``: the statistics of equal events added."""
    if not stats:
        raise FormatError("no tree statistics to sum")
    return _merge(list(stats), name)


def write_tree_stats(stats: TreeStats, path: str) -> None:
    """Writes ``stats`` as an ``.npz`` file (atomically; the name is used as given)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, format=np.array(_FORMAT), context_width=stats.context_width,
                     central_position=stats.central_position, var_floor=stats.var_floor,
                     events=stats.events, counts=stats.counts, sums=stats.sums,
                     sumsqs=stats.sumsqs)


def read_tree_stats(path: str) -> TreeStats:
    """Reads what ``write_tree_stats`` wrote; FormatError naming the file otherwise."""
    if not os.path.isfile(path):
        raise FormatError(f"missing tree statistics file {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "format" not in z.files or str(z["format"]) != _FORMAT:
                raise FormatError(f"{path}: not a tree statistics file of this toolkit (no "
                                  f"{_FORMAT!r} marker; Kaldi's treeacc is not read)")
            return TreeStats(int(z["context_width"]), int(z["central_position"]),
                             float(z["var_floor"]), z["events"], z["counts"], z["sums"],
                             z["sumsqs"], name=path)
    except FormatError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise FormatError(f"{path}: not a readable tree statistics file ({e})") from None


# ------------------------------------------------------------------ the events of an alignment
def tid_to_pdf_class(tm: TransitionModel) -> np.ndarray:
    """Per transition-id (index; 0 unused, -1), its pdf-class (Kaldi's
    ``TransitionIdToPdfClass``: the self-loop pdf-class for a self-loop)."""
    out = np.full(tm.num_transition_ids + 1, -1, dtype=np.int32)
    topo = tm.topology
    for tid in range(1, tm.num_transition_ids + 1):
        st = topo.topology_for_phone(int(tm.tid2phone[tid]))[int(tm.tid2hmm_state[tid])]
        out[tid] = st.self_loop_pdf_class if tm.tid_is_self_loop[tid] else st.forward_pdf_class
    return out


def phone_windows(phones: np.ndarray, context_width: int, central_position: int) -> np.ndarray:
    """(len(phones), N) windows around each phone of a sequence, 0 outside it."""
    n, p = context_width, central_position
    padded = np.concatenate([np.zeros(p, np.int32), np.asarray(phones, np.int32),
                             np.zeros(n - 1 - p, np.int32)])
    return np.lib.stride_tricks.sliding_window_view(padded, n).copy() if len(phones) else \
        np.zeros((0, n), np.int32)
