"""What a batching strategy produces: plans of batches, holding no features.

A strategy gets the epoch's *items* — ``Item(utt, start, end)`` spans in output frames (whole
utterances, chunks, or pieces of split long utterances) — and returns ``BatchPlan``s; the
loader turns them into tensors in worker processes.

A strategy may return a plan type of its own instead (frame shuffling's buffers): any object
with ``items``, ``num_batches``, ``num_sequences``, ``num_real_frames``, ``num_padded_frames``
and ``load(read_items, dim)``. A loader worker calls ``load`` with ``read_items(items)`` (the
items' (feats, targets), each utterance read once) and sends back what it returns, whose
``batches()`` then gives the ``hybridasr.data.batch.Batch``es in the training process.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Sequence, Tuple


class Item(NamedTuple):
    """Frames [start, end) of utterance ``utt`` (in the transform's output frames);
    ``counted``: the frames [a, b) the loss counts (None: all), for overlapping chunks
    counted once (``--chunking-loss=once``)."""
    utt: str
    start: int
    end: int
    counted: Optional[Tuple[int, int]] = None

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass
class BatchPlan:
    """One batch: its items (``None`` = an idle stream, length 0).

    ``reset``/``carry_state``: for strategies whose model carries recurrent state from batch
    to batch (row s starts a new utterance where ``reset[s]``). ``joins_previous``: loaded
    together with the batch before it, by one loader worker (a plan unit): the batches of the
    chunks (or split pieces) of the same utterances, which the unit reads once and cuts (see
    ``hybridasr.data.batching.groups``)."""
    items: List[Optional[Item]]
    reset: Optional[List[bool]] = None
    carry_state: bool = False
    joins_previous: bool = False

    @property
    def lengths(self) -> List[int]:
        return [it.length if it is not None else 0 for it in self.items]

    @property
    def num_real_frames(self) -> int:
        return sum(self.lengths)

    @property
    def num_padded_frames(self) -> int:
        lens = self.lengths
        return len(lens) * max(lens, default=0)

    @property
    def num_sequences(self) -> int:
        return sum(1 for it in self.items if it is not None)

    @property
    def num_batches(self) -> int:
        return 1


@dataclass
class Limits:
    max_frames: int = 0  # padded frames per batch (B x longest); 0 = no limit
    max_seqs: int = 0  # sequences per batch; 0 = no limit

    def fits(self, num_seqs: int, longest: int) -> bool:
        if self.max_seqs and num_seqs > self.max_seqs:
            return False
        return not self.max_frames or num_seqs * longest <= self.max_frames


def by_utterance(items: Sequence[Item]) -> List[List[Item]]:
    """Runs of consecutive items of the same utterance (``make_items`` keeps the chunks or
    pieces of an utterance together and in order)."""
    out: List[List[Item]] = []
    for it in items:
        if out and out[-1][0].utt == it.utt:
            out[-1].append(it)
        else:
            out.append([it])
    return out
