"""Chunks of an utterance for chain training, in Kaldi's ``--chunk-width 140,100,160`` style
(``nnet3-chain-get-egs --num-frames``; widths in input frames, multiples of the frame
subsampling factor; the first is the primary width).

A simplification of Kaldi's ``UtteranceSplitter``: one width per utterance (so the chunks of
one utterance batch together), the one whose whole number of chunks covers the utterance with
the least overlap or gap (ties: the earlier width in the list); the chunks' starts spread
evenly from the first frame to the last, at the output rate. An utterance shorter than the
smallest width gets no chunk (Kaldi: "not producing egs for utterance ... because it is too
short"), and ``chunk_ranges`` returns []."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from hybridasr.errors import ConfigError

__all__ = ["parse_chunk_widths", "chunk_ranges"]


def parse_chunk_widths(text: str, frame_subsampling_factor: int) -> List[int]:
    try:
        widths = [int(w) for w in str(text).split(",") if w.strip()]
    except ValueError:
        raise ConfigError(f"--chunk-width={text}: expected comma-separated integers") from None
    if not widths or any(w <= 0 or w % frame_subsampling_factor for w in widths):
        raise ConfigError(f"--chunk-width={text}: widths must be positive multiples of the "
                          f"frame subsampling factor {frame_subsampling_factor}")
    return widths


def chunk_ranges(num_output_frames: int, widths: Sequence[int],
                 frame_subsampling_factor: int) -> List[Tuple[int, int]]:
    """(first output frame, output frames) of each chunk of an utterance."""
    f = frame_subsampling_factor
    best = None
    for rank, w in enumerate(widths):
        w_out = w // f
        if w_out > num_output_frames:
            continue
        n = max(1, int(round(num_output_frames / w_out)))
        key = (abs(n * w_out - num_output_frames), rank)
        if best is None or key < best[0]:
            best = (key, n, w_out)
    if best is None:
        return []
    _, n, w_out = best
    span = num_output_frames - w_out
    if n == 1:
        return [(span // 2, w_out)]
    return [(int(round(i * span / (n - 1))), w_out) for i in range(n)]
