"""Kaldi's decision tree: a ``ContextDependency`` (``tree/context-dep.h``), as in ``exp/*/tree``.

Layout (binary or text, Kaldi's basic I/O): the token ``ContextDependency``, ``N`` (context
width: 1 monophone, 3 triphone) and ``P`` (central position) as int32, an optional back-compat
``ToLength`` event map (read and dropped), the token ``ToPdf`` and the event map, then
``EndContextDependency``. An event map is one of

- ``NULL``;
- ``CE answer``: a constant (the pdf-id at a leaf);
- ``TE key size ( map_0 ... map_{size-1} )``: a table indexed by the value of ``key``;
- ``SE key [ yes-set ] { yes no }``: ``yes`` if the value of ``key`` is in the set, else ``no``.

An event is the phone window and the pdf-class: key -1 holds the pdf-class, keys 0..N-1 the
phones of the window (0 where the window runs past the utterance). ``compute(window,
pdf_class)`` is Kaldi's ``ContextDependency::Compute``: None where the tree has no answer.
"""
from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence, Tuple, Union

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter, read_kaldi_object
from hybridasr.utils.atomic import atomic_path

__all__ = ["ContextDependency", "read_tree", "write_tree", "PDF_CLASS_KEY"]

PDF_CLASS_KEY = -1

# event-map nodes: ("CE", answer) | ("TE", key, [child or None, ...]) |
#                  ("SE", key, frozenset(yes), yes_child, no_child); None is NULL
Node = Optional[tuple]


class ContextDependency:
    def __init__(self, context_width: int, central_position: int, to_pdf: Node,
                 name: str = "<tree>"):
        if context_width < 1 or not 0 <= central_position < context_width:
            raise FormatError(f"{name}: bad context width {context_width} / central position "
                              f"{central_position}")
        self.context_width = context_width
        self.central_position = central_position
        self.to_pdf = to_pdf
        self.name = name
        self._cache: Dict[Tuple[Tuple[int, ...], int], Optional[int]] = {}
        self.num_pdfs = _max_answer(to_pdf) + 1

    def compute(self, window: Sequence[int], pdf_class: int) -> Optional[int]:
        """The pdf-id of ``pdf_class`` of the central phone in ``window`` (length N)."""
        key = (tuple(int(p) for p in window), int(pdf_class))
        try:
            return self._cache[key]
        except KeyError:
            pass
        if len(key[0]) != self.context_width:
            raise FormatError(f"{self.name}: phone window {list(key[0])} has length "
                              f"{len(key[0])}, the tree's context width is {self.context_width}")
        event = {PDF_CLASS_KEY: key[1]}
        event.update(enumerate(key[0]))
        ans = _map(self.to_pdf, event)
        self._cache[key] = ans
        return ans

    def __repr__(self) -> str:
        return (f"ContextDependency({self.name}: N={self.context_width}, "
                f"P={self.central_position}, {self.num_pdfs} pdfs)")

    @classmethod
    def read(cls, r: KaldiObjectReader) -> "ContextDependency":
        r.expect_token("ContextDependency", "a tree file")
        n = r.read_int32("the context width N")
        p = r.read_int32("the central position P")
        tok = r.read_token("ToPdf")
        if tok == "ToLength":  # back-compat, as Kaldi: read and drop
            _read_map(r, r.read_token("an event map"), 0)
            tok = r.read_token("ToPdf")
        if tok != "ToPdf":
            raise FormatError(f"{r.name}: expected ToPdf in the tree, got {tok[:40]!r}")
        to_pdf = _read_map(r, r.read_token("an event map"), 0)
        r.expect_token("EndContextDependency", "the tree")
        return cls(n, p, to_pdf, name=r.name)


    def write(self, w: KaldiObjectWriter) -> None:
        """Writes as Kaldi's ``ContextDependency::Write``."""
        w.token("ContextDependency")
        w.int32(self.context_width)
        w.int32(self.central_position)
        w.token("ToPdf")
        _write_map(w, self.to_pdf)
        w.token("EndContextDependency")
        w.raw_text("\n")

    def pdfs_for(self, phone: int, pdf_class: int) -> List[int]:
        """The pdfs ``pdf_class`` of ``phone`` (as central phone) can have in any context,
        sorted (what Kaldi's ``GetPdfInfo`` finds for the transition model)."""
        fixed = {self.central_position: int(phone), PDF_CLASS_KEY: int(pdf_class)}
        found, stack = set(), [self.to_pdf]
        while stack:
            node = stack.pop()
            if node is None:
                continue
            if node[0] == "CE":
                found.add(node[1])
                continue
            value = fixed.get(node[1])
            if node[0] == "TE":
                if value is None:
                    stack.extend(node[2])
                elif 0 <= value < len(node[2]):
                    stack.append(node[2][value])
            elif value is None:
                stack.extend(node[3:5])
            else:
                stack.append(node[3] if value in node[2] else node[4])
        return sorted(found)


