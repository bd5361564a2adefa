"""The WFST route of CTC decoding (EESEN, Miao et al. 2015): TLG = T o min(det(L o G)).

- T, the token transducer (``token_fst``): CTC's topology over ``num_outputs`` units, blank 0
  included. Input label = unit id + 1 (0 stays epsilon; the blank is input 1), output = the
  unit id (epsilon for blanks and repeats). State 0 is "after a blank, or at the start",
  state ``u`` "after unit ``u``"; from any state, a blank goes to 0 and unit ``u`` to ``u``,
  emitting ``u`` unless it repeats the state's own unit (a self-loop, the same unit's next
  frame). So a unit repeated in the output needs a blank between its frames, exactly as CTC
  counts alignments: T accepts a frame labelling iff it collapses to the output units, with
  one path each. (EESEN's smaller T goes back through one state after every unit and so also
  reads "a a" without a blank as two units; this one has V states and V*V arcs.) Every state
  is final.
- L, the unit lexicon (``lexicon_fst``): every word of the lang's ``words.txt`` spelled by the
  units (``Units.encode_word``: its first piece begins with ``▁``), a loop through state 0
  with the word on the first arc; spellings that are another's prefix, or shared, get ``#1``,
  ``#2``, ... (``hybridasr.lang.lexicon_fst.add_disambig``, as Kaldi's lexicons), and a
  ``#0:#0`` self-loop passes G's back-off arcs. The unit-side ``#k`` is ``num_outputs + k``.
  Left out (named in ``tlg.json`` and the log): ``<eps>``, ``#k``, ``<s>``, ``</s>``, the
  lang's OOV word (``oov.txt``), non-speech words (``!SIL``, ``<...>``) and the words the
  units cannot spell.
- LG = ``fsttablecompose L G | fstdeterminizestar --use-log=true | fstminimizeencoded`` (as
  EESEN and Kaldi's mkgraph.sh), then its disambiguation symbols become epsilons
  (``fstrmsymbols``) and TLG = T o LG; TLG itself is not determinized (EESEN neither).

The graph dir (``make_ctc_graph``): ``TLG.fst`` (const) and ``HCLG.fst``, a link to it, so
that tools that look for ``HCLG.fst`` find it; ``words.txt`` and ``units.txt`` (copies),
``num_pdfs`` (= ``num_outputs``), ``final.mdl`` and ``tlg.json`` (sizes, times, words left
out). ``final.mdl`` is a Kaldi TransitionModel (``ctc_transition_model``) whose transition-id
``u + 1`` has pdf ``u``: one phone per unit with a one-state HMM without self-loop. TLG's input
labels are then transition-ids, and the toolkit's ``MappedDecoder``/``LatticeDecoder`` (and
Kaldi's ``decode-faster-mapped``/``latgen-faster-mapped``) search it with the network's CTC
log-posteriors [T, num_outputs] as the "log-likelihood" matrix (column 0 the blank), unchanged.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from hybridasr.ctc import BLANK
from hybridasr.ctc.units import SYMBOLS, Units, UnitsDir
from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.graph.fst_steps import compose, determinize_star, rm_input_symbols
from hybridasr.kaldi.hmm_topology import HmmState, HmmTopology
from hybridasr.kaldi.symbol_table import read_symbol_ids
from hybridasr.kaldi.transition_model import TransitionModel, write_transition_model
from hybridasr.lang.lexicon_fst import add_disambig
from hybridasr.utils.atomic import atomic_open

__all__ = ["token_fst", "unit_lexicon", "lexicon_fst", "make_lg", "make_tlg",
           "ctc_transition_model", "make_ctc_graph", "special_word"]

log = logging.getLogger(__name__)


def token_fst(num_outputs: int) -> FstArrays:
    """T over units 0..num_outputs-1 (0 the blank), arcs of each state sorted on output."""
    v = int(num_outputs)
    if v < 2:
        raise ValueError("token_fst: need the blank and at least one unit")
    units = np.arange(1, v, dtype=np.int64)
    src, il, ol, dst = [], [], [], []
    for s in range(v):
        others = units[units != s]
        # blank (-> 0), the state's own unit again (a self-loop, no output), other units
        ins = np.concatenate([[BLANK + 1], [s + 1] if s else [], others + 1])
        outs = np.concatenate([[0], [0] if s else [], others])
        to = np.concatenate([[0], [s] if s else [], others])
        src.append(np.full(len(ins), s)), il.append(ins), ol.append(outs), dst.append(to)
    cat = lambda xs: np.concatenate(xs).astype(np.int64)  # noqa: E731
    src_a = cat(src)
    return FstArrays(0, np.zeros(v, dtype=np.float32), src_a, cat(il), cat(ol),
                     np.zeros(len(src_a), dtype=np.float32), cat(dst))


def special_word(word: str, oov: Optional[str] = None) -> bool:
    """Words of a words.txt that have no spelling: epsilon, disambiguation symbols, sentence
    boundaries, the OOV word and Kaldi's non-speech words (``!SIL``, ``<SPOKEN_NOISE>``)."""
    return (word in ("<eps>", "<s>", "</s>") or word == oov or word.startswith("#") or
            word.startswith("!") or (word.startswith("<") and word.endswith(">")) or
            (word.startswith("[") and word.endswith("]")))


