"""``--chunking=size:step``: overlapping windows of utterances, parsed here once.

Training (``DataConfig.chunks``) cuts each utterance into windows of ``size`` frames every
``step`` frames (RETURNN chunking) before a strategy that batches whole utterances gets them:
chunking modifies such a strategy, and one that cuts utterances itself (TBPTT, frame
shuffling: ``splits_utterances``) refuses it. Decoding (``pybin/forward.py``) runs the
network over the same windows and keeps each one's middle ``step`` outputs
(``even_context``: the other ``size - step`` frames are context, half on each side).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from hybridasr.data.batching.plans import Item
from hybridasr.errors import ConfigError


def parse_chunking(text: str, flag: str = "--chunking",
                   even_context: bool = False) -> Optional[Tuple[int, int]]:
    """(size, step) of ``size:step``; None when ``text`` is empty. ConfigError unless both
    are integers with 1 <= step <= size (a larger step would skip frames) and, with
    ``even_context``, ``size - step`` is even."""
    if not text:
        return None
    try:
        size, step = (int(x) for x in text.split(":"))
    except ValueError:
        raise ConfigError(f"{flag}={text}: expected size:step (two integers)") from None
    if not 1 <= step <= size:
        raise ConfigError(f"{flag}={text}: needs 1 <= step <= size (a step larger than the "
                          f"size would skip frames)")
    if even_context and (size - step) % 2:
        raise ConfigError(f"{flag}={text}: needs an even size - step (the context is split "
                          f"equally between both sides)")
    return size, step


def chunk(item: Item, size: int, step: int, once: bool = False) -> List[Item]:
    """RETURNN chunking: windows of ``size`` every ``step`` frames until the end is covered
    (the last one may be shorter). ``once``: each chunk's ``counted`` frames are its share of
    the item, the overlap of neighbouring chunks split at its middle, so that the loss counts
    every frame once and where it has the most context."""
    out, s = [], item.start
    while True:
        out.append(Item(item.utt, s, min(s + size, item.end)))
        if s + size >= item.end:
            break
        s += step
    if once and len(out) > 1:
        cuts = [item.start] + [(b.start + a.end) // 2 for a, b in zip(out, out[1:])] + [item.end]
        out = [c._replace(counted=(lo, hi)) for c, lo, hi in zip(out, cuts, cuts[1:])]
    return out


@dataclass(frozen=True)
class Chunking:
    """Training's chunking: ``--chunking=size:step`` and ``--chunking-loss`` (``once``)."""
    size: int
    step: int
    once: bool = False

    @classmethod
    def parse(cls, text: str, loss: str = "all") -> Optional["Chunking"]:
        pair = parse_chunking(text)
        if pair is None:
            if loss != "all":
                raise ConfigError(f"--chunking-loss={loss} is about overlapping chunks: it "
                                  f"needs --chunking=size:step")
            return None
        return cls(*pair, once=loss == "once")

    def apply(self, items: Sequence[Item]) -> List[Item]:
        """Every item cut into its chunks (those of an item together, in order)."""
        return [c for it in items for c in chunk(it, self.size, self.step, self.once)]
