"""ARPA back-off language model files: a strict reader, an SRILM-style writer and a scorer.

Reading follows Kaldi's ``ArpaFileParser`` (``src/lm/arpa-file-parser.cc``), which is what
``arpa2fst`` accepts, and is stricter where Kaldi would only warn: lines before ``\\data\\``
are skipped; the ``\\data\\`` section holds ``ngram N=COUNT`` lines for orders 1..N; then a
``\\N-grams:`` section per order, each line ``log10-prob w1 .. wN [log10-back-off]`` (no
back-off at the highest order), fields split on spaces and tabs only (as Kaldi: a no-break
space is part of a word); then ``\\end\\``. More n-grams in a section than its header count is
an error (as Kaldi), fewer only a warning. Every error is a ``FormatError`` naming the file and
line. Files ending in ``.gz`` are read and written gzipped. Text is UTF-8; bytes that are not
are carried through unchanged (``surrogateescape``), as Kaldi's byte strings.

Writing follows SRILM's ``ngram-count -lm`` layout (``-sort``): an empty line, ``\\data\\``,
the counts, each order's section, ``\\end\\``; probabilities and back-off weights as ``%.7g``
(log10, ``-99`` for log 0, the ``<s>`` unigram), fields separated by tabs; within an order the
n-grams are sorted by their history read backwards, then by the predicted word (SRILM walks
its context trie, which stores histories most recent word first), comparing UTF-8 bytes.
"""
from __future__ import annotations

import gzip
import logging
import math
import re
import struct
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from hybridasr.errors import FormatError
from hybridasr.utils.atomic import atomic_path

log = logging.getLogger(__name__)

BOS, EOS = "<s>", "</s>"
LOG_ZERO = -99.0  # SRILM's "log 0" (the <s> unigram)
FIELDS = re.compile(r"[ \t]+")  # Kaldi's and SRILM's separators: never a no-break space
_NGRAM_LINE = re.compile(r"ngram[ \t]+(\d+)[ \t]*=[ \t]*(\d+)")
_SECTION = re.compile(r"\\(\d+)-grams:")


def open_text(path: str, mode: str = "r", gz: Optional[bool] = None):
    """A text file, gzipped when the name ends in ``.gz`` (or ``gz``), UTF-8 with bytes that
    are not kept as they are."""
    kw = {"encoding": "utf-8", "errors": "surrogateescape"}
    if path.endswith(".gz") if gz is None else gz:
        return gzip.open(path, mode + "t", **kw)
    return open(path, mode, **kw)


def split_fields(line: str) -> List[str]:
    """Fields of a line split on spaces and tabs (``\\r\\n`` at the ends dropped)."""
    line = line.strip(" \t\r\n")
    return FIELDS.split(line) if line else []


@dataclass
class ArpaEntry:
    """One n-gram line: ``words`` (n words), log10 probability, log10 back-off (None when
    absent), the line number and the line as read (fields joined by tabs)."""
    words: Tuple[str, ...]
    logprob: float
    backoff: Optional[float]
    lineno: int
    text: str


