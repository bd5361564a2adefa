"""Tree statistics from alignments and features: Kaldi's ``acc-tree-stats``
(``hmm/tree-accu.cc``, ``AccumulateTreeStats``).

``TreeStatsAccumulator`` adds utterances (an alignment and its features), vectorized per
utterance and reduced in blocks of frames, so memory stays bounded for any number of
utterances; ``accumulate_tree_stats`` runs it over a data dir's features with per-speaker CMVN
and deltas (``iter_tree_features``) and counts what it skips (``AccReport``). The statistics
themselves (``TreeStats``, reading, writing, summing) are ``hybridasr.tree.stats``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Tuple

import numpy as np

from hybridasr.align.phones import split_to_phones
from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import NO_PDF
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.tree.stats import (TreeFeatureOptions, TreeStats, TreeStatsOptions,
                                  check_code_range, decode_codes, parse_ci_phones,
                                  phone_windows, reduce_sorted, tid_to_pdf_class)

__all__ = ["TreeStatsAccumulator", "AccReport", "accumulate_tree_stats", "iter_tree_features"]

log = logging.getLogger(__name__)


class TreeStatsAccumulator:
    """Kaldi's ``AccumulateTreeStats`` over utterances (``add``), reduced every
    ``block_frames`` frames; ``result()`` gives the ``TreeStats``."""

    def __init__(self, tm: TransitionModel, options: Optional[TreeStatsOptions] = None,
                 block_frames: int = 100_000):
        self.opts = options or TreeStatsOptions()
        self.opts.check()
        self.tm = tm
        self.n, self.p = self.opts.context_width, self.opts.central_position
        self.ci = np.zeros(tm.num_phones + 1, dtype=bool)
        for ph in parse_ci_phones(self.opts.ci_phones):
            if ph <= tm.num_phones:
                self.ci[ph] = True
        self.tid2pc = tid_to_pdf_class(tm)
        if (self.tid2pc[1:] == NO_PDF).any():
            raise FormatError(f"{tm.name}: a transition-id without a pdf-class")
        self.base = tm.num_phones + 2
        max_pc = int(self.tid2pc[1:].max(initial=0))
        check_code_range(self.base, self.n + 1, max_pc + 2)
        self.block_frames = int(block_frames)
        self._codes: List[np.ndarray] = []
        self._feats: List[np.ndarray] = []
        self._pending = 0
        self._uniq = np.zeros(0, dtype=np.int64)
        self._rows: Optional[np.ndarray] = None
        self.dim: Optional[int] = None
        self.num_done = 0
        self.num_bad_split = 0
        self.num_frames = 0

    def add(self, ali: np.ndarray, feats: np.ndarray, what: str = "utterance") -> bool:
        """Adds one utterance; False (and nothing added) when its alignment does not split
        into phones (Kaldi: "alignment appears to be bad, not using it"). ``feats`` must
        have one row per frame of ``ali``."""
        ali = self.tm.check_alignment(np.asarray(ali, dtype=np.int32), what)
        feats = np.asarray(feats)
        if feats.ndim != 2 or feats.shape[0] != len(ali):
            raise FormatError(f"{what}: {feats.shape[0] if feats.ndim == 2 else '?'} feature "
                              f"frames for an alignment of {len(ali)}")
        if self.dim is None:
            self.dim = int(feats.shape[1])
        elif feats.shape[1] != self.dim:
            raise FormatError(f"{what}: feature dimension {feats.shape[1]}, earlier "
                              f"utterances {self.dim}")
        if not len(ali):
            self.num_done += 1
            return True
        ends, ok = split_to_phones(self.tm, ali)
        if not ok:
            self.num_bad_split += 1
            log.warning("%s: alignment appears to be bad (SplitToPhones failed), not using it",
                        what)
            return False
        starts = np.concatenate([[0], ends[:-1]])
        phones = self.tm.tid2phone[ali[starts]]
        win = phone_windows(phones, self.n, self.p)
        ci = self.ci[phones]
        if ci.any():
            ctx = [j for j in range(self.n) if j != self.p]
            win[np.ix_(ci, ctx)] = -1
        phone_code = np.zeros(len(phones), dtype=np.int64)
        for j in range(self.n):
            phone_code = phone_code * self.base + (win[:, j].astype(np.int64) + 1)
        lengths = (ends - starts).astype(np.int64)
        pc = self.tid2pc[ali].astype(np.int64)
        codes = (pc + 1) * (self.base ** self.n) + np.repeat(phone_code, lengths)
        self._codes.append(codes)
        self._feats.append(np.asarray(feats, dtype=np.float32))
        self._pending += len(ali)
        self.num_done += 1
        self.num_frames += len(ali)
        if self._pending >= self.block_frames:
            self._flush()
        return True

    def _flush(self) -> None:
        if not self._codes:
            return
        codes = np.concatenate(self._codes)
        x = np.concatenate(self._feats).astype(np.float64)
        self._codes, self._feats, self._pending = [], [], 0
        rows = np.concatenate([np.ones((len(x), 1)), x, x * x], axis=1)
        uniq, summed = reduce_sorted(codes, rows)
        if self._rows is None:
            self._uniq, self._rows = uniq, summed
            return
        self._uniq, self._rows = reduce_sorted(np.concatenate([self._uniq, uniq]),
                                                np.concatenate([self._rows, summed]))

    def result(self, name: str = "<tree stats>") -> TreeStats:
        self._flush()
        dim = self.dim or 0
        n = self.n
        if self._rows is None:
            return TreeStats(n, self.p, self.opts.var_floor, np.zeros((0, n + 1), np.int32),
                             np.zeros(0), np.zeros((0, dim)), np.zeros((0, dim)), name=name)
        events = decode_codes(self._uniq, self.base, n + 1)
        r = self._rows
        return TreeStats(n, self.p, self.opts.var_floor, events, r[:, 0], r[:, 1:1 + dim],
                         r[:, 1 + dim:], name=name)


# ------------------------------------------------------------------ features of a data dir
def iter_tree_features(data_dir: str, options: Optional[TreeFeatureOptions] = None,
                       keys: Optional[Iterable[str]] = None) -> Iterator[Tuple[str, np.ndarray]]:
    """(utterance, features) of a data dir in ``feats.scp`` order (only those in ``keys``
    when given): per-speaker CMVN from ``cmvn.scp`` (by ``utt2spk``), then deltas; float32.
    As Kaldi's ``apply-cmvn $cmvn_opts --utt2spk=... | add-deltas $delta_opts``."""
    from hybridasr.features.cmvn import apply_cmvn, parse_cmvn_opts
    from hybridasr.features.context import add_deltas
    from hybridasr.kaldi.io.random_access import matrices
    from hybridasr.kaldi.io.table import read_map

    opts = options or TreeFeatureOptions()
    feats_scp = os.path.join(data_dir, "feats.scp")
    cmvn_scp = os.path.join(data_dir, "cmvn.scp")
    utt2spk_path = os.path.join(data_dir, "utt2spk")
    for f in (feats_scp, cmvn_scp):
        if not os.path.isfile(f):
            raise FormatError(f"missing file {f} (the tree statistics use the features with "
                              f"per-speaker CMVN: run steps/make_mfcc.sh and "
                              f"steps/compute_cmvn_stats.sh)")
    cmvn_kw = parse_cmvn_opts(opts.cmvn_opts, source="--cmvn-opts")
    utt2spk = dict(read_map(utt2spk_path)) if os.path.isfile(utt2spk_path) else None
    with matrices(cmvn_scp) as table:
        cmvn = {k: np.asarray(v, np.float64) for k, v in table.items()}
    wanted = set(keys) if keys is not None else None
    with matrices(feats_scp) as table:
        for utt in list(table.keys()):
            if wanted is not None and utt not in wanted:
                continue
            spk = utt2spk.get(utt) if utt2spk is not None else utt
            if spk is None:
                raise FormatError(f"{utt2spk_path}: no speaker for utterance {utt}")
            stats = cmvn.get(spk)
            if stats is None:
                raise FormatError(f"{cmvn_scp}: no CMVN stats for {spk} (utterance {utt})")
            x = apply_cmvn(np.asarray(table[utt], dtype=np.float32), stats, **cmvn_kw)
            if opts.delta_order:
                x = add_deltas(x, opts.delta_order, opts.delta_window)
            if opts.frame_subsampling_factor > 1:
                x = x[::opts.frame_subsampling_factor]
            yield utt, np.asarray(x, dtype=np.float32)


