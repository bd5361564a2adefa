"""The chain topology, as Kaldi's ``steps/nnet3/chain/gen_topo.py``: every phone one emitting
state with forward pdf-class 0 and self-loop pdf-class 1 (so a phone may last one frame at
the subsampled rate), both transitions 0.5; and ``make_chain_lang``, Kaldi's
``data/lang_chain`` (a copy of the lang dir with that topology)."""
from __future__ import annotations

import os
import shutil
from typing import Sequence

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.table import read_csl
from hybridasr.utils.atomic import atomic_open

__all__ = ["chain_topo_text", "make_chain_lang"]


def chain_topo_text(nonsilence_phones: Sequence[int], silence_phones: Sequence[int]) -> str:
    """``gen_topo.py <nonsilence> <silence>``' output (silence phones listed first)."""
    phones = [int(p) for p in silence_phones] + [int(p) for p in nonsilence_phones]
    if not phones or min(phones) <= 0 or len(set(phones)) != len(phones):
        raise FormatError(f"chain topology: phones must be positive and unique, got "
                          f"{phones[:20]}")
    return ("<Topology>\n<TopologyEntry>\n<ForPhones>\n" + " ".join(map(str, phones)) +
            "\n</ForPhones>\n<State> 0 <ForwardPdfClass> 0 <SelfLoopPdfClass> 1 "
            "<Transition> 0 0.5 <Transition> 1 0.5 </State>\n<State> 1 </State>\n"
            "</TopologyEntry>\n</Topology>\n")


def make_chain_lang(lang: str, out: str) -> str:
    """Copies ``lang`` to ``out`` (files, not links) and writes the chain topology over its
    ``topo`` (phones from ``phones/silence.csl`` and ``phones/nonsilence.csl``)."""
    sil = read_csl(os.path.join(lang, "phones", "silence.csl"))
    nonsil = read_csl(os.path.join(lang, "phones", "nonsilence.csl"))
    text = chain_topo_text(nonsil, sil)
    if os.path.abspath(lang) != os.path.abspath(out):
        if os.path.isdir(out):
            shutil.rmtree(out)
        shutil.copytree(lang, out, symlinks=False)
    with atomic_open(os.path.join(out, "topo"), "w", encoding="utf-8") as f:
        f.write(text)
    return text