def unit_lexicon(units: Units, words: Mapping[str, int], oov: Optional[str] = None
                 ) -> Tuple[List[Tuple[int, List[int]]], Dict[str, List[str]]]:
    """[(word id, unit ids)] for the words units can spell, in id order, and the words left
    out: {"special": [...], "unspellable": [...]}."""
    entries: List[Tuple[int, List[int]]] = []
    left: Dict[str, List[str]] = {"special": [], "unspellable": []}
    for word, wid in sorted(words.items(), key=lambda kv: kv[1]):
        if special_word(word, oov):
            left["special"].append(word)
        elif not units.can_spell(word):
            left["unspellable"].append(word)
        else:
            entries.append((wid, units.encode_word(word)))
    return entries, left


def lexicon_fst(entries: Sequence[Tuple[int, Sequence[int]]], num_outputs: int,
                word_disambig0: int) -> Tuple[FstArrays, List[int]]:
    """L over units (input) and words (output) with disambiguation symbols; returns it and
    the unit-side disambiguation ids (``#0`` = ``num_outputs``, ``#k`` = ``num_outputs + k``)."""
    spelled, max_d = add_disambig([[str(u) for u in spell] for _, spell in entries])
    arcs: List[List[tuple]] = [[(num_outputs, word_disambig0, 0.0, 0)]]  # #0:#0 loop
    for (wid, _), spell in zip(entries, spelled):
        labels = [num_outputs + int(x[1:]) if x.startswith("#") else int(x) for x in spell]
        if not labels:
            raise FormatError(f"word id {wid} has an empty spelling")
        cur = 0
        for i, lab in enumerate(labels):
            last = i == len(labels) - 1
            nxt = 0 if last else len(arcs)
            if not last:
                arcs.append([])
            arcs[cur].append((lab, wid if i == 0 else 0, 0.0, nxt))
            cur = nxt
    final = np.full(len(arcs), np.inf, dtype=np.float32)
    final[0] = 0.0
    return FstArrays.from_lists(0, final, arcs), list(range(num_outputs, num_outputs + max_d + 1))


def make_lg(lexicon: FstArrays, grammar, disambig: Sequence[int], what: str = "LG"):
    """min(det(L o G)) with the disambiguation symbols then turned into epsilons."""
    import kaldifst

    lg = compose(lexicon.to_fst(), grammar, f"L o G ({what})")
    determinize_star(lg, what, "two words with the same unit spelling (missing "
                               "disambiguation symbols) or G without #0 on its back-off arcs")
    kaldifst.minimize_encoded(lg)
    return rm_input_symbols(FstArrays.from_fst(lg), disambig)


def make_tlg(num_outputs: int, lg: FstArrays) -> FstArrays:
    """T o LG (input labels unit + 1, output words)."""
    return FstArrays.from_fst(compose(token_fst(num_outputs).to_fst(), lg.to_fst(), "T o LG"))


