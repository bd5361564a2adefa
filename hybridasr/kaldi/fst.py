"""OpenFst binary files as Kaldi writes them (``HCLG.fst``: ``const`` or ``vector`` FSTs of
standard arcs), read with kaldifst (Kaldi's OpenFst build). ``max_input_label`` is fast for
``const`` files: read straight from the arc array with numpy."""
from __future__ import annotations

import os
import struct
from typing import Optional

import numpy as np

from hybridasr.errors import FormatError

_FST_MAGIC = 2125659606
_HAS_ISYMBOLS, _HAS_OSYMBOLS, _IS_ALIGNED = 1, 2, 4


def read_fst(path: str):
    """Reads an OpenFst file (``const`` or ``vector``, standard arcs) with kaldifst."""
    import kaldifst

    if not os.path.isfile(path):
        raise FormatError(f"missing decoding graph {path}")
    with open(path, "rb") as f:
        head = f.read(4)
    if len(head) < 4 or struct.unpack("<i", head)[0] != _FST_MAGIC:
        raise FormatError(f"{path}: not an OpenFst binary file (bad magic number)")
    fst = kaldifst.StdFst.read(path)
    if fst is None:
        raise FormatError(f"{path}: kaldifst could not read it (only 'const' and 'vector' FSTs "
                          f"with standard (tropical) arcs are supported)")
    if fst.start < 0:
        raise FormatError(f"{path}: the FST has no start state (empty graph)")
    return fst


def _const_fst_max_ilabel(path: str) -> Optional[int]:
    """Largest input label of a ``const`` FST file read with numpy; None for other layouts."""
    with open(path, "rb") as f:
        data = f.read()
    o = 4

    def take(fmt):
        nonlocal o
        v = struct.unpack_from(fmt, data, o)
        o += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal o
        n = take("<i")
        s = data[o:o + n].decode("ascii", "replace")
        o += n
        return s

    fst_type, arc_type = string(), string()
    version, flags = take("<i"), take("<i")
    take("<Q")  # properties
    take("<q")  # start
    num_states, num_arcs = take("<q"), take("<q")
    if fst_type != "const" or arc_type != "standard" or version != 2 or \
            flags & (_HAS_ISYMBOLS | _HAS_OSYMBOLS):
        return None
    align = (lambda x: (x + 15) // 16 * 16) if flags & _IS_ALIGNED else (lambda x: x)
    o = align(o) + num_states * 20  # ConstState: weight, pos, narcs, niepsilons, noepsilons
    o = align(o)
    if o + num_arcs * 16 > len(data):
        raise FormatError(f"{path}: truncated const FST ({len(data)} bytes, "
                          f"{num_states} states, {num_arcs} arcs)")
    arcs = np.frombuffer(data, dtype=np.int32, count=num_arcs * 4, offset=o).reshape(-1, 4)
    return int(arcs[:, 0].max()) if num_arcs else 0


def max_input_label(fst, path: Optional[str] = None) -> int:
    """The largest input label (transition-id) on any arc of the graph (``path``: the file
    it was read from, for the fast route)."""
    fast = _const_fst_max_ilabel(path) if path else None
    if fast is not None:
        return fast
    import kaldifst

    best = 0
    for s in range(fst.num_states):
        it = kaldifst.ArcIterator(fst, s)
        while not it.done:
            best = max(best, it.value.ilabel)
            it.next()
    return best
