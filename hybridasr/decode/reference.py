"""The scoring reference against the decoding graph's vocabulary.

A Kaldi dir's ``text`` may be in its authors' spelling (``Cichy.``, ``tylko,``) while its
lexicon, and so every hypothesis, holds normalised words (``cichy``). Scored as Kaldi's
``compute-wer`` scores, each such reference word is an error whatever the model. The count of
those is reported by every scoring (``steps/score.sh`` prints it); with ``normalize=True`` the
reference words are read by the one rule that alignment and the n-gram LM use
(``hybridasr.utils.words``): a word outside the vocabulary becomes its lower-cased form without
surrounding punctuation when that is in the vocabulary, and a token of punctuation only is
dropped. Words of the vocabulary, and words that stay unknown, are kept as they are.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Container, Dict, List, Mapping

from hybridasr.utils.words import DROP, normalized_word

__all__ = ["ReferenceReport", "read_reference"]


@dataclass
class ReferenceReport:
    words: int = 0             # reference tokens as given
    in_vocabulary: int = 0     # found in words.txt as they are
    normalizable: int = 0      # found lower-cased / without punctuation
    punctuation: int = 0       # tokens of punctuation only
    unknown: int = 0           # not found either way (out of vocabulary)
    normalized: bool = False   # whether the reference written was normalised
    examples: Dict[str, str] = field(default_factory=dict)  # a few normalizable -> normalised

    @property
    def outside_vocabulary(self) -> int:
        return self.words - self.in_vocabulary

    def as_dict(self) -> dict:
        return dict(asdict(self), outside_vocabulary=self.outside_vocabulary)

    def summary(self) -> str:
        return (f"{self.outside_vocabulary} of {self.words} reference words are not in the "
                f"graph's words.txt: {self.normalizable} only by case or punctuation, "
                f"{self.punctuation} punctuation only, {self.unknown} out of vocabulary")


def read_reference(text: Mapping[str, List[str]], vocabulary: Container[str],
                   normalize: bool = False):
    """(the reference to score against, a ``ReferenceReport``). ``text``: utterance -> words."""
    rep = ReferenceReport(normalized=normalize)
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for utt, words in text.items():
        kept = []
        for w in words:
            rep.words += 1
            if w in vocabulary:
                rep.in_vocabulary += 1
                kept.append(w)
                continue
            norm = normalized_word(w, vocabulary)
            if norm is None:
                rep.unknown += 1
                kept.append(w)
            elif norm == DROP:
                rep.punctuation += 1
                if not normalize:
                    kept.append(w)
            else:
                rep.normalizable += 1
                if len(rep.examples) < 5:
                    rep.examples.setdefault(w, norm)
                kept.append(norm if normalize else w)
        out[utt] = kept
    return out, rep