class ArpaReader:
    """Reads an ARPA file: ``counts`` (header, order 1 first) is known once constructed;
    ``entries()`` then yields every n-gram line, checked, order by order, and closes the
    file (``close()`` or ``with`` closes it otherwise)."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._f = open_text(path)
        except FileNotFoundError:
            raise FormatError(f"missing ARPA language model {path}") from None
        self.lineno = 0
        self._pending: Optional[str] = None
        try:
            self.counts: List[int] = self._read_header()
        except BaseException:
            self._f.close()
            raise

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "ArpaReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def order(self) -> int:
        return len(self.counts)

    def _err(self, msg: str, line: Optional[str] = None) -> FormatError:
        shown = f" [{line.strip()}]" if line is not None else ""
        return FormatError(f"{self.path}:{self.lineno}: {msg}{shown}")

    def _lines(self) -> Iterator[str]:
        try:
            for raw in self._f:
                self.lineno += 1
                yield raw
        except (OSError, EOFError, UnicodeError) as e:  # a truncated or non-gzip .gz
            self.lineno += 1
            raise self._err(f"cannot read: {e}") from None

    def _read_header(self) -> List[int]:
        lines = self._lines()
        for raw in lines:
            if raw.strip(" \t\r\n") == "\\data\\":
                break
        else:
            raise self._err("no \\data\\ line (not an ARPA file?)")
        counts: Dict[int, int] = {}
        for raw in lines:
            line = raw.strip(" \t\r\n")
            if not line:
                continue
            if line.startswith("\\"):
                self._pending = line
                break
            m = _NGRAM_LINE.fullmatch(line)
            if m is None:
                raise self._err("expected 'ngram N=COUNT' in the \\data\\ section", raw)
            n = int(m.group(1))
            if n < 1 or n in counts:
                raise self._err(f"bad or repeated order {n} in the \\data\\ section", raw)
            counts[n] = int(m.group(2))
        else:
            raise self._err("the file ends in the \\data\\ section")
        if not counts or sorted(counts) != list(range(1, len(counts) + 1)):
            raise self._err(f"the \\data\\ section must give orders 1..N, got "
                            f"{sorted(counts) or 'none'}")
        self._lines_iter = lines
        return [counts[n] for n in range(1, len(counts) + 1)]

    def entries(self) -> Iterator[ArpaEntry]:
        lines, top = self._lines_iter, self.order
        directive = self._pending
        try:
            for n in range(1, top + 1):
                if directive != f"\\{n}-grams:":
                    raise self._err(f"expected \\{n}-grams:", directive or "")
                seen, directive = 0, None
                for raw in lines:
                    line = raw.strip(" \t\r\n")
                    if not line:
                        continue
                    if line.startswith("\\"):
                        if line not in (f"\\{n + 1}-grams:", "\\end\\"):
                            raise self._err(f"unexpected directive after the {n}-grams "
                                            f"(expected \\{n + 1}-grams: or \\end\\)", raw)
                        directive = line
                        break
                    f = FIELDS.split(line)
                    if not n + 1 <= len(f) <= (n + 1 if n == top else n + 2):
                        raise self._err(f"expected a log10 probability, {n} word(s)"
                                        f"{'' if n == top else ' and an optional back-off'}"
                                        f", got {len(f)} field(s)", raw)
                    seen += 1
                    if seen > self.counts[n - 1]:
                        raise self._err(f"more {n}-grams than the header's "
                                        f"{self.counts[n - 1]}", raw)
                    yield ArpaEntry(tuple(f[1:n + 1]), self._number(f[0], raw),
                                    self._number(f[n + 1], raw) if len(f) > n + 1 else None,
                                    self.lineno, "\t".join(f))
                else:
                    raise self._err(f"the file ends in the {n}-grams (no \\end\\)")
                if seen < self.counts[n - 1]:
                    log.warning("%s: %d %d-grams, fewer than the header's %d", self.path,
                                seen, n, self.counts[n - 1])
            if directive != "\\end\\":
                raise self._err("expected \\end\\", directive or "")
        finally:
            self._f.close()

    def _number(self, text: str, raw: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise self._err(f"not a number: {text!r}", raw) from None
        if math.isnan(v):
            raise self._err(f"not a number: {text!r}", raw)
        return v


# ------------------------------------------------------------------ writing
def _sort_key(words: Tuple[str, ...]):
    enc = [w.encode("utf-8", "surrogateescape") for w in words]
    return tuple(reversed(enc[:-1])), enc[-1]


def _fmt(x: float) -> str:
    """``%.7g`` of the value as a 32-bit float (SRILM keeps log probabilities as floats)."""
    if x <= LOG_ZERO:
        return "%.7g" % LOG_ZERO
    return "%.7g" % struct.unpack("<f", struct.pack("<f", x))[0]


def write_arpa(path: str, orders: Sequence[Dict[Tuple[str, ...], Tuple[float, Optional[float]]]]
               ) -> None:
    """Writes an ARPA file atomically (gzipped for ``.gz``): ``orders[n-1]`` maps each n-gram
    to (log10 prob, log10 back-off or None)."""
    with atomic_path(path) as tmp:
        with open_text(tmp, "w", gz=path.endswith(".gz")) as f:
            f.write("\n\\data\\\n")
            for n, grams in enumerate(orders, start=1):
                f.write(f"ngram {n}={len(grams)}\n")
            for n, grams in enumerate(orders, start=1):
                f.write(f"\n\\{n}-grams:\n")
                for words in sorted(grams, key=_sort_key):
                    lp, bo = grams[words]
                    tail = "" if bo is None else "\t" + _fmt(bo)
                    f.write(f"{_fmt(lp)}\t{' '.join(words)}{tail}\n")
            f.write("\n\\end\\\n")


# ------------------------------------------------------------------ scoring
@dataclass
class Perplexity:
    """SRILM ``ngram -ppl`` style totals: ``ppl`` over words and ``</s>``, OOVs left out."""
    sentences: int
    words: int
    oovs: int
    logprob: float  # log10, summed over the scored words and </s>

    @property
    def ppl(self) -> float:
        n = self.words - self.oovs + self.sentences
        return 10.0 ** (-self.logprob / n) if n else math.inf


class ArpaLm:
    """An ARPA model in memory (for scoring and checks; not meant for very large models)."""

    def __init__(self, grams: Dict[Tuple[str, ...], Tuple[float, Optional[float]]],
                 order: int):
        self.grams, self.order = grams, order
        self.vocab = sorted(w for (w,) in (g for g in grams if len(g) == 1))

    @classmethod
    def read(cls, path: str) -> "ArpaLm":
        r = ArpaReader(path)
        grams = {e.words: (e.logprob, e.backoff) for e in r.entries()}
        return cls(grams, r.order)

    def log10_prob(self, history: Sequence[str], word: str) -> Optional[float]:
        """log10 P(word | history) with back-off; None when ``word`` has no unigram."""
        if (word,) not in self.grams:
            return None
        h = tuple(history)[len(history) - self.order + 1:] if self.order > 1 else ()
        backoff = 0.0
        while True:
            got = self.grams.get(h + (word,))
            if got is not None:
                return backoff + (LOG_ZERO if got[0] <= LOG_ZERO else got[0])
            ctx = self.grams.get(h)
            backoff += (ctx[1] or 0.0) if ctx is not None else 0.0
            h = h[1:]

    def perplexity(self, sentences: Iterable[Sequence[str]]) -> Perplexity:
        total = Perplexity(0, 0, 0, 0.0)
        for words in sentences:
            total.sentences += 1
            history: List[str] = [BOS]
            for w in list(words) + [EOS]:
                if w != EOS:
                    total.words += 1
                lp = self.log10_prob(history, w)
                if lp is None:
                    total.oovs += 1
                else:
                    total.logprob += lp
                history.append(w)
        return total
