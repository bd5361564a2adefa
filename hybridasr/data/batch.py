"""``Batch``: what the trainer gets, and ``collate`` building one from loaded items."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

from hybridasr.features.transform import IGNORE_INDEX


@dataclass
class Batch:
    feats: torch.Tensor  # float32 [B, T, D], zero padded
    targets: Optional[torch.Tensor]  # int64 [B, T], padded with -100 (None without targets)
    lengths: torch.Tensor  # int64 [B]
    keys: List[str]  # utterance of each row ("" for an idle TBPTT stream)
    spans: List[Tuple[int, int]] = field(default_factory=list)  # (start, end) output frames
    reset: Optional[torch.Tensor] = None  # bool [B] (TBPTT): row starts a new utterance
    carry_state: bool = False  # TBPTT: keep each row's recurrent state for the next batch

    @property
    def num_real_frames(self) -> int:
        return int(self.lengths.sum())

    @property
    def num_padded_frames(self) -> int:
        return int(self.feats.shape[0] * self.feats.shape[1])

    def to(self, device, non_blocking: bool = False) -> "Batch":
        mv = lambda t: None if t is None else t.to(device, non_blocking=non_blocking)  # noqa
        return Batch(mv(self.feats), mv(self.targets), self.lengths, self.keys, self.spans,
                     mv(self.reset), self.carry_state)

    def pin_memory(self) -> "Batch":
        pin = lambda t: None if t is None else t.pin_memory()  # noqa
        return Batch(pin(self.feats), pin(self.targets), self.lengths, self.keys, self.spans,
                     self.reset, self.carry_state)


def collate(rows: Sequence[Optional[Tuple[np.ndarray, Optional[np.ndarray]]]], keys, spans,
            dim: int, reset=None, carry_state: bool = False) -> Batch:
    """Pads (feats, targets) rows into a Batch; a ``None`` row is an empty (length 0) one."""
    lens = [0 if r is None else len(r[0]) for r in rows]
    B, T = len(rows), max(max(lens, default=0), 1)
    feats = np.zeros((B, T, dim), np.float32)
    with_targets = any(r is not None and r[1] is not None for r in rows)
    targets = np.full((B, T), IGNORE_INDEX, np.int64) if with_targets else None
    for i, r in enumerate(rows):
        if r is None:
            continue
        feats[i, :lens[i]] = r[0]
        if targets is not None:
            targets[i, :lens[i]] = r[1]
    return Batch(torch.from_numpy(feats),
                 None if targets is None else torch.from_numpy(targets),
                 torch.tensor(lens, dtype=torch.int64), list(keys), list(spans),
                 None if reset is None else torch.tensor(reset, dtype=torch.bool), carry_state)
