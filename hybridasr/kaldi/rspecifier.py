"""Kaldi rspecifiers/wspecifiers and rx/wxfilenames, as Kaldi's ``util/kaldi-table`` reads them.

rspecifier: ``ark:<rx>``, ``ark,t:<rx>``, ``ark,s,cs:<rx>``, ``scp:<scp-rx>``; an rxfilename is
a file, ``-`` (stdin) or ``command |`` (run by ``sh``: ``ark:gunzip -c ali.*.gz|`` streams all
jobs one after the other). wspecifier: ``ark:<wx>``, ``ark,t:<wx>``, ``ark,scp:<ark>,<scp>``,
``ark,t,scp:...``; a wxfilename is a file (written atomically: temporary name, renamed on
success), ``-`` (stdout) or ``| command``.

Input streams are *checked on close*: a pipe whose command failed (``gunzip`` on a corrupt
file) raises FormatError naming the command, as Kaldi reports a failed pipe.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import BinaryIO, FrozenSet, Optional

from hybridasr.errors import FormatError
from hybridasr.kaldi.table import parse_wspecifier as _parse_ark_wspecifier
from hybridasr.utils.atomic import tmp_path_for

_READ_OPTS = {"t", "b", "o", "no", "s", "ns", "cs", "ncs", "p", "np", "bg"}


@dataclass(frozen=True)
class RSpecifier:
    kind: str  # "ark" or "scp"
    opts: FrozenSet[str]
    rxfilename: str


def parse_rspecifier(spec: str) -> RSpecifier:
    if ":" not in spec:
        raise FormatError(f"bad rspecifier {spec!r}: expected ark:<file>, scp:<file>, "
                          f"e.g. 'ark:gunzip -c exp/mono_ali/ali.*.gz|'")
    head, rx = spec.split(":", 1)
    words = [w.strip() for w in head.split(",")]
    kinds = [w for w in words if w in ("ark", "scp")]
    opts = [w for w in words if w not in ("ark", "scp")]
    if len(kinds) != 1 or any(o not in _READ_OPTS for o in opts) or not rx.strip():
        raise FormatError(f"bad rspecifier {spec!r}: expected ark[,opts]:<rx> or scp:<rx>")
    return RSpecifier(kinds[0], frozenset(opts), rx.strip())


@dataclass(frozen=True)
class WSpecifier:
    ark: str
    scp: Optional[str]
    text: bool


def parse_wspecifier(spec: str) -> WSpecifier:
    opts, ark, scp = _parse_ark_wspecifier(spec)
    bad = [o for o in opts if o not in ("ark", "scp", "t", "b", "f", "nf", "p")]
    if bad:
        raise FormatError(f"bad wspecifier {spec!r}: unknown option(s) {','.join(bad)}")
    return WSpecifier(ark.strip(), scp.strip() if scp else None, "t" in opts)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def apply_default_mode(path: str) -> None:
    """Gives a file made with ``tempfile.mkstemp`` (mode 0600) the mode a plain ``open``
    would have given it (0666 less the umask), so that renamed outputs are readable."""
    os.chmod(path, 0o666 & ~_umask())


class InputStream:
    """A binary input stream over an rxfilename; ``close()`` raises if a pipe failed."""

    def __init__(self, rxfilename: str):
        self.name = rxfilename
        self._proc: Optional[subprocess.Popen] = None
        if rxfilename == "-":
            self.f: BinaryIO = sys.stdin.buffer
        elif rxfilename.endswith("|"):
            cmd = rxfilename[:-1].strip()
            # the command's stderr goes to ours (as Kaldi's pipes do): no deadlock on chatter
            self._proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE)
            self.f = self._proc.stdout
        else:
            try:
                self.f = open(rxfilename, "rb")
            except OSError as e:
                raise FormatError(f"cannot open {rxfilename}: {e.strerror}") from None

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def readline(self, limit: int = -1) -> bytes:
        return self.f.readline(limit)

    def close(self, check: bool = True) -> None:
        if self.f is not sys.stdin.buffer and not self.f.closed:
            self.f.close()
        if self._proc is not None:
            proc, self._proc = self._proc, None
            rc = proc.wait()
            if check and rc != 0:
                raise FormatError(f"command '{self.name[:-1].strip()}' failed (exit status "
                                  f"{rc}; its message is above)")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(check=exc_type is None)
        return False


class OutputStream:
    """A binary output stream over a wxfilename: a file written atomically, ``-`` (stdout) or
    ``| command``. ``commit()`` finishes it (rename, or wait for the command); ``abort()``
    removes the temporary file."""

    def __init__(self, wxfilename: str):
        self.name = wxfilename
        self._proc: Optional[subprocess.Popen] = None
        self._tmp: Optional[str] = None
        if wxfilename == "-":
            self.f: BinaryIO = sys.stdout.buffer
        elif wxfilename.startswith("|"):
            self._proc = subprocess.Popen(wxfilename[1:].strip(), shell=True,
                                          stdin=subprocess.PIPE)
            self.f = self._proc.stdin
        else:
            d = os.path.dirname(os.path.abspath(wxfilename))
            if not os.path.isdir(d):
                raise FormatError(f"cannot write {wxfilename}: no such directory {d}")
            self._tmp = tmp_path_for(wxfilename)
            self.f = open(self._tmp, "wb")

    def write(self, data: bytes) -> int:
        return self.f.write(data)

    def tell(self) -> int:
        return self.f.tell()

    def commit(self) -> None:
        if self._tmp is not None:
            self.f.close()
            apply_default_mode(self._tmp)
            os.replace(self._tmp, self.name)
            self._tmp = None
        elif self._proc is not None:
            self.f.close()
            rc = self._proc.wait()
            self._proc = None
            if rc != 0:
                raise FormatError(f"output command '{self.name[1:].strip()}' failed "
                                  f"(exit status {rc})")
        else:
            self.f.flush()

    def abort(self) -> None:
        if self._tmp is not None:
            self.f.close()
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None
        elif self._proc is not None:
            self.f.close()
            self._proc.wait()
            self._proc = None

    @property
    def seekable(self) -> bool:
        return self._tmp is not None
