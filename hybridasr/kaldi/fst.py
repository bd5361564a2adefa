"""OpenFst binary files as Kaldi writes them (``HCLG.fst``: ``const`` or ``vector`` FSTs of
standard arcs), read with kaldifst (Kaldi's OpenFst build). ``max_input_label`` is fast for
``const`` files: read straight from the arc array with numpy.

``relabel_by_pdf`` turns a graph over transition-ids into one over pdfs (input label pdf+1)
whose output labels index (transition-id, word) pairs, so a decoder can score the [T, pdfs]
log-likelihoods directly and still give exact transition-id alignments and words; it works on
the const arc array with numpy (any FST is converted to const by kaldifst first)."""
from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass
from typing import List, Optional, Tuple

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
        c = parse_const_fst(f.read(), path)
    if c is None:
        return None
    return int(c.arcs[:, 0].max()) if len(c.arcs) else 0


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


# ------------------------------------------------------------------ const layout, relabelling
@dataclass
class ConstFstArrays:
    """A ``const`` FST file in memory: numpy views of its state and arc arrays.

    ``states``: [num_states, 5] (final weight as float32 bits, first arc, number of arcs,
    input epsilons, output epsilons; uint32); ``arcs``: [num_arcs, 4] int32 (ilabel, olabel,
    weight as float32 bits, next state). ``props_at``: byte offset of the properties field."""
    data: bytearray
    start: int
    states: np.ndarray
    arcs: np.ndarray
    props_at: int


