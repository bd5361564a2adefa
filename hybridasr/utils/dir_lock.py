"""One process at a time in a directory: ``dir_lock(path, what)`` takes an exclusive ``flock``
on ``<path>/.lock`` (the kernel releases it when the process dies, even by kill -9) and writes
its pid and command line there; a second process fails at once with a ConfigError naming the
first's pid and command. Used by ``train.py`` (one trainer per exp dir); the recipes take the
same kind of lock on their dir with flock(1)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import sys
from typing import Iterator

from hybridasr.errors import ConfigError

LOCK_NAME = ".lock"


@contextlib.contextmanager
def dir_lock(path: str, what: str = "this directory") -> Iterator[None]:
    os.makedirs(path, exist_ok=True)
    name = os.path.join(path, LOCK_NAME)
    f = open(name, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "(unknown)"
            pid, _, cmd = holder.partition(" ")
            raise ConfigError(f"{path} is in use by another process: pid {pid}, command "
                              f"{cmd or '(unknown)'} (its lock: {name}); one {what} at a time: "
                              f"wait for it to end or stop it") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()} {' '.join(shlex.quote(a) for a in sys.argv)}\n")
        f.flush()
        yield
    finally:
        f.close()  # releases the lock
