"""Pausing Python's cyclic garbage collector around work that builds many small objects.

Planning an epoch of 100,000 utterances makes millions of small objects (items, windows,
plans) that live until the epoch ends; the cyclic collector keeps rescanning them as they
accumulate, which made planning grow faster than linearly (exponent ~1.2 from 10k to 100k
utterances, ~1.03 without; ``experiments/scale.py``). Reference counting still frees everything;
only cycles wait for the collector, which runs again when the block ends.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
