"""Weighted sums of frame log-likelihood tables, as Kaldi's ``matrix-sum --scale1 --scale2``.

Decoding with the sum of a network's and a GMM's log-likelihoods over the same pdfs is Kaldi's
``DecodableSumScaled`` (``decoder/decodable-sum.h``) and the frame-level form of
``steps/decode_combine.sh`` (lattice weights 0.5 each): ``steps/nnet/decode.sh --gmm-dir``
writes ``(1 - w) * network + w * GMM`` for each utterance. The first table is read in its order
(an archive, ``ark:-`` too, or an scp); the others by key (an scp is read where asked, an
archive is loaded whole). An utterance missing from another table is skipped with a warning and
counted, as Kaldi's table tools skip; matrices of different shapes are an error naming the
utterance and both tables (a GMM of another tree has another number of pdfs)."""
from __future__ import annotations

import logging
from contextlib import ExitStack
from typing import Dict, Sequence, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError, HybridAsrError

log = logging.getLogger("hybridasr.decode")

__all__ = ["sum_matrix_tables"]


def _by_key(rspecifier: str, stack: ExitStack):
    """A mapping key -> matrix of ``rspecifier``: an scp read where asked, else loaded."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.io.random_access import matrices
    from hybridasr.kaldi.io.specifier import parse_rspecifier

    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp" and spec.rxfilename != "-" and not spec.rxfilename.endswith("|"):
        return stack.enter_context(matrices(spec.rxfilename))
    table: Dict[str, np.ndarray] = {}
    for key, mat in read_matrices(rspecifier):
        table[key] = mat
    return table


def sum_matrix_tables(rspecifiers: Sequence[str], scales: Sequence[float],
                      wspecifier: str) -> Tuple[int, int]:
    """Writes ``sum_i scales[i] * table_i[utt]`` for each utterance of the first table to
    ``wspecifier``; returns (written, skipped: missing from another table). None written
    (with some skipped) is an error."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.io.table_writer import MatrixWriter

    if len(rspecifiers) < 2:
        raise ConfigError("give at least two tables to sum")
    if len(scales) != len(rspecifiers):
        raise ConfigError(f"{len(scales)} scales for {len(rspecifiers)} tables")
    written = skipped = 0
    with ExitStack() as stack:
        others = [_by_key(r, stack) for r in rspecifiers[1:]]
        with MatrixWriter(wspecifier) as writer:
            for key, mat in read_matrices(rspecifiers[0]):
                total = np.float32(scales[0]) * np.asarray(mat, dtype=np.float32)
                missing = next((r for r, t in zip(rspecifiers[1:], others) if key not in t),
                               None)
                if missing is not None:
                    log.warning("utterance %s is not in %s: skipped", key, missing)
                    skipped += 1
                    continue
                for r, t, s in zip(rspecifiers[1:], others, scales[1:]):
                    m = np.asarray(t[key], dtype=np.float32)
                    if m.shape != total.shape:
                        raise FormatError(f"utterance {key}: {m.shape[0]} x {m.shape[1]} in "
                                          f"{r}, {total.shape[0]} x {total.shape[1]} in "
                                          f"{rspecifiers[0]} (another number of frames, or "
                                          f"of pdfs: another tree?)")
                    total += np.float32(s) * m
                writer.write(key, total)
                written += 1
        if written == 0 and skipped:
            raise HybridAsrError(f"no utterance of {rspecifiers[0]} is in every table "
                                 f"({skipped} skipped)")
    log.info("summed %d utterances of %d tables, skipped %d", written, len(rspecifiers),
             skipped)
    return written, skipped
