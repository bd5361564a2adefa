"""Kaldi's ``copy-feats``: a feature table copied to an ark/scp (atomically), optionally
compressed, with ``utt2num_frames``."""
from __future__ import annotations

import logging

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.matrix_reader import read_matrices
from hybridasr.kaldi.io.specifier import parse_wspecifier
from hybridasr.kaldi.io.table_writer import MatrixWriter, TextTableWriter

log = logging.getLogger("hybridasr.features")


def copy_feature_table(rspecifier: str, wspecifier: str, compress: bool = False,
                       compression_method: int = 1, num_frames: str | None = None) -> int:
    """Copies every matrix of ``rspecifier`` (``scp:`` read with Kaldi's exact decompression)
    to ``wspecifier``; ``num_frames``: where to write ``utt rows`` lines (``ark,t:<file>``, a
    plain path, or ``ark,t:-``)."""
    frames = []
    with MatrixWriter(wspecifier, compression_method if compress else None) as w:
        for key, mat in read_matrices(rspecifier):
            if mat.ndim != 2:
                raise FormatError(f"{rspecifier}: {key} is not a matrix")
            w.write(key, mat.astype(np.float32, copy=False))
            frames.append((key, mat.shape[0]))
    if num_frames:
        with TextTableWriter(parse_wspecifier(num_frames, plain_ok=True)) as t:
            for key, n in frames:
                t.write(key, n)
    log.info("copied %d feature matrices", len(frames))
    return len(frames)
