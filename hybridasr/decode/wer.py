"""Word error rate with Kaldi's ``compute-wer`` conventions and output format.

Edit distances come from ``kaldialign``, whose insertion/deletion/substitution counts follow
Kaldi's ``LevenshteinEditDistance`` tie-breaking. Modes as in Kaldi: ``present`` scores only
utterances the hypothesis file has (the others are counted as "not present in hyp" and the
WER line is marked ``[PARTIAL]``), ``all`` scores a missing hypothesis as empty, ``strict``
fails on one. An utterance the decoder could not decode is written as an empty hypothesis,
so even in ``present`` mode its words count as deletions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import kaldialign
import numpy as np

from hybridasr.errors import ConfigError, FormatError

MODES = ("present", "all", "strict")


@dataclass
class WerStats:
    num_words: int = 0
    word_errs: int = 0
    num_ins: int = 0
    num_del: int = 0
    num_sub: int = 0
    num_sent: int = 0
    sent_errs: int = 0
    num_absent: int = 0

    def add(self, ref: Sequence[str], hyp: Sequence[str]) -> None:
        ref, hyp = list(ref), list(hyp)
        self.num_words += len(ref)
        if ref or hyp:
            d = kaldialign.edit_distance(ref, hyp)
            self.word_errs += d["total"]
            self.num_ins += d["ins"]
            self.num_del += d["del"]
            self.num_sub += d["sub"]
        self.num_sent += 1
        self.sent_errs += int(ref != hyp)

    @property
    def wer(self) -> float:
        return _percent(self.word_errs, self.num_words)

    @property
    def ser(self) -> float:
        return _percent(self.sent_errs, self.num_sent)

    def format(self) -> str:
        """The three lines ``compute-wer`` prints on stdout."""
        partial = " [PARTIAL]" if self.num_absent else ""
        return (f"%WER {_fmt(self.wer)} [ {self.word_errs} / {self.num_words}, "
                f"{self.num_ins} ins, {self.num_del} del, {self.num_sub} sub ]{partial}\n"
                f"%SER {_fmt(self.ser)} [ {self.sent_errs} / {self.num_sent} ]\n"
                f"Scored {self.num_sent} sentences, {self.num_absent} not present in hyp.\n")


def _percent(errs: int, total: int) -> float:
    # Kaldi computes in double and stores a 32-bit float; 0/0 is NaN, x/0 infinite.
    if total == 0:
        return math.nan if errs == 0 else math.inf
    return float(np.float32(100.0 * errs / total))


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "-nan"  # what glibc prints for 0.0/0.0
    if math.isinf(x):
        return "inf"
    return f"{x:.2f}"


def compute_wer(refs: Mapping[str, Sequence[str]], hyps: Mapping[str, Sequence[str]],
                mode: str = "present") -> WerStats:
    """Scores every reference utterance (in the refs' order) against ``hyps``."""
    if mode not in MODES:
        raise ConfigError(f'--mode option invalid: expected "present"|"all"|"strict", got {mode}')
    stats = WerStats()
    for key, ref in refs.items():
        hyp = hyps.get(key)
        if hyp is None:
            if mode == "strict":
                raise FormatError(f"no hypothesis for utterance {key} (and --mode=strict)")
            stats.num_absent += 1
            if mode == "present":
                continue
            hyp = []
        stats.add(ref, hyp)
    return stats


def check_integer_tables(refs: Mapping[str, Sequence[str]],
                         hyps: Mapping[str, Sequence[str]]) -> None:
    """compute-wer without ``--text``: every token of both tables an integer (FormatError
    naming the first utterance and token that is not)."""
    for name, table in (("reference", refs), ("hypothesis", hyps)):
        for key, toks in table.items():
            bad = [t for t in toks if not t.lstrip("-").isdigit()]
            if bad:
                raise FormatError(f"{name} utterance {key}: {bad[0]!r} is not an integer "
                                  f"(use --text for words)")


def compute_wer_sets(refs: Mapping[str, Sequence[str]], hyps: Mapping[str, Sequence[str]],
                     sets: Sequence[str], mode: str = "present",
                     sep: str = "|") -> "dict[str, WerStats]":
    """``compute_wer`` of each of several hypothesis sets held in one table, whose keys are
    ``<set><sep><utterance>`` (a scoring sweep's LM weights and penalties, one process for
    all); a set with no hypothesis at all scores as one with none present."""
    split: "dict[str, dict]" = {name: {} for name in sets}
    for key, toks in hyps.items():
        name, found, utt = key.partition(sep)
        if not found or name not in split:
            raise FormatError(f"hypothesis key {key!r} is not <set>{sep}<utterance> with a "
                              f"set of {', '.join(sets)}")
        split[name][utt] = toks
    return {name: compute_wer(refs, split[name], mode) for name in sets}


def write_alignment_stats(refs: Mapping[str, Sequence[str]],
                          hyps: Mapping[str, Sequence[str]], path: str) -> None:
    """compute-wer's optional ``<stats-out>``: one ``correct w`` / ``substitution r h`` /
    ``insertion h`` / ``deletion r`` line per aligned pair (``-`` = stdout)."""
    import sys

    eps = ""  # never a token: tokens are whitespace-separated and non-empty
    lines = []
    for key, ref in refs.items():
        hyp = hyps.get(key)
        if hyp is None:
            continue
        for r, h in kaldialign.align(list(ref), list(hyp), eps):
            if r is eps:
                lines.append(f"insertion {h}\n")
            elif h is eps:
                lines.append(f"deletion {r}\n")
            elif r != h:
                lines.append(f"substitution {r} {h}\n")
            else:
                lines.append(f"correct {r}\n")
    if path == "-":
        sys.stdout.writelines(lines)
        return
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