def ctc_transition_model(num_outputs: int) -> TransitionModel:
    """The identity TransitionModel: phone ``u + 1`` for unit ``u``, a one-state HMM whose only
    transition leaves it; transition-id ``u + 1`` has pdf ``u`` (``tm.tid2pdf``)."""
    v = int(num_outputs)
    topo = HmmTopology(list(range(1, v + 1)), [-1] + [0] * v,
                       [[HmmState(0, 0, [(1, 1.0)]), HmmState()]])
    tuples = np.array([(u + 1, 0, u, u) for u in range(v)], dtype=np.int32)
    return TransitionModel(topo, tuples, np.zeros(v + 1, dtype=np.float32),
                           name="<CTC transition model>")


def make_ctc_graph(units_dir: str, lang_dir: str, graph_dir: str) -> Dict:
    """Builds the graph dir (see the module docstring) from a units dir and a lang dir with
    ``G.fst``; returns the stats written to ``tlg.json``."""
    import kaldifst

    t0 = time.time()
    for f in ("words.txt", "G.fst"):
        if not os.path.isfile(os.path.join(lang_dir, f)):
            raise FormatError(f"make_ctc_graph: expected {os.path.join(lang_dir, f)} to exist")
    udir = UnitsDir(units_dir)
    units, num_outputs = udir.units(), udir.num_outputs
    if units.num_outputs != num_outputs:
        raise FormatError(f"{units_dir}: num_outputs says {num_outputs}, units.model has "
                          f"{units.num_outputs} pieces")
    words = read_symbol_ids(os.path.join(lang_dir, "words.txt"))
    if "#0" not in words:
        raise FormatError(f"{lang_dir}/words.txt has no #0 (G's back-off symbol)")
    oov_path = os.path.join(lang_dir, "oov.txt")
    oov = open(oov_path, encoding="utf-8").read().split()[0] if os.path.isfile(oov_path) else None
    entries, left = unit_lexicon(units, words, oov)
    if not entries:
        raise FormatError(f"the units of {units_dir} spell no word of {lang_dir}/words.txt")
    for word in left["unspellable"]:
        log.warning("%s: the units cannot spell %r: left out of the lexicon", lang_dir, word)
    lexicon, disambig = lexicon_fst(entries, num_outputs, words["#0"])
    grammar = kaldifst.StdVectorFst(kaldifst.StdFst.read(os.path.join(lang_dir, "G.fst")))
    t = time.time()
    lg = make_lg(lexicon, grammar, disambig, f"LG of {lang_dir}")
    t_lg = time.time() - t
    tlg = make_tlg(num_outputs, lg)
    os.makedirs(graph_dir, exist_ok=True)
    for name, src in (("words.txt", os.path.join(lang_dir, "words.txt")),
                      (SYMBOLS, udir.symbols_path)):
        with open(src, "rb") as f, atomic_open(os.path.join(graph_dir, name), "wb") as g:
            shutil.copyfileobj(f, g)
    with atomic_open(os.path.join(graph_dir, "num_pdfs")) as f:
        f.write(f"{num_outputs}\n")
    write_transition_model(ctc_transition_model(num_outputs), os.path.join(graph_dir,
                                                                          "final.mdl"))
    stats = {"units_dir": units_dir, "lang": lang_dir, "num_outputs": num_outputs,
             "words": len(entries), "disambig_symbols": len(disambig),
             "L": {"states": lexicon.num_states, "arcs": lexicon.num_arcs},
             "LG": {"states": lg.num_states, "arcs": lg.num_arcs, "seconds": round(t_lg, 3)},
             "TLG": {"states": tlg.num_states, "arcs": tlg.num_arcs},
             "left_out": left, "seconds": round(time.time() - t0, 3)}
    with atomic_open(os.path.join(graph_dir, "tlg.json"), encoding="utf-8") as f:
        json.dump(stats, f, indent=1, ensure_ascii=False)
        f.write("\n")
    tlg.write_const(os.path.join(graph_dir, "TLG.fst"))  # last: a complete TLG.fst, a
    link = os.path.join(graph_dir, "HCLG.fst")          # complete graph dir
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("TLG.fst", link)
    log.info("TLG: %d states, %d arcs (%d words, %d units; LG %d states); %s written in "
             "%.1f s", tlg.num_states, tlg.num_arcs, len(entries), num_outputs,
             lg.num_states, graph_dir, stats["seconds"])
    return stats
