"""Atomic file writes: write to a temporary name beside the target, then rename.

An interrupted writer leaves the old file (or none), never a half-written one. The temporary
file is made with ``tempfile.mkstemp`` (mode 0600) and then given the mode a plain ``open``
would have left: the target's own mode when it exists, else 0666 less the umask.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def current_umask() -> int:
    """The process umask (read from /proc where it can be, so it is never changed even briefly)."""
    try:
        with open("/proc/self/status", "r", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: the usual set-and-restore
    os.umask(mask)
    return mask


def default_mode(path: str) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else 0666 & ~umask."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode) & 0o777
    except OSError:
        pass
    return 0o666 & ~current_umask()


def tmp_path_for(path: str) -> str:
    """A new empty file beside ``path`` (same directory, so a rename is atomic), with the mode
    ``path`` should end up with."""
    d, base = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=d)
    try:
        os.fchmod(fd, default_mode(path))
    finally:
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
