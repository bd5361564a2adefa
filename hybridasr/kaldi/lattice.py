"""Kaldi lattices: ``CompactLattice`` archives (``lat.JOB.gz``) read and written, binary and
text (best paths: ``hybridasr.decode.lattice_best_path``).

A CompactLattice is an acceptor on words whose weights are (graph cost, acoustic cost,
transition-ids): Kaldi's ``CompactLatticeWeight``. In an archive each entry is ``key `` then,
binary, an OpenFst ``vector`` FST of arc type ``compactlattice44`` (no ``\\0B``: Kaldi leaves
it out so that a single lattice is an OpenFst file), or, text, a newline, one line per arc
(``src dst word graph,acoustic,tid_tid_...``) and per final state (``state graph,acoustic,
tids``), and an empty line. ``lattice4`` (a state-level ``Lattice``, input transition-ids,
output words) is read too. Acoustic costs are unscaled, as ``latgen-faster-mapped`` writes
them. ``to_kaldifst`` expands one into a ``kaldifst.Lattice`` (Kaldi's ``ConvertLattice``).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Dict, Iterator, List, Tuple, Union

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.specifier import WSpecifier, parse_rspecifier
from hybridasr.kaldi.io.streams import InputStream, label
from hybridasr.kaldi.io.table_writer import TableWriter

FST_MAGIC = 2125659606
COMPACT_TYPE, LATTICE_TYPE = "compactlattice44", "lattice4"
INF = math.inf
# OpenFst property bits an encoded lattice states (as OpenFst knows them when Kaldi writes)
_EXPANDED, _MUTABLE, _ACCEPTOR = 0x1, 0x2, 0x10000
_EPSILONS, _NO_EPSILONS = 0x400000 | 0x1000000 | 0x4000000, 0x800000 | 0x2000000 | 0x8000000
_WEIGHTED, _UNWEIGHTED = 0x100000000, 0x200000000


@dataclass
class Arc:
    word: int
    graph: float
    acoustic: float
    tids: Tuple[int, ...]
    next: int


@dataclass
class CompactLattice:
    start: int = -1
    arcs: List[List[Arc]] = field(default_factory=list)
    finals: Dict[int, Tuple[float, float, Tuple[int, ...]]] = field(default_factory=dict)

    @property
    def num_states(self) -> int:
        return len(self.arcs)

    @property
    def num_arcs(self) -> int:
        return sum(len(a) for a in self.arcs)

    def add_state(self) -> int:
        self.arcs.append([])
        return len(self.arcs) - 1

    def scaled(self, lm_scale: float = 1.0, acoustic_scale: float = 1.0,
               word_ins_penalty: float = 0.0) -> "CompactLattice":
        """``lattice-scale`` then ``lattice-add-penalty`` (a new lattice)."""
        out = CompactLattice(self.start)
        for arcs in self.arcs:
            out.arcs.append([Arc(a.word, a.graph * lm_scale + (word_ins_penalty if a.word else 0),
                                 a.acoustic * acoustic_scale, a.tids, a.next) for a in arcs])
        out.finals = {s: (g * lm_scale, ac * acoustic_scale, t)
                      for s, (g, ac, t) in self.finals.items()}
        return out

    def topological_order(self) -> List[int]:
        """States reachable from the start, sources first; FormatError if there is a cycle."""
        if self.start < 0:
            return []
        order, state = [], {}
        stack = [(self.start, 0)]
        state[self.start] = 1
        while stack:
            s, i = stack[-1]
            if i < len(self.arcs[s]):
                stack[-1] = (s, i + 1)
                n = self.arcs[s][i].next
                st = state.get(n, 0)
                if st == 1:
                    raise FormatError("the lattice has a cycle (not a decoder's lattice)")
                if st == 0:
                    state[n] = 1
                    stack.append((n, 0))
            else:
                state[s] = 2
                order.append(s)
                stack.pop()
        order.reverse()
        return order

    def to_kaldifst(self):
        """The lattice as a ``kaldifst.Lattice`` (state-level: input transition-ids, output
        words; a compact arc's string becomes a chain), as Kaldi's ``ConvertLattice``."""
        import kaldifst

        lat = kaldifst.Lattice()
        for _ in self.arcs:
            lat.add_state()
        if self.start >= 0:
            lat.start = self.start

        def chain(s, word, g, ac, tids, dest):
            labels = list(tids) or [0]
            for k, tid in enumerate(labels):
                last = k == len(labels) - 1
                n = dest if last else lat.add_state()
                w = kaldifst.LatticeWeight(g, ac) if k == 0 else kaldifst.LatticeWeight.one
                lat.add_arc(s, kaldifst.LatticeArc(tid, word if k == 0 else 0, w, n))
                s = n

        for s, arcs in enumerate(self.arcs):
            for a in arcs:
                chain(s, a.word, a.graph, a.acoustic, a.tids, a.next)
        for s, (g, ac, tids) in self.finals.items():
            if tids:
                f = lat.add_state()
                chain(s, 0, g, ac, tids, f)
                lat.set_final(f, kaldifst.LatticeWeight.one)
            else:
                lat.set_final(s, kaldifst.LatticeWeight(g, ac))
        return lat


# ------------------------------------------------------------------ binary
def _read_exact(f: BinaryIO, n: int, name: str, key: str) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise FormatError(f"{name}: lattice {key}: unexpected end of data")
    return b


def _read_string(f, name, key) -> str:
    (n,) = struct.unpack("<i", _read_exact(f, 4, name, key))
    if not 0 <= n < 256:
        raise FormatError(f"{name}: lattice {key}: bad FST header (string of length {n})")
    return _read_exact(f, n, name, key).decode("ascii", "replace")


def read_binary_fst(f: BinaryIO, name: str, key: str) -> CompactLattice:
    """One ``vector`` FST (``compactlattice44`` or ``lattice4``) at the stream position."""
    (magic,) = struct.unpack("<i", _read_exact(f, 4, name, key))
    if magic != FST_MAGIC:
        raise FormatError(f"{name}: lattice {key}: not an OpenFst FST (bad magic number)")
    fst_type, arc_type = _read_string(f, name, key), _read_string(f, name, key)
    version, flags, _props, start, num_states, _num_arcs = struct.unpack(
        "<iiQqqq", _read_exact(f, 40, name, key))
    if fst_type != "vector" or arc_type not in (COMPACT_TYPE, LATTICE_TYPE) or flags & 3:
        raise FormatError(f"{name}: lattice {key}: a {fst_type} FST of {arc_type} arcs "
                          f"(flags {flags}); expected a vector FST of {COMPACT_TYPE} or "
                          f"{LATTICE_TYPE} arcs without symbol tables")
    if num_states < 0:
        raise FormatError(f"{name}: lattice {key}: the header has no state count")
    compact = arc_type == COMPACT_TYPE
    lat = CompactLattice(int(start), [[] for _ in range(num_states)])
    pending = []  # lattice4: (src, ilabel, olabel, g, a, dst)
    unpack2f, unpacki, unpackq = struct.Struct("<ff").unpack, struct.Struct("<i").unpack, \
        struct.Struct("<q").unpack

    def weight():
        g, a = unpack2f(_read_exact(f, 8, name, key))
        if not compact:
            return g, a, ()
        (n,) = unpacki(_read_exact(f, 4, name, key))
        if n < 0:
            raise FormatError(f"{name}: lattice {key}: negative string length")
        tids = struct.unpack(f"<{n}i", _read_exact(f, 4 * n, name, key)) if n else ()
        return g, a, tids

    for s in range(num_states):
        g, a, tids = weight()
        if g != INF:
            lat.finals[s] = (g, a, tids)
        (narcs,) = unpackq(_read_exact(f, 8, name, key))
        for _ in range(narcs):
            ilabel, olabel = struct.unpack("<ii", _read_exact(f, 8, name, key))
            g, a, tids = weight()
            (dst,) = unpacki(_read_exact(f, 4, name, key))
            if not 0 <= dst < num_states:
                raise FormatError(f"{name}: lattice {key}: arc to state {dst} of {num_states}")
            if compact:
                lat.arcs[s].append(Arc(olabel, g, a, tids, dst))
            else:
                pending.append((s, ilabel, olabel, g, a, dst))
    return lat if compact else _compact_from_state_level(lat, pending)


def _compact_from_state_level(lat: CompactLattice, arcs) -> CompactLattice:
    """A state-level lattice kept as a CompactLattice with one transition-id per arc (not
    determinized: same paths, same weights)."""
    for s, ilabel, olabel, g, a, dst in arcs:
        lat.arcs[s].append(Arc(olabel, g, a, (ilabel,) if ilabel else (), dst))
    return lat


def encode_binary(lat: CompactLattice) -> bytes:
    """The lattice as an OpenFst ``vector`` FST of ``compactlattice44`` arcs."""
    out = [struct.pack("<i", FST_MAGIC)]
    for s in ("vector", COMPACT_TYPE):
        out.append(struct.pack("<i", len(s)) + s.encode())
    eps = any(a.word == 0 for arcs in lat.arcs for a in arcs)
    weighted = any(a.graph or a.acoustic or a.tids for arcs in lat.arcs for a in arcs) or \
        any(w != (0.0, 0.0, ()) for w in lat.finals.values())
    props = _EXPANDED | _MUTABLE | _ACCEPTOR | (_EPSILONS if eps else _NO_EPSILONS) | \
        (_WEIGHTED if weighted else _UNWEIGHTED)
    # the arc count is left 0, as OpenFst writes a vector FST to a stream (readers ignore it)
    out.append(struct.pack("<iiQqqq", 2, 0, props, lat.start, lat.num_states, 0))

    def weight(g, a, tids):
        return struct.pack(f"<ffi{len(tids)}i", g, a, len(tids), *tids)

    zero = weight(INF, INF, ())
    for s, arcs in enumerate(lat.arcs):
        out.append(weight(*lat.finals[s]) if s in lat.finals else zero)
        out.append(struct.pack("<q", len(arcs)))
        for a in arcs:
            out.append(struct.pack("<ii", a.word, a.word) + weight(a.graph, a.acoustic, a.tids)
                       + struct.pack("<i", a.next))
    return b"".join(out)


# ------------------------------------------------------------------ text
def _f(v: float) -> str:
    """A float32 in the fewest digits that read back to the same float32."""
    return "Infinity" if v == INF else str(np.float32(v))


def encode_text(lat: CompactLattice) -> bytes:
    """Kaldi's text form: a newline, the arcs and finals (tab-separated), an empty line."""
    lines = [""]

    def w(g, a, tids):
        return f"{_f(g)},{_f(a)},{'_'.join(map(str, tids))}"

    for s in ([lat.start] if lat.start >= 0 else []) + \
            [s for s in range(lat.num_states) if s != lat.start]:
        for a in lat.arcs[s]:
            lines.append(f"{s}\t{a.next}\t{a.word}\t{w(a.graph, a.acoustic, a.tids)}")
        if s in lat.finals:
            lines.append(f"{s}\t{w(*lat.finals[s])}")
    return ("\n".join(lines) + "\n\n").encode()


def _parse_weight(text: str, where: str) -> Tuple[float, float, Tuple[int, ...]]:
    parts = text.split(",")
    try:
        if len(parts) == 2:
            return float(parts[0]), float(parts[1]), ()
        if len(parts) == 3:
            tids = tuple(int(t) for t in parts[2].split("_")) if parts[2] else ()
            return float(parts[0]), float(parts[1]), tids
    except ValueError:
        pass
    raise FormatError(f"{where}: bad lattice weight {text!r} (expected graph,acoustic[,tid_tid])")


def read_text_fst(f: BinaryIO, name: str, key: str) -> CompactLattice:
    """Lines up to an empty line (or the end): compact arcs ``s d word w``, state-level arcs
    ``s d tid word w``, finals ``s [w]``."""
    lat = CompactLattice()
    states = 0

    def grow(n):
        nonlocal states
        while len(lat.arcs) <= n:
            lat.arcs.append([])
        states = len(lat.arcs)

    while True:
        raw = f.readline()
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            break
        where = f"{name}: lattice {key}"
        p = line.split()
        try:
            s = int(p[0])
            if lat.start < 0:
                lat.start = s
            grow(s)
            if len(p) <= 2:
                lat.finals[s] = _parse_weight(p[1], where) if len(p) == 2 else (0.0, 0.0, ())
            elif len(p) in (4, 5):
                d = int(p[1])
                grow(d)
                g, a, tids = _parse_weight(p[-1], where)
                if len(p) == 4:
                    lat.arcs[s].append(Arc(int(p[2]), g, a, tids, d))
                else:
                    tid = int(p[2])
                    lat.arcs[s].append(Arc(int(p[3]), g, a, (tid,) if tid else (), d))
            else:
                raise ValueError
        except (ValueError, IndexError):
            raise FormatError(f"{where}: bad line {line!r}") from None
    return lat


# ------------------------------------------------------------------ archives
def iter_lattice_stream(f: BinaryIO, name: str) -> Iterator[Tuple[str, CompactLattice]]:
    while True:
        key = bytearray()
        while True:
            c = f.read(1)
            if not c:
                if key.strip():
                    raise FormatError(f"{name}: unexpected end of data after key {key.decode()}")
                return
            if c == b" ":
                break
            if c in b"\n\t\r" and not key:
                continue
            key += c
        k = key.decode("utf-8", "replace")
        head = f.peek(1)[:1] if hasattr(f, "peek") else b""
        if head == b"\xd6":
            yield k, read_binary_fst(f, name, k)
        elif head in (b"\n", b" ", b"\t", b"\r"):
            f.readline()
            yield k, read_text_fst(f, name, k)
        else:
            raise FormatError(f"{name}: lattice {k}: neither a binary FST nor Kaldi's text form")


def read_lattices(rspecifier: str) -> Iterator[Tuple[str, CompactLattice]]:
    """Yields (key, CompactLattice) from ``ark:lat.1``, ``ark:gunzip -c lat.*.gz|``, ..."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind != "ark":
        raise FormatError(f"{rspecifier}: lattices are read from archives (ark:...)")
    stream = InputStream(spec.rxfilename)
    ok = False
    try:
        yield from iter_lattice_stream(stream.f, label(spec.rxfilename))
        ok = True
    finally:
        stream.close(check=ok)


class CompactLatticeWriter(TableWriter):
    """Writes CompactLattices as Kaldi's tables do (binary, or text with ``ark,t``);
    ``ark:|gzip -c > lat.1.gz`` is what ``latgen-faster-mapped`` writes."""

    def __init__(self, wspecifier: Union[str, WSpecifier]):
        super().__init__(wspecifier)

    def encode(self, lat: CompactLattice) -> bytes:
        return encode_text(lat) if self.text else encode_binary(lat)

    def write(self, key: str, lat: CompactLattice) -> int:
        return self._write_value(key, self.encode(lat))
