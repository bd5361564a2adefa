"""Kaldi rxfilenames and wxfilenames as binary streams (``util/kaldi-io``).

rxfilename: a file, ``-`` (stdin) or ``command |`` (run by ``sh``: ``gunzip -c ali.*.gz|``
streams all jobs one after the other). wxfilename: a file, ``-`` (stdout) or ``| command``.

An input stream is *checked on close*: a pipe whose command failed (``gunzip`` on a corrupt
file) raises FormatError naming the command, as Kaldi reports a failed pipe. An output file is
written atomically and durably (``hybridasr.utils.atomic``): a temporary name beside it, then
on ``commit()`` fsynced, renamed and its directory fsynced, so whatever is written after it
(an scp naming it) can point at it. A device, FIFO or name under ``/dev/`` (``/dev/null``,
``/dev/stdout``) is written in place, never replaced (``hybridasr.utils.atomic``).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import BinaryIO, Optional, Tuple

from hybridasr.errors import FormatError, OutputError
from hybridasr.utils.atomic import (replace_durably, tmp_path_for, write_error,
                                    writes_in_place)


class InputStream:
    """A binary input stream over an rxfilename; ``close()`` raises if a pipe failed."""

    def __init__(self, rxfilename: str):
        self.name = rxfilename
        self._proc: Optional[subprocess.Popen] = None
        if rxfilename == "-":
            self.f: BinaryIO = sys.stdin.buffer
        elif rxfilename.rstrip().endswith("|"):
            cmd = rxfilename.rstrip()[:-1].strip()
            # the command's stderr goes to ours (as Kaldi's pipes do): no deadlock on chatter
            self._proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE)
            self.f = self._proc.stdout
        else:
            try:
                self.f = open(rxfilename, "rb")
            except OSError as e:
                raise FormatError(f"cannot open {rxfilename}: {e.strerror}") from None

    @property
    def is_pipe(self) -> bool:
        return self._proc is not None

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def readline(self, limit: int = -1) -> bytes:
        return self.f.readline(limit)

    def close(self, check: bool = True) -> None:
        """Closes the stream; with ``check``, a failed input command raises FormatError
        (``check=False`` for a reader that stopped early: the command may die of SIGPIPE)."""
        if self.f is not sys.stdin.buffer and not self.f.closed:
            self.f.close()
        if self._proc is not None:
            proc, self._proc = self._proc, None
            rc = proc.wait()
            if check and rc != 0:
                raise FormatError(f"command '{self.name.rstrip()[:-1].strip()}' failed (exit "
                                  f"status {rc}; its message is above)")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(check=exc_type is None)
        return False


def split_offset(rxfilename: str) -> Optional[Tuple[str, int]]:
    """An scp entry's ``file.ark:123`` -> ("file.ark", 123); None for any other rxfilename (a
    pipe, ``-``, a plain file, a row range ``file.ark:123[0:9]``)."""
    path, sep, off = rxfilename.rpartition(":")
    if sep and path and off.isdigit() and not rxfilename.endswith("|") and "[" not in rxfilename:
        return path, int(off)
    return None


def label(rxfilename: str) -> str:
    """How messages name an input: a pipe in quotes."""
    return f"'{rxfilename}'" if rxfilename.rstrip().endswith("|") else rxfilename


class OutputStream:
    """A binary output stream over a wxfilename: a file written atomically, ``-`` (stdout) or
    ``| command``. ``commit()`` finishes it (fsync and rename, or wait for the command);
    ``abort()`` removes the temporary file."""

    def __init__(self, wxfilename: str):
        self.name = wxfilename
        self._proc: Optional[subprocess.Popen] = None
        self._tmp: Optional[str] = None
        self._in_place = False  # a device or FIFO: written as it is, nothing to rename
        self._done = False  # committed or aborted
        if wxfilename == "-":
            self.f: BinaryIO = sys.stdout.buffer
        elif writes_in_place(wxfilename):
            try:
                self.f = open(wxfilename, "wb")
            except OSError as e:
                raise write_error(wxfilename, e) from e
            self._in_place = True
        elif wxfilename.startswith("|"):
            self._proc = subprocess.Popen(wxfilename[1:].strip(), shell=True,
                                          stdin=subprocess.PIPE)
            self.f = self._proc.stdin
        else:
            d = os.path.dirname(os.path.abspath(wxfilename))
            if not os.path.isdir(d):
                raise FormatError(f"cannot write {wxfilename}: no such directory {d}")
            try:
                self._tmp = tmp_path_for(wxfilename)  # already has the mode open() would give
                self.f = open(self._tmp, "wb")
            except OSError as e:
                if self._tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(self._tmp)
                raise write_error(wxfilename, e) from e

    def _failed(self, e: OSError) -> OutputError:
        """A write to the file failed (a full disk): the temporary is removed, and the error
        names the file."""
        self.abort()
        return write_error(self.name, e)

    def write(self, data: bytes) -> int:
        try:
            return self.f.write(data)
        except OSError as e:
            if self._tmp is None:
                raise
            raise self._failed(e) from e

    def tell(self) -> int:
        return self.f.tell()

    @property
    def seekable(self) -> bool:
        """True for a file (offsets are known: an scp can point into it)."""
        return self._tmp is not None

    def prepare(self) -> None:
        """For a file: writes out and fsyncs the temporary (where a full disk shows), without
        renaming it yet; ``commit`` then only renames. A table writer prepares all its files
        before committing any."""
        if self._tmp is not None and not self.f.closed:
            try:
                self.f.flush()
                os.fsync(self.f.fileno())
                self.f.close()
            except OSError as e:
                raise self._failed(e) from e

    def commit(self) -> None:
        if self._done:
            raise ValueError(f"{self.name}: output already finished")
        if self._tmp is not None:
            self.prepare()
            try:
                replace_durably(self._tmp, self.name)
            except OSError as e:
                raise self._failed(e) from e
            self._tmp = None
            self._done = True
        elif self._proc is not None:
            self._done = True
            self.f.close()
            rc = self._proc.wait()
            self._proc = None
            if rc != 0:
                raise FormatError(f"output command '{self.name[1:].strip()}' failed "
                                  f"(exit status {rc})")
        else:
            self._done = True
            self.f.flush()
            if self._in_place:
                self.f.close()

    def abort(self) -> None:
        """Removes the temporary file (also when closing it fails: a full disk cannot flush
        its buffer); safe to call twice."""
        if self._done and self._tmp is None:
            return
        self._done = True
        if self._tmp is not None:
            tmp, self._tmp = self._tmp, None
            try:
                self.f.close()
            except OSError:
                pass  # the buffer could not be written: the file goes anyway
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        elif self._proc is not None:
            self.f.close()
            self._proc.wait()
            self._proc = None
        else:
            self.f.flush()
            if self._in_place:
                self.f.close()
