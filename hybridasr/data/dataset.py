"""``UtteranceDataset``: a Kaldi data dir's features (and frame targets) by utterance.

Features and targets are read by key on demand (``hybridasr.kaldi.io.random_access``: nothing is
copied into memory up front, each ark is opened once per process, compressed features are
decoded with Kaldi's arithmetic); lengths come from ``utt2num_frames`` or the ark headers.
Per-speaker CMVN stats (small) are read once; a data dir without ``cmvn.scp`` where the
transform normalises per speaker is an error naming the file and the command that makes it.
Every feature matrix is checked for NaN/inf as it is read (an error naming the utterance and
its ark). Features and targets of different lengths are trimmed to the shorter,
as Kaldi nnet1 does within ``--length-tolerance``: with the import's ``target_lengths`` the
trimmed length is known up front (``lengths``, what batching plans with); without it (an older
import dir, other targets) both are trimmed when read, when they differ by less than
``length_tolerance`` frames. The object pickles without open files, so loader workers rebuild
their own readers. With ``num_classes``, every target vector is checked when it is read (a
pdf outside the network's outputs names the utterance): no pass over all targets before the
first batch.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
from collections import OrderedDict
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np

from hybridasr.align.length_tolerance import DEFAULT_LENGTH_TOLERANCE, within_tolerance
from hybridasr.errors import FormatError
from hybridasr.features.transform import FeatureTransform
from hybridasr.kaldi.io.matrix_lengths import read_lengths
from hybridasr.kaldi.io.random_access import int_vectors, matrices
from hybridasr.kaldi.io.table import read_int_map, read_map

log = logging.getLogger(__name__)


def missing_cmvn_message(data_dir: str) -> str:
    """The error for a data dir without the ``cmvn.scp`` a model's transform needs, with the
    command that makes it (for a split dir ``<data>/split<N>/<j>``: of ``<data>``, then split
    again)."""
    path = os.path.join(data_dir, "cmvn.scp")
    parts = os.path.normpath(data_dir).split(os.sep)
    src, then = data_dir, ""
    if len(parts) >= 3 and parts[-1].isdigit() and re.fullmatch(r"split\d+(utt)?", parts[-2]):
        src = os.sep.join(parts[:-2]) or "."
        then = f", then remove {os.sep.join(parts[:-1])} so that it is split again"
    return (f"{path}: no such file, but the features are normalised per speaker (CMVN: the "
            f"model's --norm-means=true): make it with steps/compute_cmvn_stats.sh {src} "
            f"<log-dir> <cmvn-dir>{then} (never skipped silently: without it the network "
            f"sees features it was not trained on)")


class UtteranceDataset:
    # without target_lengths: targets and features this many frames apart or more are an error
    length_tolerance = DEFAULT_LENGTH_TOLERANCE

    def __init__(self, feats_scp: str, targets_scp: Optional[str] = None,
                 utt2spk: Optional[str] = None, cmvn_scp: Optional[str] = None,
                 transform: Optional[FeatureTransform] = None,
                 utt2num_frames: Optional[str] = None, target_lengths: Optional[str] = None,
                 num_classes: Optional[int] = None):
        self.feats_scp, self.targets_scp = feats_scp, targets_scp
        self.num_classes = num_classes
        self.target_lengths_file = target_lengths if targets_scp else None
        self.target_lengths: Optional[Dict[str, int]] = (
            dict(read_int_map(target_lengths)) if self.target_lengths_file else None)
        self.transform = transform or FeatureTransform()
        self.raw_lengths: Dict[str, int] = dict(read_lengths(feats_scp, utt2num_frames))
        self.utt2spk = dict(read_map(utt2spk)) if utt2spk else None
        self.cmvn: Optional[Dict[str, np.ndarray]] = None
        if cmvn_scp:
            with matrices(cmvn_scp) as stats:
                self.cmvn = {k: np.asarray(v, np.float64) for k, v in stats.items()}
            for k, v in self.cmvn.items():
                if not np.isfinite(v).all():
                    raise FormatError(f"{cmvn_scp}: the CMVN stats of {k} hold NaN or inf: "
                                      f"its features are not finite; make them again")
        self._feats = None
        self._targets = None
        self.cache_utts = 0  # raw utterances kept (TBPTT reads each one window at a time)
        self._cache: "OrderedDict[str, tuple]" = OrderedDict()
        keys = list(self.raw_lengths)
        if targets_scp:
            have = set(self._target_reader().keys())
            missing = [k for k in keys if k not in have]
            if missing:
                log.warning("%d of %d utterances have no targets in %s (e.g. %s): skipped",
                            len(missing), len(keys), targets_scp, missing[0])
                keys = [k for k in keys if k in have]
        if self.cmvn is not None:
            for k in keys:
                self._cmvn_key(k)  # fail early on a speaker without stats
        if self.target_lengths is not None:
            self._check_target_lengths(keys)
        self.keys: List[str] = keys
        self.lengths: Dict[str, int] = {k: self._usable_length(k) for k in keys}

    @classmethod
    def from_data_dir(cls, data_dir: str, targets_scp: Optional[str] = None,
                      transform: Optional[FeatureTransform] = None,
                      use_cmvn: bool = True,
                      target_lengths: Optional[str] = None,
                      num_classes: Optional[int] = None) -> "UtteranceDataset":
        """A Kaldi data dir: ``feats.scp``, ``cmvn.scp`` when ``use_cmvn`` (the transform
        normalises per speaker: then a missing ``cmvn.scp`` is an error, never a silent skip)
        and, where present, ``utt2spk`` and ``utt2num_frames``; ``target_lengths``: the
        import's (``<ali-dir>/target_lengths``), or None; ``num_classes``: targets must be
        below it."""
        def opt(name):
            p = os.path.join(data_dir, name)
            return p if os.path.exists(p) else None

        feats = os.path.join(data_dir, "feats.scp")
        if not os.path.exists(feats):
            raise FormatError(f"{data_dir}: no feats.scp (run steps/make_mfcc.sh first)")
        cmvn = None
        if use_cmvn:
            cmvn = os.path.join(data_dir, "cmvn.scp")
            if not os.path.exists(cmvn):
                raise FormatError(missing_cmvn_message(data_dir))
        return cls(feats, targets_scp, opt("utt2spk"), cmvn,
                   transform, opt("utt2num_frames"), target_lengths, num_classes)

    # --- lengths: features and targets trimmed to the shorter (Kaldi nnet1) -------------
    def _check_target_lengths(self, keys: List[str]) -> None:
        for k in keys:
            n = self.target_lengths.get(k)
            if n is None:
                raise FormatError(f"{self.target_lengths_file}: no entry for utterance {k} "
                                  f"of {self.targets_scp}")
            if n > self.raw_lengths[k]:
                raise FormatError(f"utterance {k}: {n} targets ({self.target_lengths_file}) "
                                  f"but {self.raw_lengths[k]} feature frames in "
                                  f"{self.feats_scp}: the import cuts targets to the features, "
                                  f"so the features changed since; import the alignments again")

    def _usable_length(self, utt: str) -> int:
        n = self.raw_lengths[utt]
        return n if self.target_lengths is None else min(n, self.target_lengths[utt])

    # --- readers, opened lazily (and again in each worker process) ---------------------
    def _feat_reader(self):
        if self._feats is None:
            self._feats = matrices(self.feats_scp)
        return self._feats

    def _target_reader(self):
        if self._targets is None:
            self._targets = int_vectors(self.targets_scp)
        return self._targets

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_feats"] = state["_targets"] = None
        state["_cache"] = OrderedDict()
        return state

    # --- access -----------------------------------------------------------------------
    @property
    def output_lengths(self) -> Dict[str, int]:
        """Lengths in the transform's output frames (what batching plans with)."""
        t = self.transform
        return {k: t.output_length(n) for k, n in self.lengths.items()}

    def _cmvn_key(self, utt: str) -> str:
        key = self.utt2spk.get(utt) if self.utt2spk is not None else utt
        if key is None:
            raise FormatError(f"utterance {utt} is not in utt2spk")
        if key not in self.cmvn:
            raise FormatError(f"no CMVN stats for {key} (utterance {utt}) in the cmvn scp")
        return key

    def cmvn_stats(self, utt: str) -> Optional[np.ndarray]:
        return None if self.cmvn is None else self.cmvn[self._cmvn_key(utt)]

    def raw_feats(self, utt: str) -> np.ndarray:
        """The utterance's features as stored; a NaN or inf in them is an error naming the
        utterance and where it is (one ``isfinite`` pass per read: cheap beside the read)."""
        reader = self._feat_reader()
        try:
            feats = reader[utt]
        except KeyError:
            raise FormatError(f"utterance {utt} is not in {self.feats_scp}") from None
        finite = np.isfinite(feats)
        if not finite.all():
            bad = np.argwhere(~finite)
            frame = int(bad[0][0]) if feats.ndim > 1 else 0
            raise FormatError(f"{self.feats_scp}: utterance {utt} ({reader.location(utt)}) has "
                              f"{len(bad)} NaN or inf feature values (the first in frame "
                              f"{frame}): make its features again or leave it out of the "
                              f"data dir (utils/subset_data_dir.sh, utils/fix_data_dir.sh)")
        return feats

    def raw_targets(self, utt: str) -> Optional[np.ndarray]:
        if not self.targets_scp:
            return None
        ali = np.asarray(self._target_reader()[utt]).reshape(-1)
        if self.num_classes is not None and ali.size and \
                (int(ali.min()) < 0 or int(ali.max()) >= self.num_classes):
            raise FormatError(f"{self.targets_scp}: utterance {utt} has target "
                              f"{int(ali.max())} (min {int(ali.min())}) outside the network's "
                              f"{self.num_classes} outputs")
        n = self.raw_lengths[utt]
        if self.target_lengths is not None:
            if len(ali) != self.target_lengths[utt]:
                raise FormatError(f"utterance {utt}: {len(ali)} targets in {self.targets_scp} "
                                  f"but {self.target_lengths[utt]} in "
                                  f"{self.target_lengths_file}")
        elif len(ali) != n and not within_tolerance(len(ali), n, self.length_tolerance):
            raise FormatError(f"utterance {utt}: {len(ali)} targets in {self.targets_scp} but "
                              f"{n} feature frames (not within the length tolerance of "
                              f"{self.length_tolerance} frames)")
        return ali[:n]

    def load(self, utt: str, start: int = 0,
             end: Optional[int] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """Transformed features [T, D] float32 and targets [T] int64 (or None) of output
        frames [start, end)."""
        feats, ali = self._raw(utt)
        x = self.transform(feats, self.cmvn_stats(utt), start, end)
        y = None if ali is None else self.transform.targets(ali, start, start + len(x))
        return x, y

    def _raw(self, utt: str):
        hit = self._cache.get(utt)
        if hit is not None:
            self._cache.move_to_end(utt)
            return hit
        feats = self.raw_feats(utt)
        if feats.shape[0] != self.raw_lengths[utt]:
            raise FormatError(f"utterance {utt}: {feats.shape[0]} frames, but its length "
                              f"was given as {self.raw_lengths[utt]}")
        ali = self.raw_targets(utt)
        if ali is not None and len(ali) < len(feats):
            feats = feats[:len(ali)]  # both trimmed to the shorter (Kaldi nnet1)
        pair = (feats, ali)
        if self.cache_utts:
            self._cache[utt] = pair
            while len(self._cache) > self.cache_utts:
                self._cache.popitem(last=False)
        return pair

    @contextlib.contextmanager
    def holding(self, num_utts: int):
        """Keeps up to ``num_utts`` raw utterances read inside the block (a loader unit cutting
        several chunks or pieces of each reads it once); the cache shrinks back after."""
        before = self.cache_utts
        self.cache_utts = max(before, int(num_utts))
        try:
            yield self
        finally:
            self.cache_utts = before
            while len(self._cache) > before:
                self._cache.popitem(last=False)

    def __getitem__(self, utt: str):
        return self.load(utt)

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys)

    def raw_pairs(self, max_utts: Optional[int] = None, seed: Optional[int] = None):
        """(raw feats, cmvn stats) of the utterances, for ``FeatureTransform.fit``: all of them
        in order, or ``max_utts`` of them (a random subset drawn with ``seed``, read in file
        order)."""
        keys = self.keys
        if max_utts and max_utts < len(keys):
            rng = np.random.default_rng(0 if seed is None else int(seed) & 0xFFFFFFFF)
            keys = [keys[i] for i in np.sort(rng.choice(len(keys), max_utts, replace=False))]
        for utt in keys:
            yield self.raw_feats(utt), self.cmvn_stats(utt)

    def feature_dim(self) -> int:
        return int(self.raw_feats(self.keys[0]).shape[1])

    def fit_transform(self, stats_path: Optional[str] = None, max_utts: Optional[int] = None,
                      seed: Optional[int] = None) -> FeatureTransform:
        """Computes global normalisation statistics if the transform needs them (reading
        them from ``stats_path`` when it exists, writing them there otherwise), over
        ``max_utts`` utterances drawn with ``seed`` (``raw_pairs``) or all."""
        import json

        from hybridasr.utils.atomic import atomic_open

        t = self.transform
        if not t.needs_fit:
            return t
        if stats_path and os.path.exists(stats_path):
            with open(stats_path, encoding="utf-8") as f:
                d = json.load(f)
            t.global_mean, t.global_std = d["global_mean"], d["global_std"]
            return t
        t.fit(self.raw_pairs(max_utts, seed))
        if stats_path:
            with atomic_open(stats_path, "w", encoding="utf-8") as f:
                json.dump({"global_mean": t.global_mean, "global_std": t.global_std}, f)
        return t
