"""``utils/subset_data_dir_tr_cv.sh``: Kaldi nnet1's training / cross-validation split.

By speaker (the default, as Kaldi): ``cv_spk_percent`` % of the speakers, in a seeded random
order, go to the cv set, the rest to training. Kaldi rounds the count down, so a data dir with
fewer than 10 speakers gets no cv speaker at 10 %, and one with a single speaker can never be
split by speaker. Where the speaker split would leave either side empty, this split falls back
to utterances (and says so): ``cv_utt_percent`` (default: the same percentage) of the
utterances, at least one and never all.

Which utterances go to cv in an utterance split: in a seeded random order, spread over the
speakers in turn, and preferring utterances whose every word still occurs in what stays in
training (read from ``text`` when the data dir has one). On a tiny corpus this keeps the
held-out utterances from being a speaker's only examples of a word, so the cv loss measures
generalisation instead of words the network never saw. Utterances that would take a word away
are used only when there are not enough others.

When even that is not possible (a corpus so small that every utterance holds a word no other
has: 10 utterances of 10 digits), a cv loss cannot say anything about generalisation and
newbob would reject every epoch. With ``train_all_if_words_lost`` the training set is then the
whole source (the cv set still holds the chosen utterances, for the log only): the recipe
trains such a set with a fixed schedule (``conf/schedule_all_data.conf``).
"""
from __future__ import annotations

import logging
import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from hybridasr.errors import FormatError
from hybridasr.options import option
from hybridasr.datadir.files import (data_file, has, read_table, read_utt2spk, subset_files,
                                     utt2spk_to_spk2utt)

log = logging.getLogger(__name__)

Pairs = List[Tuple[str, str]]


@dataclass
class TrCvSplit:
    tr: Pairs
    cv: Pairs
    by: str              # "speaker" | "utterance"
    note: str            # what was done, for the log

    @property
    def counts(self) -> Tuple[int, int]:
        return len(self.tr), len(self.cv)


def _words(data: str) -> Dict[str, List[str]]:
    if not has(data, "text"):
        return {}
    return {e.key: e.value.split() for e in read_table(data_file(data, "text")).entries}


def choose_cv_utterances(pairs: Pairs, n_cv: int, words: Dict[str, List[str]],
                         rng: random.Random) -> List[str]:
    """``n_cv`` utterances for cv: seeded random order, speakers in turn, words kept covered
    in training where possible."""
    by_spk = utt2spk_to_spk2utt(pairs)
    queues = []
    for spk in sorted(by_spk):
        utts = list(by_spk[spk])
        rng.shuffle(utts)
        queues.append(utts)
    order: List[str] = []  # round robin over speakers
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    left = Counter(w for u, _ in pairs for w in words.get(u, []))
    chosen: List[str] = []
    for utt in order:  # first pass: only utterances that take no word away from training
        if len(chosen) == n_cv:
            break
        need = Counter(words.get(utt, []))
        if all(left[w] > c for w, c in need.items()):
            chosen.append(utt)
            left.subtract(need)
    taken = set(chosen)
    for utt in order:  # not enough of those: the rest in the same order
        if len(chosen) == n_cv:
            break
        if utt not in taken:
            chosen.append(utt)
            taken.add(utt)
    return chosen


@dataclass
class TrCvOptions:
    cv_spk_percent: float = option(10.0, "percent of the speakers held out for cv (nnet1's "
                                         "default)", minimum=0.0)
    cv_utt_percent: Optional[float] = option(None, "split by utterance instead: percent of the "
                                                   "utterances held out", minimum=0.0)
    seed: int = option(777, "seed of the random choice")
    train_all_if_words_lost: bool = option(False, "when the held-out utterances must hold "
                                                  "words found nowhere else, train on every "
                                                  "utterance (the cv set is then a part of "
                                                  "the training set)")
    train_all: bool = option(False, "train on every utterance whatever the split (the cv set, "
                                    "then a part of the training set, for the log only): "
                                    "where the cv set is too small to judge an epoch")


