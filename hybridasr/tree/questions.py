"""Tree questions: Kaldi's ``compile-questions`` and its ``questions.qst``.

``compile_questions`` is ``compile-questions``: the phone questions (sorted, duplicates
dropped; e.g. ``cluster_phones``' output, ``hybridasr.tree.phone_clustering``) for every window
position 0..N-1, and for the pdf-class key (-1) the questions ``{0}, {0,1}, ...`` up to the
topology's largest number of pdf-classes. ``Questions`` holds them and reads and writes
Kaldi's ``questions.qst`` (``Questions::Write``); ``questions.int`` is their text form.
"""
from __future__ import annotations

import logging
import os
from typing import Dict, List, Optional, Sequence, Tuple

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import HmmTopology
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter, read_kaldi_object
from hybridasr.utils.atomic import atomic_path, atomic_open

__all__ = ["compile_questions", "Questions", "read_questions_int", "write_questions_int",
           "read_questions_qst", "write_questions_qst", "PDF_CLASS_KEY"]

log = logging.getLogger(__name__)

PDF_CLASS_KEY = -1


class Questions:
    """Per key, the candidate questions (sorted value tuples): Kaldi's ``Questions``.
    ``refine_iters`` / ``top_n`` are Kaldi's per-key ``RefineClustersOptions`` (written to
    ``questions.qst``; tree building here needs 0 iterations, compile-questions' default)."""

    def __init__(self, by_key: Dict[int, List[Tuple[int, ...]]],
                 refine: Optional[Dict[int, Tuple[int, int]]] = None, name: str = "<questions>"):
        self.by_key = {int(k): [tuple(int(v) for v in q) for q in qs]
                       for k, qs in by_key.items()}
        self.refine = {k: (refine or {}).get(k, (0, 2)) for k in self.by_key}
        self.name = name

    def keys(self) -> List[int]:
        return sorted(self.by_key)

    def __getitem__(self, key: int) -> List[Tuple[int, ...]]:
        return self.by_key[key]

    def __eq__(self, other) -> bool:
        return isinstance(other, Questions) and self.by_key == other.by_key and \
            self.refine == other.refine

    def write(self, w: KaldiObjectWriter) -> None:
        w.token("<Questions>")
        for key in self.keys():
            w.token("<Key>")
            w.int32(key)
            w.token("<QuestionsForKey>")
            w.int32(len(self.by_key[key]))
            for q in self.by_key[key]:
                w.int32_vector(q)
            iters, top_n = self.refine[key]
            w.token("<RefineClustersOptions>")
            w.int32(iters)
            w.int32(top_n)
            w.token("</RefineClustersOptions>")
            w.token("</QuestionsForKey>")
        w.token("</Questions>")

    @classmethod
    def read(cls, r: KaldiObjectReader) -> "Questions":
        r.expect_token("<Questions>", "a questions file")
        by_key, refine = {}, {}
        while True:
            tok = r.read_token("<Key> or </Questions>")
            if tok == "</Questions>":
                return cls(by_key, refine, name=r.name)
            if tok != "<Key>":
                raise FormatError(f"{r.name}: expected <Key> in the questions, got {tok[:40]!r}")
            key = r.read_int32("a key")
            r.expect_token("<QuestionsForKey>", "the questions of a key")
            n = r.read_int32("the number of questions")
            if not 0 <= n <= 10_000_000:
                raise FormatError(f"{r.name}: bad number of questions {n}")
            by_key[key] = [tuple(r.read_int32_vector("a question")) for _ in range(n)]
            r.expect_token("<RefineClustersOptions>", "the questions of a key")
            refine[key] = (r.read_int32("num-iters"), r.read_int32("top-n"))
            r.expect_token("</RefineClustersOptions>", "the questions of a key")
            r.expect_token("</QuestionsForKey>", "the questions of a key")


def compile_questions(questions: Sequence[Sequence[int]], topo: HmmTopology,
                      context_width: int = 3, num_iters_refine: int = 0,
                      name: str = "<questions>") -> Questions:
    """Kaldi's ``compile-questions``: ``questions`` (phone sets, e.g. cluster-phones' output
    plus ``extra_questions.int``) for keys 0..N-1, pdf-class questions for key -1."""
    qs = []
    for q in questions:
        s = sorted(int(v) for v in q)
        if len(set(s)) != len(s):
            raise FormatError(f"{name}: a question has duplicate phones: {s}")
        qs.append(tuple(s))
    uniq = sorted(set(qs))
    if len(uniq) != len(qs):
        log.warning("%d duplicate questions present in %s", len(qs) - len(uniq), name)
    seen = sorted({v for q in uniq for v in q})
    topo_phones = sorted(topo.phones)
    if seen != topo_phones:
        extra = sorted(set(seen) - set(topo_phones))
        if extra:
            raise FormatError(f"{name}: questions ask about phones {extra[:10]} that the "
                              f"topology does not define")
        log.warning("the questions do not ask about phones %s of the topology",
                    sorted(set(topo_phones) - set(seen))[:20])
    max_classes = 0
    for p in topo_phones:
        entry = topo.topology_for_phone(p)
        n = 1 + max(max(s.forward_pdf_class, s.self_loop_pdf_class) for s in entry)
        max_classes = max(max_classes, n)
    by_key: Dict[int, List[Tuple[int, ...]]] = {n: list(uniq) for n in range(context_width)}
    by_key[PDF_CLASS_KEY] = [tuple(range(i + 1)) for i in range(max_classes - 1)]
    refine = {k: (num_iters_refine, 2) for k in by_key}
    return Questions(by_key, refine, name=name)


def read_questions_int(path: str) -> List[List[int]]:
    """A questions file in Kaldi's text form (``questions.int``: one phone set per line)."""
    from hybridasr.kaldi.io.table import read_int_lists

    return read_int_lists(path)


def write_questions_int(questions: Sequence[Sequence[int]], path: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        for q in questions:
            f.write(" ".join(str(int(v)) for v in q) + "\n")


def write_questions_qst(q: Questions, path: str, binary: bool = True) -> None:
    """Kaldi's ``questions.qst`` (``WriteKaldiObject(Questions)``), atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        q.write(KaldiObjectWriter(f, binary))
        if not binary:
            f.write(b"\n")


def read_questions_qst(path: str) -> Questions:
    if not os.path.isfile(path):
        raise FormatError(f"missing questions file {path}")
    return read_kaldi_object(path, Questions.read, "questions")
