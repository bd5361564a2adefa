"""Kaldi's ``compute-cmvn-stats``: CMVN stats of a feature table, per speaker or utterance.

Reads ``feats.scp`` once, in order (with Kaldi's exact decompression), keeping only each
utterance's stats, then sums them per speaker in ``spk2utt`` order. An utterance of spk2utt
without features is skipped with a warning (as Kaldi does); a speaker with none gets no stats.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np

from hybridasr.errors import FormatError, HybridAsrError
from hybridasr.features.cmvn import accumulate_cmvn_stats, fake_cmvn_stats, fake_dims
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.kaldi.io.specifier import parse_wspecifier
from hybridasr.kaldi.io.table import read_map
from hybridasr.kaldi.io.table_writer import MatrixWriter

log = logging.getLogger("hybridasr.features")


def utterance_stats(feats_scp: str) -> "OrderedDict[str, np.ndarray]":
    """utt -> Kaldi stats of its features, in feats.scp order."""
    out: "OrderedDict[str, np.ndarray]" = OrderedDict()
    for utt, feats in iter_feature_scp(feats_scp):
        if feats.ndim != 2:
            raise FormatError(f"{feats_scp}: {utt} is not a feature matrix")
        out[utt] = accumulate_cmvn_stats(feats)
    return out


def compute_cmvn_table(feats_scp: str, wspecifier: str, spk2utt: Optional[str] = None,
                       fake: bool = False, fake_dims_list: Sequence[int] = ()) -> int:
    """Writes Kaldi-format stats (2 x (dim+1) doubles) per speaker (or per utterance when
    ``spk2utt`` is None); returns how many were written."""
    spec = parse_wspecifier(wspecifier)  # a bad one fails before the features are read
    stats = utterance_stats(feats_scp)
    if not stats:
        raise HybridAsrError(f"{feats_scp} has no features")
    dim = next(iter(stats.values())).shape[1] - 1
    if spk2utt:
        groups = [(spk, utts.split()) for spk, utts in read_map(spk2utt).items()]
    else:
        groups = [(utt, [utt]) for utt in stats]
    written = 0
    with MatrixWriter(spec) as writer:
        for key, utts in groups:
            if fake:
                if not any(u in stats for u in utts):
                    log.warning("no features for speaker %s", key)
                    continue
                writer.write(key, fake_cmvn_stats(dim))
                written += 1
                continue
            acc = None
            for u in utts:
                if u not in stats:
                    log.warning("no features for utterance %s (speaker %s)", u, key)
                    continue
                if stats[u].shape[1] != dim + 1:
                    raise FormatError(f"{feats_scp}: {u} has dimension {stats[u].shape[1] - 1}, "
                                      f"others {dim}")
                acc = stats[u].copy() if acc is None else acc + stats[u]
            if acc is None:
                log.warning("no features for any utterance of speaker %s: no stats", key)
                continue
            if fake_dims_list:
                acc = fake_dims(acc, fake_dims_list)
            writer.write(key, acc)
            written += 1
        if written == 0:
            raise HybridAsrError(f"no CMVN stats written: no speaker of {spk2utt} has features "
                                 f"in {feats_scp}")
    log.info("wrote CMVN stats for %d %s", written, "speakers" if spk2utt else "utterances")
    return written
