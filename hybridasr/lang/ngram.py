"""N-gram language models estimated from plain text, written as ARPA: for a user without an LM.

Smoothing (``--smoothing``), always interpolated, as SRILM's ``ngram-count -interpolate``
with no count cut-offs (``-gt1min 1 -gt2min 1 -gt3min 1 ...``; SRILM's own default drops
singleton n-grams of order 3 and up):

* ``kn``: modified Kneser-Ney (``-kndiscount``, Chen & Goodman). Below the highest order an
  n-gram's count is replaced by the number of different words seen before it (its
  continuation count), except n-grams starting with ``<s>``, which keep their counts. Each
  order has three discounts from its counts-of-counts n1..n4: Y = n1 / (n1 + 2 n2),
  D1 = 1 - 2Y n2/n1, D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3. With c(h z) the (modified)
  counts of history h, T(h) their sum and N1, N2, N3+(h) the number of words z seen after h
  once, twice, three times or more:
  ``p(z|h) = max(c(h z) - D(c), 0) / T(h) + gamma(h) p(z|h')``,
  ``gamma(h) = (D1 N1(h) + D2 N2(h) + D3+ N3+(h)) / T(h)``, h' is h without its first
  word. SRILM stops when a counts-of-count is zero or a discount negative (small corpora);
  here that order falls back to ``ukn``, with a warning.
* ``ukn``: the same with one discount D = n1 / (n1 + 2 n2) (``-ukndiscount``; D = 0.5 when
  n1 or n2 is zero).
* ``wb``: Witten-Bell (``-wbdiscount``) on plain counts: with U(h) the number of different
  words seen after h, ``p(z|h) = (c(h z) + U(h) p(z|h')) / (T(h) + U(h))``. With
  ``--order=1`` this is what Kaldi's tutorial recipe runs (``ngram-count -order 1
  -wbdiscount``; the ``lm.arpa`` files in ``../shared``), and the output is the same.

The unigrams are interpolated with the uniform distribution over the vocabulary V: every word
seen, ``</s>``, and the ``--vocab`` words (so words of the lexicon that the text lacks get
``gamma / |V|``); ``<s>`` is written with probability 0 (``-99``) and a back-off weight.
Since the seen words' shares and gamma add up to one, the ARPA back-off weight of a history is
gamma itself. The model is written as SRILM writes it (``hybridasr.lang.arpa.write_arpa``).

Vocabulary (``--vocab``): a ``words.txt`` (``word id`` lines) or a word list (first field of
each line); ``<eps>``, ``<s>``, ``</s>`` and ``#0`` / ``#nonterm...`` are left out. A text
word outside it becomes ``--oov-symbol`` (Kaldi's ``data/lang/oov.txt``, ``<UNK>`` by
default), which must be in the vocabulary, so that every n-gram of the LM survives
``arpa2fst`` with that lang's ``words.txt``; with an empty ``--oov-symbol`` such words are
dropped from their sentence instead. Lines are split on spaces and tabs; empty lines are
skipped; ``<s>``, ``</s>``, ``<eps>`` and ``#0`` in the text are an error.
"""
from __future__ import annotations

import logging
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from hybridasr.errors import ConfigError, FormatError
from hybridasr.lang.arpa import BOS, EOS, LOG_ZERO, open_text, split_fields, write_arpa
from hybridasr.options import option
from hybridasr.utils.words import normalized_word

log = logging.getLogger(__name__)

SMOOTHINGS = ("kn", "ukn", "wb")
RESERVED = (BOS, EOS, "<eps>", "#0")
Ngram = Tuple[str, ...]


@dataclass
class NgramOptions:
    order: int = option(3, "n-gram order", minimum=1)
    smoothing: str = option("kn", "kn: interpolated modified Kneser-Ney (SRILM -kndiscount "
                                  "-interpolate); ukn: unmodified Kneser-Ney; wb: Witten-Bell",
                            choices=SMOOTHINGS)
    vocab: str = option("", "vocabulary: a words.txt or a word list; text words outside it "
                            "become --oov-symbol (empty: every word of the text is kept)")
    oov_symbol: str = option("<UNK>", "what a word outside --vocab becomes (the lang dir's "
                                      "oov.txt); empty: such words are dropped")
    has_utt_ids: bool = option(False, "the first field of each line is an utterance id "
                                      "(Kaldi's data/*/text)")
    normalize_unknown: bool = option(True, "with --vocab: a word outside it is looked up "
                                           "again lower-cased and without leading and "
                                           "trailing punctuation (counted); a token of "
                                           "punctuation only is left out (counted); false: "
                                           "every such word is --oov-symbol")


