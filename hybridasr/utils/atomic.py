"""Atomic, durable file writes: write to a temporary name beside the target, fsync it, rename,
fsync the directory.

An interrupted writer leaves the old file (or none), never a half-written one; once the
``with`` block has returned, the new file and its name are on disk (a power loss cannot undo
the rename or leave the name pointing at unwritten blocks), so a file written after it may
name it. The temporary file is made with ``tempfile.mkstemp`` (mode 0600) and then given the
mode a plain ``open`` would have left: the target's own mode when it exists, else 0666 less
the umask.
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


def fsync_file(path: str) -> None:
    """Flushes a closed file's data to disk (Linux fsyncs through a read-only descriptor)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """Makes the names in directory ``path`` (a rename, a new file or link) durable."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(path or ".", flags)
    except OSError:  # a platform that cannot open directories: nothing more can be done
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def replace_durably(src: str, dst: str) -> None:
    """``os.replace`` followed by an fsync of ``dst``'s directory."""
    os.replace(src, dst)
    fsync_dir(os.path.dirname(os.path.abspath(dst)))


@contextlib.contextmanager
def _atomic(path: str, synced: bool):
    tmp = tmp_path_for(path)
    try:
        yield tmp
        if not synced:
            fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def atomic_path(path: str):
    """Yields a temporary path to write and close; on success it is fsynced and renamed to
    ``path`` (then the directory fsynced), on error removed."""
    return _atomic(path, synced=False)


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs):
    """``open`` for writing, atomically and durably: the file appears whole at the end or not
    at all."""
    with _atomic(path, synced=True) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