def plan_tr_cv(src: str, cv_spk_percent: float = TrCvOptions.cv_spk_percent,
               cv_utt_percent: Optional[float] = TrCvOptions.cv_utt_percent,
               seed: int = TrCvOptions.seed,
               train_all_if_words_lost: bool = TrCvOptions.train_all_if_words_lost,
               train_all: bool = TrCvOptions.train_all) -> TrCvSplit:
    split = _plan_tr_cv(src, cv_spk_percent, cv_utt_percent, seed, train_all_if_words_lost)
    trained = {u for u, _ in split.tr}
    if train_all and any(u not in trained for u, _ in split.cv):
        split.tr = split.tr + [p for p in split.cv if p[0] not in trained]
        split.note += (f"; training on all {len(split.tr)} utterances (--train-all: the cv "
                       f"set, a part of them, for the log only)")
    return split


def _plan_tr_cv(src: str, cv_spk_percent: float, cv_utt_percent: Optional[float], seed: int,
                train_all_if_words_lost: bool) -> TrCvSplit:
    pairs = [(e.key, e.value) for e in read_utt2spk(src).entries]
    if len(pairs) < 2:
        raise FormatError(f"{src}: {len(pairs)} utterance(s): a training and a cv set need "
                          f"at least 2")
    if not 0 < cv_spk_percent < 100 or (cv_utt_percent is not None
                                         and not 0 < cv_utt_percent < 100):
        raise FormatError("--cv-spk-percent and --cv-utt-percent must be between 0 and 100")
    rng = random.Random(seed)
    note = ""
    if cv_utt_percent is None:
        speakers = list(utt2spk_to_spk2utt(pairs))
        rng.shuffle(speakers)
        n_cv = int(cv_spk_percent * len(speakers) / 100)
        if 0 < n_cv < len(speakers):
            cv_spk = set(speakers[:n_cv])
            cv = [p for p in pairs if p[1] in cv_spk]
            tr = [p for p in pairs if p[1] not in cv_spk]
            return TrCvSplit(tr, cv, "speaker",
                             f"{n_cv} of {len(speakers)} speakers ({cv_spk_percent:g}%) held out")
        note = (f"{cv_spk_percent:g}% of {len(speakers)} speaker(s) leaves an empty "
                f"{'cv' if n_cv == 0 else 'training'} set: splitting by utterance instead; ")
        cv_utt_percent = cv_spk_percent
    n_cv = min(len(pairs) - 1, max(1, int(math.floor(cv_utt_percent * len(pairs) / 100))))
    words = _words(src)
    cv_keys = set(choose_cv_utterances(pairs, n_cv, words, rng))
    cv = [p for p in pairs if p[0] in cv_keys]
    tr = [p for p in pairs if p[0] not in cv_keys]
    tr_words = {w for u, _ in tr for w in words.get(u, [])}
    lost = sorted({w for u, _ in cv for w in words.get(u, [])} - tr_words)
    note += (f"{len(cv)} of {len(pairs)} utterances ({cv_utt_percent:g}%) held out, spread "
             f"over the speakers" + (f"; words only in cv: {' '.join(lost[:10])}"
                                     f"{' ...' if len(lost) > 10 else ''}" if lost else
                                     ("; every cv word also occurs in training" if words
                                      else "")))
    if lost and train_all_if_words_lost:
        note += ("; so the cv loss cannot measure generalisation: training on all "
                 f"{len(pairs)} utterances (the cv set is a part of them)")
        tr = list(pairs)
    return TrCvSplit(tr, cv, "utterance", note)


def split_tr_cv(src: str, tr: str, cv: str,
                cv_spk_percent: float = TrCvOptions.cv_spk_percent,
                cv_utt_percent: Optional[float] = TrCvOptions.cv_utt_percent,
                seed: int = TrCvOptions.seed,
                train_all_if_words_lost: bool = TrCvOptions.train_all_if_words_lost,
                train_all: bool = TrCvOptions.train_all) -> TrCvSplit:
    """Writes the two data dirs; returns the split (its ``note`` says what was done)."""
    split = plan_tr_cv(src, cv_spk_percent, cv_utt_percent, seed, train_all_if_words_lost,
                       train_all)
    subset_files(src, tr, split.tr)
    subset_files(src, cv, split.cv)
    return split