@dataclass
class LmSummary:
    """What ``make_ngram_lm`` did: sentences and words read, words mapped to the OOV symbol
    (or dropped), n-grams written per order, the discounts used per order."""
    sentences: int = 0
    words: int = 0
    oov_words: int = 0
    normalized_words: int = 0  # found in the vocabulary lower-cased / without punctuation
    dropped_tokens: int = 0    # punctuation-only tokens left out
    ngrams: List[int] = field(default_factory=list)
    discounts: List[Tuple[float, float, float]] = field(default_factory=list)


# ------------------------------------------------------------------ input
def read_vocab(path: str) -> Set[str]:
    """The words of a ``words.txt`` or word list (first field of each line), without
    ``<eps>``, ``<s>``, ``</s>`` and disambiguation symbols."""
    if not os.path.isfile(path):
        raise FormatError(f"missing vocabulary file {path}")
    words = set()
    with open_text(path) as f:
        for line in f:
            fields = split_fields(line)
            if fields and fields[0] not in RESERVED and not fields[0].startswith("#nonterm"):
                words.add(fields[0])
    if not words:
        raise FormatError(f"{path}: no words in the vocabulary file")
    return words


def read_sentences(path: str, has_utt_ids: bool = NgramOptions.has_utt_ids,
                   vocab: Optional[Set[str]] = None,
                   oov_symbol: str = NgramOptions.oov_symbol,
                   summary: Optional[LmSummary] = None,
                   normalize_unknown: bool = NgramOptions.normalize_unknown
                   ) -> Iterator[List[str]]:
    """The sentences of a text file (``.gz`` too), words outside ``vocab`` (looked up
    normalised first, with ``normalize_unknown``: ``hybridasr.utils.words``) mapped to
    ``oov_symbol`` or dropped (empty ``oov_symbol``); empty sentences are skipped."""
    if not os.path.isfile(path):
        raise FormatError(f"missing text file {path}")
    summary = summary if summary is not None else LmSummary()
    with open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            words = split_fields(line)[1 if has_utt_ids else 0:]
            for w in words:
                if w in RESERVED:
                    raise FormatError(f"{path}:{lineno}: the text holds the reserved word "
                                      f"{w!r} (sentence marks are added here)")
            if vocab is not None:
                mapped = []
                for w in words:
                    if w not in vocab and normalize_unknown:
                        norm = normalized_word(w, vocab)
                        if norm == "":
                            summary.dropped_tokens += 1
                            continue
                        if norm is not None:
                            summary.normalized_words += 1
                            w = norm
                    if w not in vocab:
                        summary.oov_words += 1
                        w = oov_symbol
                    if w:
                        mapped.append(w)
                words = mapped
            if words:
                summary.sentences += 1
                summary.words += len(words)
                yield words


def count_ngrams(sentences: Iterable[Sequence[str]], order: int) -> List[Counter]:
    """Raw counts of the n-grams of order 1..``order`` in ``<s> sentence </s>``."""
    counts: List[Counter] = [Counter() for _ in range(order)]
    for words in sentences:
        toks = (BOS,) + tuple(words) + (EOS,)
        for n in range(1, order + 1):
            c = counts[n - 1]
            for i in range(len(toks) - n + 1):
                c[toks[i:i + n]] += 1
    return counts


# ------------------------------------------------------------------ estimation
def kn_counts(counts: List[Counter]) -> List[Dict[Ngram, int]]:
    """Kneser-Ney's counts: below the highest order, the number of different words seen
    before an n-gram; n-grams starting with ``<s>`` (and the highest order) keep theirs."""
    out: List[Dict[Ngram, int]] = []
    for n in range(len(counts) - 1):
        before = Counter(g[1:] for g in counts[n + 1])
        out.append({g: c if g[0] == BOS else before[g] for g, c in counts[n].items()})
    out.append(dict(counts[-1]))
    return out


def kn_discounts(counts: Dict[Ngram, int], modified: bool, order: int
                 ) -> Tuple[float, float, float]:
    """(D1, D2, D3+) of one order from its counts-of-counts (n-grams predicting ``<s>`` left
    out); unmodified (one D) when ``modified`` is false or the modified ones cannot be had."""
    nk = Counter(c for g, c in counts.items() if g[-1] != BOS and c <= 4)
    n1, n2, n3, n4 = (nk[k] for k in (1, 2, 3, 4))
    if modified and n1 and n2 and n3 and n4:
        y = n1 / (n1 + 2 * n2)
        d = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
        if min(d) >= 0:
            return d
    if modified:
        log.warning("order %d: counts-of-counts n1..n4 = %d %d %d %d do not give modified "
                    "Kneser-Ney discounts (too little text); using one discount", order,
                    n1, n2, n3, n4)
    d1 = n1 / (n1 + 2 * n2) if n1 and n2 else 0.5
    return d1, d1, d1


