"""Kaldi's ``copy-feats``: a feature table copied to an ark/scp (atomically), optionally
compressed, with ``utt2num_frames``."""
from __future__ import annotations

import logging

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.features.feature_reader import iter_feature_scp
from hybridasr.features.specifiers import text_table_path
from hybridasr.kaldi.table import ArkScpWriter, parse_wspecifier, write_map

log = logging.getLogger("hybridasr.features")


def iter_feature_table(rspecifier: str):
    """(key, matrix) from ``scp:feats.scp`` (Kaldi-exact decompression) or ``ark:f.ark``."""
    if ":" not in rspecifier:
        raise ConfigError(f"bad rspecifier {rspecifier!r}: expected scp:<file> or ark:<file>")
    kinds, path = rspecifier.split(":", 1)
    kinds = kinds.split(",")
    if "scp" in kinds:
        yield from iter_feature_scp(path)
    elif "ark" in kinds:
        import kaldiio

        try:
            for key, mat in kaldiio.load_ark(path):
                yield key, np.asarray(mat)
        except (OSError, ValueError) as e:
            raise FormatError(f"cannot read {path}: {e}") from None
    else:
        raise ConfigError(f"bad rspecifier {rspecifier!r}: expected scp:<file> or ark:<file>")


def copy_feature_table(rspecifier: str, wspecifier: str, compress: bool = False,
                       compression_method: int = 1, num_frames: str | None = None) -> int:
    _, ark, scp = parse_wspecifier(wspecifier)
    frames = []
    with ArkScpWriter(ark, scp, compression_method=compression_method if compress else None) as w:
        for key, mat in iter_feature_table(rspecifier):
            if mat.ndim != 2:
                raise FormatError(f"{rspecifier}: {key} is not a matrix")
            w.write(key, mat.astype(np.float32, copy=False))
            frames.append((key, mat.shape[0]))
    if num_frames:
        write_map(text_table_path(num_frames), frames)
    log.info("copied %d feature matrices", len(frames))
    return len(frames)
