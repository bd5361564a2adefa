"""A Kaldi decoding graph dir: ``HCLG.fst`` (OpenFst ``const`` or ``vector``) and ``words.txt``.

The FST is read by ``hybridasr.kaldi.fst`` (kaldifst, Kaldi's OpenFst build). Its input labels
are transition-ids of the model it was built for; ``max_input_label`` finds the largest one, so
a graph built for another model is reported instead of silently reading past the decoder's
log-likelihood columns.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional

from hybridasr.errors import FormatError
from hybridasr.kaldi.fst import max_input_label, read_fst
from hybridasr.kaldi.symbol_table import read_symbol_table


@dataclass
class DecodingGraph:
    fst: object  # kaldifst.StdConstFst or StdVectorFst
    path: str
    words: Dict[int, str]  # word id -> word
    max_ilabel: int
    num_pdfs: Optional[int]  # from the graph dir's num_pdfs file (mkgraph.sh), if there


def load_graph_dir(graph_dir: str, fst_path: Optional[str] = None,
                   words_path: Optional[str] = None) -> DecodingGraph:
    """Reads ``<graph_dir>/HCLG.fst`` and ``<graph_dir>/words.txt`` (each path overridable)."""
    fst_path = fst_path or os.path.join(graph_dir, "HCLG.fst")
    words_path = words_path or os.path.join(graph_dir, "words.txt")
    if not os.path.isfile(words_path):
        raise FormatError(f"graph dir {graph_dir} has no words.txt ({words_path}): "
                          f"copy it from the lang dir the graph was made from")
    words = read_symbol_table(words_path)
    fst = read_fst(fst_path)
    num_pdfs = None
    p = os.path.join(graph_dir, "num_pdfs")
    if os.path.isfile(p):
        try:
            num_pdfs = int(open(p).read().split()[0])
        except (ValueError, IndexError):
            raise FormatError(f"{p}: expected one integer") from None
    return DecodingGraph(fst, fst_path, words, max_input_label(fst, fst_path), num_pdfs)


def load_model_and_graph(model_in: str, fst_in: str):
    """(TransitionModel, FST, largest input label) for the mapped decoders: the graph must be
    built for the model (``num_pdfs`` beside it, written by ``mkgraph.sh``, agrees)."""
    from hybridasr.errors import ConfigError
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(model_in)
    fst = read_fst(fst_in)
    graph_pdfs = os.path.join(os.path.dirname(fst_in), "num_pdfs")
    if os.path.isfile(graph_pdfs):
        with open(graph_pdfs) as f:
            n = f.read().split()
        if n and n[0].isdigit() and int(n[0]) != tm.num_pdfs:
            raise ConfigError(f"{fst_in} was built for a model with {n[0]} pdfs "
                              f"({graph_pdfs}), {model_in} has {tm.num_pdfs}")
    return tm, fst, max_input_label(fst, fst_in)