def estimate(counts: List[Counter], smoothing: str = NgramOptions.smoothing,
             vocab: Iterable[str] = (), summary: Optional[LmSummary] = None
             ) -> List[Dict[Ngram, Tuple[float, Optional[float]]]]:
    """The interpolated model of ``counts`` (from ``count_ngrams``) as ``write_arpa`` takes
    it: per order, n-gram -> (log10 prob, log10 back-off or None)."""
    if smoothing not in SMOOTHINGS:
        raise ConfigError(f"--smoothing={smoothing}: expected one of {', '.join(SMOOTHINGS)}")
    order = len(counts)
    used = kn_counts(counts) if smoothing in ("kn", "ukn") else [dict(c) for c in counts]
    words = {g[0] for g in counts[0] if g[0] != BOS} | {EOS} | set(vocab)
    uniform = 1.0 / len(words)
    probs: List[Dict[Ngram, float]] = []
    gammas: Dict[Ngram, float] = {}
    for n in range(1, order + 1):
        d = (kn_discounts(used[n - 1], smoothing == "kn", n) if smoothing != "wb"
             else (0.0, 0.0, 0.0))
        if summary is not None:
            summary.discounts.append(d)
        by_history: Dict[Ngram, List[Tuple[str, int]]] = defaultdict(list)
        for g, c in used[n - 1].items():
            if g[-1] != BOS:
                by_history[g[:-1]].append((g[-1], c))
        p: Dict[Ngram, float] = {}
        for h, followers in by_history.items():
            total = sum(c for _, c in followers)
            if smoothing == "wb":
                gamma = len(followers) / (total + len(followers))
                own = {z: c / (total + len(followers)) for z, c in followers}
            else:
                gamma = sum(d[min(c, 3) - 1] for _, c in followers) / total
                own = {z: max(c - d[min(c, 3) - 1], 0.0) / total for z, c in followers}
            gammas[h] = gamma
            for z, share in own.items():
                lower = probs[n - 2][h[1:] + (z,)] if n > 1 else uniform
                p[h + (z,)] = share + gamma * lower
        if n == 1:
            gamma0 = gammas[()]
            for w in words:
                p.setdefault((w,), gamma0 * uniform)
        probs.append(p)

    def log10(x: float) -> float:
        return math.log10(x) if x > 0 else LOG_ZERO

    out: List[Dict[Ngram, Tuple[float, Optional[float]]]] = []
    for n, p in enumerate(probs, start=1):
        entries = {g: (log10(x), log10(gammas[g]) if n < order and g in gammas else None)
                   for g, x in p.items()}
        if n == 1:
            entries[(BOS,)] = (LOG_ZERO, log10(gammas[(BOS,)]) if order > 1 else None)
        out.append(entries)
    return out


def make_ngram_lm(text: str, arpa: str, opts: Optional[NgramOptions] = None) -> LmSummary:
    """Estimates an n-gram LM from ``text`` (one sentence a line; ``.gz`` too) and writes it
    to ``arpa`` (gzipped when the name ends in ``.gz``), atomically."""
    opts = opts or NgramOptions()
    summary = LmSummary()
    vocab = read_vocab(opts.vocab) if opts.vocab else None
    if vocab is not None and opts.oov_symbol and opts.oov_symbol not in vocab:
        raise ConfigError(f"--oov-symbol={opts.oov_symbol} is not in the vocabulary "
                          f"{opts.vocab}: give the lang dir's oov.txt word, or an empty "
                          f"--oov-symbol to drop words outside the vocabulary")
    sentences = read_sentences(text, opts.has_utt_ids, vocab, opts.oov_symbol, summary,
                               opts.normalize_unknown)
    counts = count_ngrams(sentences, opts.order)
    if summary.sentences == 0:
        raise FormatError(f"{text}: no words to estimate a language model from")
    model = estimate(counts, opts.smoothing, vocab or (), summary)
    write_arpa(arpa, model)
    summary.ngrams = [len(m) for m in model]
    oovs = "" if vocab is None else (
        f" ({summary.oov_words} not in {opts.vocab}: "
        f"{'as ' + opts.oov_symbol if opts.oov_symbol else 'dropped'}; "
        f"{summary.normalized_words} found lower-cased or without punctuation, "
        f"{summary.dropped_tokens} punctuation tokens left out)")
    if opts.smoothing != "wb":
        log.info("discounts D1 D2 D3+ of orders 1..%d: %s", opts.order,
                 "; ".join(" ".join(f"{x:.4f}" for x in d) for d in summary.discounts))
    log.info("%s: %d sentences, %d words%s; wrote %s: %s (%s, order %d)", text,
             summary.sentences, summary.words, oovs, arpa,
             ", ".join(f"{c} {n}-grams" for n, c in enumerate(summary.ngrams, start=1)),
             opts.smoothing, opts.order)
    return summary