def parse_const_fst(data, name: str = "<fst>") -> Optional[ConstFstArrays]:
    """Parses the bytes of a ``const`` FST of standard arcs (None for any other layout)."""
    o = 4

    def take(fmt):
        nonlocal o
        v = struct.unpack_from(fmt, data, o)
        o += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal o
        n = take("<i")
        s = bytes(data[o:o + n]).decode("ascii", "replace")
        o += n
        return s

    if len(data) < 4 or struct.unpack_from("<i", data, 0)[0] != _FST_MAGIC:
        raise FormatError(f"{name}: not an OpenFst binary file (bad magic number)")
    fst_type, arc_type = string(), string()
    version, flags = take("<i"), take("<i")
    props_at = o
    take("<Q")  # properties
    start = take("<q")
    num_states, num_arcs = take("<q"), take("<q")
    if fst_type != "const" or arc_type != "standard" or version != 2 or \
            flags & (_HAS_ISYMBOLS | _HAS_OSYMBOLS):
        return None
    align = (lambda x: (x + 15) // 16 * 16) if flags & _IS_ALIGNED else (lambda x: x)
    o = align(o)
    states_at = o
    o = align(o + num_states * 20)
    if o + num_arcs * 16 > len(data):
        raise FormatError(f"{name}: truncated const FST ({len(data)} bytes, "
                          f"{num_states} states, {num_arcs} arcs)")
    states = np.frombuffer(data, dtype=np.uint32, count=num_states * 5,
                           offset=states_at).reshape(-1, 5)
    arcs = np.frombuffer(data, dtype=np.int32, count=num_arcs * 4, offset=o).reshape(-1, 4)
    return ConstFstArrays(data, start, states, arcs, props_at)


def const_fst_arrays(fst, path: Optional[str] = None) -> ConstFstArrays:
    """The const layout of ``fst`` (read from ``path`` when that is a const file; otherwise
    converted by kaldifst (C++) and written to a temporary file)."""
    import kaldifst

    if path is not None:
        with open(path, "rb") as f:
            got = parse_const_fst(bytearray(f.read()), path)
        if got is not None:
            return got
    with tempfile.TemporaryDirectory(prefix="hybridasr-fst-") as d:
        tmp = os.path.join(d, "const.fst")
        if not kaldifst.StdConstFst(fst).write(tmp):
            raise FormatError(f"could not write {path or 'the FST'} as a const FST to {d}")
        with open(tmp, "rb") as f:
            got = parse_const_fst(bytearray(f.read()), tmp)
    if got is None:
        raise FormatError(f"{path or 'the FST'}: kaldifst's const FST has an unexpected layout")
    return got


# properties that depend on the labels (OpenFst bits 16..31: acceptor, determinism, epsilons,
# label sortedness): unknown after relabelling
_LABEL_PROPERTIES = 0xFFFF0000


@dataclass
class PdfGraph:
    """A graph relabelled for decoding per-pdf scores: input label ``pdf + 1`` (0: epsilon),
    output label a pair id; ``pair_tid[id]``/``pair_word[id]`` give the original arc's
    transition-id and word (id 0: epsilon:epsilon)."""
    fst: object  # kaldifst.StdFst (const)
    pair_tid: np.ndarray
    pair_word: np.ndarray
    arrays: Optional[ConstFstArrays] = None  # the relabelled graph's own arrays (same bytes)

    def tids_words(self, olabels) -> Tuple[List[int], List[int]]:
        """The transition-ids and words (epsilons dropped) of a path's output labels."""
        ids = np.asarray(olabels, dtype=np.int64)
        tids, words = self.pair_tid[ids], self.pair_word[ids]
        return tids[tids > 0].tolist(), words[words > 0].tolist()


def relabel_by_pdf(fst, tid2pdf: np.ndarray, path: Optional[str] = None) -> PdfGraph:
    """The graph with input labels ``tid2pdf[tid] + 1`` and output labels (transition-id,
    word) pair ids, made with numpy on the const arc array (no per-arc Python). Same states,
    arcs, weights and arc order: a search on it visits what a search on ``fst`` visits."""
    import kaldifst

    tid2pdf = np.asarray(tid2pdf, dtype=np.int64)
    c = const_fst_arrays(fst, path)
    arcs = c.arcs
    il, ol = arcs[:, 0].astype(np.int64), arcs[:, 1].astype(np.int64)
    if len(il) and (il.min() < 0 or il.max() >= len(tid2pdf) or ol.min() < 0):
        raise FormatError(f"{path or 'the graph'}: input label {int(il.max())} is not a "
                          f"transition-id of the model ({len(tid2pdf) - 1} transition-ids)")
    keys, pair = np.unique((il << 32) | ol, return_inverse=True)
    if not len(keys) or keys[0] != 0:  # id 0 stays epsilon:epsilon
        keys, pair = np.concatenate([[0], keys]), pair + 1
    pair_tid, pair_word = (keys >> 32).astype(np.int64), (keys & 0xFFFFFFFF).astype(np.int64)
    new_il = np.where(il > 0, tid2pdf[il] + 1, 0)
    out = bytearray(c.data)
    new = parse_const_fst(out)
    new.arcs[:, 0] = new_il.astype(np.int32)
    new.arcs[:, 1] = pair.astype(np.int32)
    # output-epsilon counts per state (input epsilons are unchanged)
    narcs = new.states[:, 2].astype(np.int64)
    if int(narcs.sum()) != len(arcs):
        raise FormatError(f"{path or 'the graph'}: const FST states hold {int(narcs.sum())} "
                          f"arcs, the file {len(arcs)}")
    owner = np.empty(len(arcs), dtype=np.int64)
    owner[np.repeat(new.states[:, 1].astype(np.int64), narcs) + _ranks(narcs)] = \
        np.repeat(np.arange(len(narcs)), narcs)
    new.states[:, 4] = np.bincount(owner[pair == 0], minlength=len(narcs)).astype(np.uint32)
    props = struct.unpack_from("<Q", out, c.props_at)[0] & ~_LABEL_PROPERTIES
    struct.pack_into("<Q", out, c.props_at, props)
    with tempfile.TemporaryDirectory(prefix="hybridasr-fst-") as d:
        tmp = os.path.join(d, "pdf.fst")
        with open(tmp, "wb") as f:
            f.write(out)
        relabelled = kaldifst.StdFst.read(tmp)
    if relabelled is None:
        raise FormatError(f"{path or 'the graph'}: kaldifst could not read the relabelled graph")
    return PdfGraph(relabelled, pair_tid, pair_word, new)


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0..n-1 within each group of sizes ``counts`` (concatenated)."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - starts


_K_EXPANDED = 0x1  # OpenFst's kExpanded: the one property a const FST always has


def const_fst_bytes(start: int, final: np.ndarray, first: np.ndarray, ilabel: np.ndarray,
                    olabel: np.ndarray, weight: np.ndarray, nextstate: np.ndarray) -> bytes:
    """An OpenFst ``const`` FST file of standard arcs (version 2, not aligned, no symbol
    tables), the layout ``parse_const_fst`` reads: state s owns arcs ``first[s]`` up to
    ``first[s + 1]`` (``first`` has num_states + 1 entries); ``final`` is the final cost
    (inf: not final). Properties other than kExpanded are left unknown (OpenFst computes
    them when asked)."""
    final = np.asarray(final, dtype=np.float32)
    first = np.asarray(first, dtype=np.int64)
    n, m = len(final), len(ilabel)
    if len(first) != n + 1 or first[0] != 0 or first[-1] != m or np.any(np.diff(first) < 0):
        raise ValueError("const_fst_bytes: 'first' must be 0 .. num_arcs, non-decreasing")
    il = np.asarray(ilabel, dtype=np.int32)
    ol = np.asarray(olabel, dtype=np.int32)
    owner = np.repeat(np.arange(n), np.diff(first))
    states = np.empty((n, 5), dtype=np.uint32)
    states[:, 0] = final.view(np.uint32)
    states[:, 1] = first[:-1]
    states[:, 2] = np.diff(first)
    states[:, 3] = np.bincount(owner[il == 0], minlength=n)
    states[:, 4] = np.bincount(owner[ol == 0], minlength=n)
    arcs = np.empty((m, 4), dtype=np.int32)
    arcs[:, 0], arcs[:, 1] = il, ol
    arcs[:, 2] = np.asarray(weight, dtype=np.float32).view(np.int32)
    arcs[:, 3] = nextstate
    head = bytearray(struct.pack("<i", _FST_MAGIC))
    for s in (b"const", b"standard"):
        head += struct.pack("<i", len(s)) + s
    head += struct.pack("<iiQqqq", 2, 0, _K_EXPANDED, start, n, m)
    return bytes(head) + states.astype("<u4").tobytes() + arcs.astype("<i4").tobytes()


def stochasticity(final: np.ndarray, src: np.ndarray, weight: np.ndarray,
                  delta: float = 0.01) -> Tuple[float, float, bool]:
    """Kaldi's ``fstisstochastic`` (log semiring) of an FST given as each state's final cost
    (inf: not final) and its arcs' source states and costs: the two numbers it prints — the
    least total probability out of a state and the largest, as costs (so "min" is the larger
    -log, as Kaldi prints it) — and whether every state is within ``delta`` of 1."""
    n = len(final)
    if n == 0:
        return 0.0, 0.0, True
    src = np.asarray(src, dtype=np.int64)
    w = np.asarray(weight, dtype=np.float32).astype(np.float64)
    fin = np.asarray(final, dtype=np.float32).astype(np.float64)
    best = fin.copy()
    np.minimum.at(best, src, w)
    shift = np.where(np.isfinite(best), best, 0.0)
    total = np.exp(-(fin - shift))
    total += np.bincount(src, weights=np.exp(-(w - shift[src])), minlength=n)
    with np.errstate(divide="ignore"):
        cost = shift - np.log(total)
    return (float(cost.max()) + 0.0, float(cost.min()) + 0.0,
            bool(np.all(np.abs(cost) <= delta)))
