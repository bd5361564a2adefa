"""Atomic, durable file writes: write to a temporary name beside the target, fsync it, rename,
fsync the directory. On any error the temporary is removed; a full disk (ENOSPC, EDQUOT, or a
writer without an errno, such as torch's, failing on a file system with no space left) is an
``OutputError`` naming the target: ``no space left on device: <file>``.

An interrupted writer leaves the old file (or none), never a half-written one; once the
``with`` block has returned, the new file and its name are on disk (a power loss cannot undo
the rename or leave the name pointing at unwritten blocks), so a file written after it may
name it. The temporary file is made with ``tempfile.mkstemp`` (mode 0600) and then given the
mode a plain ``open`` would have left: the target's own mode when it exists, else 0666 less
the umask.

A target that is not a regular file is written in place, never replaced: a device
(``/dev/null``: replacing it as root would leave a regular file there for every later
``> /dev/null`` on the machine), a FIFO, a socket, or any name under ``/dev/`` or ``/proc/``
(``/dev/stdout`` is a link to whatever the process's output is). Such a write is neither
atomic nor fsynced, and no temporary is made beside it.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile

from hybridasr.errors import HybridAsrError, OutputError

# errors that say the file system is full, whatever was being done with it
_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


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


def writes_in_place(path: str) -> bool:
    """Whether ``path`` is written where it is rather than through a temporary and a rename:
    an existing file that is neither a regular file nor a directory (a device, a FIFO, a
    socket), or a name under ``/dev/`` or ``/proc/`` whatever it resolves to."""
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


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


def is_disk_full(exc: BaseException) -> bool:
    """An OSError saying there is no space left (ENOSPC, or EDQUOT: over quota)."""
    return isinstance(exc, OSError) and exc.errno in _FULL


_NEARLY_FULL = 1 << 20  # bytes


def no_space_left(path: str) -> bool:
    """Whether the file system holding ``path`` has (almost) no space left for this user: how
    a failed writer that reports no errno (torch's C++ stream: ``basic_ios::clear``) is told
    from other failures."""
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    except (OSError, AttributeError):
        return False
    free = st.f_bfree if hasattr(os, "geteuid") and os.geteuid() == 0 else st.f_bavail
    return free * st.f_frsize < _NEARLY_FULL


def write_error(path: str, exc: OSError) -> OutputError:
    """The error to raise for an OSError met while writing ``path`` (the file the user named,
    not its temporary): ``no space left on device: <path>`` for a full disk or quota, else
    ``cannot write <path>: <reason>``."""
    if isinstance(exc, OutputError):
        return exc
    if exc.errno == errno.ENOSPC:
        return OutputError(f"no space left on device: {path}", exc.errno)
    if is_disk_full(exc):
        return OutputError(f"disk quota exceeded: {path}", exc.errno)
    return OutputError(f"cannot write {path}: {exc.strerror or exc}", exc.errno or 0)


@contextlib.contextmanager
def _atomic(path: str, synced: bool):
    """The temporary is removed on any exception (a full disk included: then the error
    names ``path``, the file being written). A device or FIFO is yielded itself."""
    if writes_in_place(path):
        yield path
        return
    try:
        tmp = tmp_path_for(path)
    except OSError as e:
        raise write_error(path, e) from e
    try:
        yield tmp
        if not synced:
            fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        # a writer without an errno (torch.save): asked before the temporary frees its space
        full_disk = isinstance(e, RuntimeError) and no_space_left(tmp)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if is_disk_full(e) and not isinstance(e, HybridAsrError):
            raise write_error(path, e) from e
        if full_disk:
            said = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise OutputError(f"no space left on device: {path} (the writer said: {said})",
                              errno.ENOSPC) from e
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
        f = open(tmp, mode, **kwargs)
        try:
            yield f
            f.flush()
            if tmp != path:  # (a device or FIFO, written in place, has nothing to sync)
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):  # its buffer may not flush (a full disk):
                f.close()                       # the error on its way says so
            raise
        f.close()


def write_json_report(path: str, doc) -> None:
    """A job's report (a dict) as indented JSON, atomically (what ``--report`` writes)."""
    import json

    with atomic_open(path) as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
