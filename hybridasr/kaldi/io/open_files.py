"""Archives a process reads again and again (the arks an scp points into), opened once and
kept open: random access costs one ``seek`` + ``read`` (or a slice of a memory map), not an
``open``/``close`` per entry as kaldiio's lazy loader does.

A cache belongs to one process. After a fork (a loader worker) the child does not use the
parent's file objects (their shared file offset would interleave the seeks of both): it opens
its own on first use. Pickling gives an empty cache. At most ``max_open`` files are kept; the
least recently used one is closed first.
"""
from __future__ import annotations

import mmap
import os
from collections import OrderedDict
from typing import BinaryIO, Union

from hybridasr.errors import FormatError

DEFAULT_MAX_OPEN = 128


class OpenFiles:
    def __init__(self, max_open: int = DEFAULT_MAX_OPEN):
        self.max_open = max(1, int(max_open))
        self._pid = os.getpid()
        self._files: "OrderedDict[str, BinaryIO]" = OrderedDict()
        self._maps: "OrderedDict[str, Union[mmap.mmap, bytes]]" = OrderedDict()

    def _check_process(self) -> None:
        if os.getpid() != self._pid:  # a forked child: the parent's objects are not ours
            self._files, self._maps = OrderedDict(), OrderedDict()
            self._pid = os.getpid()

    @staticmethod
    def _open(path: str) -> BinaryIO:
        try:
            return open(path, "rb")
        except OSError as e:
            raise FormatError(f"cannot open {path}: {e.strerror}") from None

    def file(self, path: str) -> BinaryIO:
        """The open binary file ``path`` (seek before reading: others read it too)."""
        self._check_process()
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = self._open(path)
            while len(self._files) > self.max_open:
                self._files.popitem(last=False)[1].close()
        else:
            self._files.move_to_end(path)
        return f

    def mapping(self, path: str):
        """``path`` mapped read-only in memory (``b""`` for an empty file)."""
        self._check_process()
        m = self._maps.get(path)
        if m is None:
            with self._open(path) as f:
                size = os.fstat(f.fileno()).st_size
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            self._maps[path] = m
            while len(self._maps) > self.max_open:
                old = self._maps.popitem(last=False)[1]
                if isinstance(old, mmap.mmap):
                    old.close()
        else:
            self._maps.move_to_end(path)
        return m

    def close(self) -> None:
        if os.getpid() == self._pid:
            for f in self._files.values():
                f.close()
            for m in self._maps.values():
                if isinstance(m, mmap.mmap):
                    m.close()
        self._files, self._maps = OrderedDict(), OrderedDict()

    def __len__(self) -> int:
        return len(self._files) + len(self._maps)

    def __enter__(self) -> "OpenFiles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self):
        return {"max_open": self.max_open}

    def __setstate__(self, state):
        self.__init__(state["max_open"])