@dataclass
class AccReport:
    """What ``accumulate_tree_stats`` did (Kaldi's acc-tree-stats log, as numbers)."""
    done: int = 0
    no_alignment: int = 0
    wrong_length: int = 0
    bad_alignment: int = 0
    frames: int = 0
    events: int = 0


def accumulate_tree_stats(tm: TransitionModel, data_dir: str,
                          alignments: Iterable[Tuple[str, np.ndarray]],
                          options: Optional[TreeStatsOptions] = None,
                          feature_options: Optional[TreeFeatureOptions] = None,
                          name: str = "<tree stats>") -> Tuple[TreeStats, AccReport]:
    """Kaldi's ``acc-tree-stats`` over a data dir's utterances (in ``feats.scp`` order) and
    the alignments of them found in ``alignments`` (others are ignored): an utterance without
    an alignment, or whose alignment has another length than its features, is counted and
    skipped (as Kaldi's)."""
    from hybridasr.kaldi.io.table import iter_map_lines

    feats_scp = os.path.join(data_dir, "feats.scp")
    if not os.path.isfile(feats_scp):
        raise FormatError(f"missing file {feats_scp} (run steps/make_mfcc.sh first)")
    keys = [k for _, k, _ in iter_map_lines(feats_scp)]
    wanted = set(keys)
    ali = {utt: a for utt, a in alignments if utt in wanted}
    acc = TreeStatsAccumulator(tm, options)
    rep = AccReport(no_alignment=sum(1 for k in keys if k not in ali))
    for utt, x in iter_tree_features(data_dir, feature_options, keys=ali.keys()):
        a = ali[utt]
        if len(a) != x.shape[0]:
            log.warning("utterance %s: alignment has wrong size %d vs. %d feature frames",
                        utt, len(a), x.shape[0])
            rep.wrong_length += 1
            continue
        if acc.add(a, x, f"utterance {utt}"):
            rep.done += 1
            if rep.done % 1000 == 0:
                log.info("processed %d utterances", rep.done)
        else:
            rep.bad_alignment += 1
    stats = acc.result(name)
    rep.frames, rep.events = int(round(stats.total_count())), stats.num_events
    log.info("accumulated statistics for %d utterances, %d without an alignment, %d with a "
             "wrong length, %d with a bad alignment; %d separate statistics "
             "(context-dependent states), %d frames", rep.done, rep.no_alignment,
             rep.wrong_length, rep.bad_alignment, rep.events, rep.frames)
    return stats, rep
