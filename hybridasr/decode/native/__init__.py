"""The toolkit's own C++ (``lattice_faster.cc``: lattice search; ``lattice_determinize.cc``:
pruned lattice determinization), built with the system's C++ compiler into a
shared library loaded with ctypes: no headers but the C++ standard library, about 2 s to
build. ``install.sh`` builds it; otherwise the first use does (into this directory, or
``$XDG_CACHE_HOME/hybridasr`` when that is read-only). The library's name carries a hash of
the source, so an edited source is rebuilt and an old library is never loaded. Without a
compiler ``load()`` returns None (``unavailable_reason()`` says why): there are no embedded
lattices then, and decoding is 1-best (docs/decoding.md, "Without a C++ compiler")."""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

SOURCES = (Path(__file__).with_name("lattice_faster.cc"),
           Path(__file__).with_name("lattice_determinize.cc"))
CXXFLAGS = ["-O2", "-std=c++17", "-shared", "-fPIC"]
_LIB: Optional[ctypes.CDLL] = None
_TRIED = False
_REASON = ""  # why load() returned None


def _library_name() -> str:
    h = hashlib.sha1(b"".join(p.read_bytes() for p in SOURCES) +
                     " ".join(CXXFLAGS).encode()).hexdigest()[:12]
    return f"_hybridasr_native-{h}.so"


def _candidates():
    yield SOURCES[0].parent
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield Path(cache) / "hybridasr"


def _compiler() -> Optional[str]:
    for cxx in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if cxx and shutil.which(cxx):
            return cxx
    return None


def build() -> Path:
    """The library's path, compiled now if no directory holds it (atomic: compiled to a
    temporary file beside it, then renamed). RuntimeError: no compiler, or it failed."""
    name = _library_name()
    for d in _candidates():
        if (d / name).is_file():
            return d / name
    cxx = _compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++, c++ or clang++; or set CXX)")
    errors = []
    for d in _candidates():
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=d)
            os.close(fd)
        except OSError as e:
            errors.append(f"{d}: {e}")
            continue
        try:
            proc = subprocess.run([cxx, *CXXFLAGS, "-o", tmp, *map(str, SOURCES)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{cxx} failed on {', '.join(map(str, SOURCES))}:\n"
                                   f"{proc.stderr[-2000:]}")
            os.replace(tmp, d / name)
            for old in d.glob("_hybridasr_native-*.so"):  # built from earlier sources
                if old.name != name:
                    old.unlink(missing_ok=True)  # a process that loaded it keeps its copy
            return d / name
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise RuntimeError("cannot write the library: " + "; ".join(errors))


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    p, i32, i64, f32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_float
    lib.hasr_lf_new.restype = p
    lib.hasr_lf_new.argtypes = [p, p, i64, f32, i32, i32, f32, i32, f32, f32]
    lib.hasr_lf_decode.restype = ctypes.c_int
    lib.hasr_lf_decode.argtypes = [p, i32, p, i32, i32, ctypes.POINTER(i64),
                                   ctypes.POINTER(i64), ctypes.POINTER(i32)]
    lib.hasr_lf_get.restype = None
    lib.hasr_lf_get.argtypes = [p] * 8
    lib.hasr_lf_free.restype = None
    lib.hasr_lf_free.argtypes = [p]
    lib.hasr_det_run.restype = ctypes.c_int
    lib.hasr_det_run.argtypes = [i32, i32, i64] + [p] * 12 + [ctypes.c_double,
                                                               ctypes.c_double, i64,
                                                               ctypes.POINTER(p)]
    lib.hasr_det_sizes.restype = None
    lib.hasr_det_sizes.argtypes = [p, ctypes.POINTER(i32), ctypes.POINTER(i32),
                                   ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.hasr_det_get.restype = None
    lib.hasr_det_get.argtypes = [p] * 13
    lib.hasr_det_free.restype = None
    lib.hasr_det_free.argtypes = [p]
    return lib


def load(quiet: bool = False) -> Optional[ctypes.CDLL]:
    """The library (built on first use), or None when it cannot be built (logged once, unless
    ``quiet``; ``unavailable_reason()`` says why)."""
    global _LIB, _TRIED, _REASON
    if _LIB is None and not _TRIED:
        _TRIED = True
        try:
            _LIB = _declare(ctypes.CDLL(str(build())))
        except (RuntimeError, OSError) as e:
            _REASON = str(e)
            if not quiet:
                log.warning("the toolkit's C++ lattice decoder cannot be built (%s)", e)
    return _LIB


def unavailable_reason() -> str:
    """Why ``load()`` returned None ("" when it has not, or has not been called)."""
    return _REASON
