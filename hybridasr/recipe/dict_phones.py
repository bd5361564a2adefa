"""A dict dir given as the recipe's ``--lang`` beside a GMM alignment: the phones that
``utils/prepare_lang.sh`` makes from it must be the alignment model's.

The recipe makes its ``data/lang`` from the dict dir as the GMM's own lang dir was made from
it: with Kaldi's ``prepare_lang.sh`` default (``--position-dependent-phones true``), or without
word-position phones where those are the GMM's (Kaldi's yesno recipe makes its lang dir so).
The check is made before anything is written: the phones ``prepare_lang.sh`` numbers
(``<eps>`` 0, then the silence phones, then the nonsilence ones, each with its word-position
variants or alone, as ``hybridasr.lang.lang_files`` lists them) against the ali dir's
``phones.txt`` where it has one (disambiguation symbols aside, as Kaldi's
``utils/lang/check_phones_compatible.sh``), else against the phone ids of ``final.mdl``'s
topology. A mismatch either way names both files and what to change.
"""
from __future__ import annotations

import os
from typing import Dict

from hybridasr.errors import FormatError

__all__ = ["dict_phone_ids", "check_dict_fits_model"]


def dict_phone_ids(dict_dir: str, position_dependent: bool = True) -> Dict[str, int]:
    """{phone: id} of the ``phones.txt`` that ``prepare_lang.sh`` makes from ``dict_dir``
    (``<eps>`` and the disambiguation symbols left out); FormatError on a bad dict dir."""
    from hybridasr.lang import lang_files
    from hybridasr.lang.dict_dir import read_dict_dir

    d = read_dict_dir(dict_dir)
    pmap = lang_files.phone_map(d, position_dependent)
    phones = [x for p in d.silence_phones + d.nonsilence_phones for x in pmap[p]]
    return {p: i for i, p in enumerate(phones, start=1)}


def _first_difference(ours: Dict[str, int], theirs: Dict[str, int]) -> str:
    ids = sorted(set(ours.values()) | set(theirs.values()))
    by_ours = {i: p for p, i in ours.items()}
    by_theirs = {i: p for p, i in theirs.items()}
    for i in ids:
        a, b = by_ours.get(i), by_theirs.get(i)
        if a != b:
            return (f"phone id {i} is {a!r} in the dict dir's, {b!r} in the model's"
                    if a and b else
                    f"phone id {i} is {a or b!r} in the " +
                    ("dict dir's only" if a else "model's only"))
    return ""


def _hint() -> str:
    return ("the GMM's lang dir was made from another dict dir (a phone added, removed or "
            "renamed, or the phone lists in another order) or with other prepare_lang.sh "
            "options: give as --lang the dict dir it was made from, or that lang dir itself")


def check_dict_fits_model(dict_dir: str, ali_dir: str, model_phones) -> bool:
    """Whether the phones ``prepare_lang.sh`` makes from ``dict_dir`` are those of ``ali_dir``'s
    ``phones.txt`` (where it has one) and of its ``final.mdl`` (``model_phones``: the ids of
    its topology) with word-position phones (True, Kaldi's default) or without them (False:
    the GMM's lang dir was made with ``--position-dependent-phones false``, as Kaldi's yesno
    recipe makes it); neither: a FormatError naming both and the first difference."""
    from hybridasr.kaldi.symbol_table import phone_ids

    ours = dict_phone_ids(dict_dir)
    flat = dict_phone_ids(dict_dir, position_dependent=False)
    own = os.path.join(ali_dir, "phones.txt")
    model = os.path.join(ali_dir, "final.mdl")
    made = (f"--lang {dict_dir} is a dict dir: the phones.txt utils/prepare_lang.sh makes "
            f"from it (into data/lang, with or without word-position phones)")
    if os.path.isfile(own):
        theirs = phone_ids(own)
        if theirs in (ours, flat):
            return theirs == ours
        raise FormatError(f"{made} does not match the alignment model's phones {own} "
                          f"({len(ours)} and {len(theirs)} phones; "
                          f"{_first_difference(ours, theirs)}): {_hint()}")
    have = sorted(set(int(p) for p in model_phones))
    if have in (sorted(ours.values()), sorted(flat.values())):
        return have == sorted(ours.values())
    raise FormatError(f"{made} does not match the alignment model {model} (no phones.txt "
                      f"beside it): its topology has {len(have)} phones (ids "
                      f"{have[0] if have else '-'}..{have[-1] if have else '-'}), the dict dir "
                      f"gives {len(ours)}: {_hint()}")
