"""Atomic file writes: write to a temporary name beside the target, then rename.

An interrupted writer leaves the old file (or none), never a half-written one.
"""
from __future__ import annotations

import contextlib
import os
import tempfile


def tmp_path_for(path: str) -> str:
    d, base = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=d)
    os.close(fd)
    return tmp


@contextlib.contextmanager
def atomic_path(path: str):
    """Yields a temporary path; on success it is renamed to ``path``, on error removed."""
    tmp = tmp_path_for(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs):
    """``open`` for writing, atomically: the file appears whole at the end or not at all."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
