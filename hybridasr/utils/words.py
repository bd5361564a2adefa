"""Transcript words outside a vocabulary, looked up again normalised: lower-cased, without
leading and trailing punctuation. One rule for every tool that maps text to a lexicon (training
graphs, the n-gram LM), so that a corpus in its authors' spelling (``Nie``, ``tylko,``) meets a
lexicon of normalised words. Words of the vocabulary are never changed."""
from __future__ import annotations

import unicodedata
from typing import Container, Optional

__all__ = ["strip_punctuation", "normalized_word"]

DROP = ""  # what ``normalized_word`` returns for a token of punctuation only


def strip_punctuation(word: str) -> str:
    """``word`` without leading and trailing Unicode punctuation (categories P*)."""
    a, b = 0, len(word)
    while a < b and unicodedata.category(word[a]).startswith("P"):
        a += 1
    while b > a and unicodedata.category(word[b - 1]).startswith("P"):
        b -= 1
    return word[a:b]


def normalized_word(word: str, vocab: Container[str]) -> Optional[str]:
    """For a ``word`` not in ``vocab``: its normalised form when that is in ``vocab``;
    ``DROP`` ("") when it is punctuation only; None when it stays unknown."""
    norm = strip_punctuation(word.lower())
    if not norm:
        return DROP
    return norm if norm in vocab else None