def _write_map(w: KaldiObjectWriter, root: Node) -> None:
    # iterative (a tree of thousands of leaves nests deeply); items are nodes or tokens
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            w.token(node)
        elif node is None:
            w.token("NULL")
        elif node[0] == "CE":
            w.token("CE")
            w.int32(node[1])
        elif node[0] == "TE":
            w.token("TE")
            w.int32(node[1])
            _write_uint32(w, len(node[2]))
            w.token("(")
            stack.append(")")
            stack.extend(reversed(node[2]))
        else:
            w.token("SE")
            w.int32(node[1])
            w.int32_vector(sorted(node[2]))
            w.token("{")
            stack.extend(["}", node[4], node[3]])


def _write_uint32(w: KaldiObjectWriter, v: int) -> None:
    """A uint32, as Kaldi's ``WriteBasicType<uint32>`` (binary size byte -4)."""
    if w.binary:
        w.f.write(b"\xfc" + struct.pack("<I", int(v)))
    else:
        w.int32(v)


def _read_map(r: KaldiObjectReader, tok: str, depth: int) -> Node:
    if depth > 5000:
        raise FormatError(f"{r.name}: event map nested too deeply (corrupt tree?)")
    if tok == "NULL":
        return None
    if tok == "CE":
        return ("CE", r.read_int32("a leaf's answer"))
    if tok == "TE":
        key = r.read_int32("a table's key")
        size = _read_uint32(r, "a table's size")
        if not 0 <= size <= 10_000_000:
            raise FormatError(f"{r.name}: bad table size {size} in the tree")
        r.expect_token("(", "a TableEventMap")
        table = [_read_map(r, r.read_token("an event map"), depth + 1) for _ in range(size)]
        r.expect_token(")", "a TableEventMap")
        return ("TE", key, table)
    if tok == "SE":
        key = r.read_int32("a split's key")
        yes_set = frozenset(r.read_int32_vector("a split's yes-set"))
        r.expect_token("{", "a SplitEventMap")
        yes = _read_map(r, r.read_token("an event map"), depth + 1)
        no = _read_map(r, r.read_token("an event map"), depth + 1)
        r.expect_token("}", "a SplitEventMap")
        if yes is None or no is None:
            raise FormatError(f"{r.name}: a SplitEventMap with a NULL branch (corrupt tree)")
        return ("SE", key, yes_set, yes, no)
    raise FormatError(f"{r.name}: expected an event map (NULL, CE, TE or SE), got {tok[:40]!r}")


def _read_uint32(r: KaldiObjectReader, what: str) -> int:
    """A uint32 (Kaldi's binary size byte is -4 for unsigned types)."""
    if not r.binary:
        return r.read_int32(what)
    b = r._read_exact(5, what)
    if b[0] not in (4, 252):
        raise FormatError(f"{r.name}: expected {what} (uint32 size byte), got size byte {b[0]}")
    return struct.unpack("<I", b[1:])[0]


def _map(node: Node, event: Dict[int, int]) -> Optional[int]:
    while node is not None:
        kind = node[0]
        if kind == "CE":
            return node[1]
        value = event.get(node[1])
        if value is None:
            return None
        if kind == "TE":
            table = node[2]
            if not 0 <= value < len(table):
                return None
            node = table[value]
        else:
            node = node[3] if value in node[2] else node[4]
    return None


def _max_answer(root: Node) -> int:
    best, stack = -1, [root]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if node[0] == "CE":
            best = max(best, node[1])
        elif node[0] == "TE":
            stack.extend(node[2])
        else:
            stack.extend(node[3:5])
    return best


def read_tree(path: Union[str, "object"]) -> ContextDependency:
    """Reads a Kaldi ``tree`` file (binary or text; ``-`` or ``cmd |`` too)."""
    return read_kaldi_object(path, ContextDependency.read, "tree")


def write_tree(tree: ContextDependency, path: str, binary: bool = True) -> None:
    """Writes a Kaldi ``tree`` file (atomically)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        tree.write(KaldiObjectWriter(f, binary))
