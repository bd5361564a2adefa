"""Kaldi's ``utils/mkgraph.sh`` without Kaldi: the decoding graph HCLG of a lang dir (with
``G.fst``) and a model dir (``tree``, ``final.mdl``), written as Kaldi's graph dir.

The steps, as Kaldi's script runs them:

1. LG = ``fsttablecompose L_disambig.fst G.fst | fstdeterminizestar --use-log=true |
   fstminimizeencoded | fstpushspecial`` (kaldifst; push-special is ours);
2. CLG = ``fstcomposecontext`` with the tree's context width N and central position P
   (kaldifst's ``compose_context``), arc-sorted on input labels as Kaldi's ``fstarcsort``
   leaves them (``utils.std_sort``: the order of equal labels decides the last few states of
   HCLG); its ilabel info says which phone window each input label stands for;
3. Ha = ``make-h-transducer --transition-scale`` (ours: ``h_transducer``), no self-loops;
4. HCLGa = ``fsttablecompose Ha CLG | fstdeterminizestar --use-log=true | fstrmsymbols
   disambig_tid.int | fstrmepslocal | fstminimizeencoded`` (kaldifst; rmsymbols and
   rmepslocal ours);
5. HCLG = ``add-self-loops --self-loop-scale --reorder=true`` (ours), written as a ``const``
   FST, with ``words.txt``, ``phones.txt``, ``phones/``, ``num_pdfs`` and
   ``disambig_tid.int`` beside it.

Unlike Kaldi's script, nothing is written into the lang dir: LG, CLG and the ilabel info,
which Kaldi keeps in ``<lang>/tmp``, go to ``<graph-dir>/tmp`` and are reused while newer than
their inputs. Every file is written atomically; a graph dir whose ``HCLG.fst`` is newer than
all inputs is left alone. Timings, sizes and stochasticity (``fstisstochastic``'s two numbers)
go to ``<graph-dir>/mkgraph.json``.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from hybridasr.align.training_graphs import GraphOptions
from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.graph.fst_steps import (arcsort_like_kaldi, compose, determinize_star, rm_arcs_with_output,
                                       rm_input_symbols)
from hybridasr.graph.h_transducer import make_h_transducer
from hybridasr.graph.push_special import push_special
from hybridasr.graph.rm_eps_local import rm_eps_local
from hybridasr.graph.self_loops import add_self_loops
from hybridasr.kaldi.fst import stochasticity
from hybridasr.kaldi.io.table import read_int_list
from hybridasr.kaldi.ilabel_info import read_ilabel_info, write_ilabel_info
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.options import option
from hybridasr.utils.atomic import atomic_open

__all__ = ["GraphBuildOptions", "make_graph", "required_inputs"]

log = logging.getLogger(__name__)

# lang-dir files copied into the graph dir, as mkgraph.sh does (missing ones are skipped)
_PHONES_COPIED = ["word_boundary.txt", "word_boundary.int", "align_lexicon.txt",
                  "align_lexicon.int", "optional_silence.txt", "optional_silence.int",
                  "optional_silence.csl", "disambig.txt", "disambig.int", "silence.csl"]


@dataclass
class GraphBuildOptions(GraphOptions):
    """The HMM scales (``--transition-scale``, ``--self-loop-scale``: Kaldi's 1.0 and 0.1, as
    for training graphs; chain models want a self-loop scale of 1.0) and ``--remove-oov``."""
    remove_oov: bool = option(False, "remove the paths of G that hold the OOV word "
                                     "(oov.int of the lang dir)")


def required_inputs(lang_dir: str, model_dir: str) -> List[str]:
    return [os.path.join(lang_dir, f) for f in
            ("L_disambig.fst", "G.fst", "phones.txt", "words.txt", "phones/silence.csl",
             "phones/disambig.int")] + [os.path.join(model_dir, "final.mdl"),
                                        os.path.join(model_dir, "tree")]


def _fresh(path: str, inputs: List[str]) -> bool:
    """``path`` exists, is not empty and is at least as new as every input."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return False
    t = os.path.getmtime(path)
    return all(os.path.getmtime(p) <= t for p in inputs)


def _read_vector_fst(path: str, what: str):
    import kaldifst

    from hybridasr.kaldi.fst import read_fst

    if not os.path.isfile(path):
        raise FormatError(f"missing {what} {path}")
    return kaldifst.StdVectorFst(read_fst(path))


def _check_disambiguated(lexicon, disambig: List[int], path: str) -> None:
    """L_disambig must carry the disambiguation phones, else LG cannot be determinized."""
    arrays = FstArrays.from_fst(lexicon)
    import numpy as np

    if not disambig or not np.isin(arrays.ilabel, disambig).any():
        raise FormatError(f"{path} has no disambiguation symbols (phones/disambig.int lists "
                          f"{len(disambig)}): LG could not be determinized. Use the "
                          f"L_disambig.fst that utils/prepare_lang.sh writes, not L.fst")


def _check_phones_compatible(lang_dir: str, model_dir: str, tm) -> None:
    """As Kaldi's ``utils/lang/check_phones_compatible.sh``: the model dir's phones.txt (if
    any) is the lang dir's, disambiguation symbols aside; and the model knows every phone of
    the lang dir."""
    def phones(path):
        with open(path, encoding="utf-8") as f:
            return [line.split() for line in f if line.strip() and not line.startswith("#")]
    lang_phones = phones(os.path.join(lang_dir, "phones.txt"))
    theirs = os.path.join(model_dir, "phones.txt")
    if os.path.isfile(theirs) and phones(theirs) != lang_phones:
        raise FormatError(f"{os.path.join(lang_dir, 'phones.txt')} and {theirs} do not match: "
                          f"the model was trained with another lang dir")
    ids = [int(p[1]) for p in lang_phones if len(p) == 2 and p[1].isdigit() and p[1] != "0"]
    known = set(tm.topology.phones)
    missing = [i for i in ids if i not in known]
    if missing:
        raise FormatError(f"{os.path.join(model_dir, 'final.mdl')}: its topology has no phone "
                          f"{missing[0]} of {os.path.join(lang_dir, 'phones.txt')} "
                          f"({len(missing)} missing): the phones.txt files do not match; "
                          f"the model was trained with another lang dir")


def make_lg(lang_dir: str, stats: Dict) -> object:
    import kaldifst

    t = time.time()
    l_path, g_path = os.path.join(lang_dir, "L_disambig.fst"), os.path.join(lang_dir, "G.fst")
    lexicon = _read_vector_fst(l_path, "lexicon FST")
    grammar = _read_vector_fst(g_path, "grammar FST")
    disambig = read_int_list(os.path.join(lang_dir, "phones/disambig.int"))
    _check_disambiguated(lexicon, disambig, l_path)
    lg = compose(lexicon, grammar, f"L_disambig o G ({lang_dir})")
    determinize_star(lg, f"LG of {lang_dir}",
                     "a word with two pronunciations that are the same phone sequence, or "
                     "G with words that have no disambiguation (#0) on its back-off arcs; "
                     "re-run utils/prepare_lang.sh and utils/format_lm.sh")
    kaldifst.minimize_encoded(lg)
    arrays = push_special(FstArrays.from_fst(lg))
    stats["LG"] = _sizes(arrays, time.time() - t)
    return arrays.to_fst()


def make_hclga(clg, ilabels, tree, tm, opts: GraphBuildOptions, stats: Dict):
    import kaldifst

    t = time.time()
    h, disambig_tids = make_h_transducer(ilabels, tree, tm, opts.transition_scale)
    stats["Ha"] = _sizes(h, time.time() - t)
    hclg = compose(h.to_fst(), clg, "H o CLG")
    determinize_star(hclg, "HCLG", "the lexicon's disambiguation symbols are missing or the "
                                   "tree does not belong to the lang dir")
    arrays = rm_eps_local(rm_input_symbols(FstArrays.from_fst(hclg), disambig_tids))
    fst = arrays.to_fst()
    kaldifst.minimize_encoded(fst)
    arrays = FstArrays.from_fst(fst)
    stats["HCLGa"] = _sizes(arrays, time.time() - t)
    return arrays, disambig_tids


def _sizes(fst: FstArrays, seconds: float) -> Dict:
    lo, hi, _ = stochasticity(fst.final, fst.src, fst.weight)
    return {"states": fst.num_states, "arcs": fst.num_arcs, "seconds": round(seconds, 3),
            "stochastic_min": round(lo, 6), "stochastic_max": round(hi, 6)}


def make_graph(lang_dir: str, model_dir: str, graph_dir: str,
               opts: GraphBuildOptions = GraphBuildOptions()) -> Optional[Dict]:
    """Builds ``graph_dir``; returns the stats written to mkgraph.json (None when the graph
    dir was already up to date)."""
    import kaldifst

    inputs = required_inputs(lang_dir, model_dir)
    for p in inputs:
        if not os.path.isfile(p):
            raise FormatError(f"mkgraph: expected {p} to exist")
    hclg_path = os.path.join(graph_dir, "HCLG.fst")
    if _fresh(hclg_path, inputs) and os.path.isfile(os.path.join(graph_dir, "num_pdfs")):
        log.info("%s is up to date", hclg_path)
        return None
    t0 = time.time()
    tree = read_tree(os.path.join(model_dir, "tree"))
    tm = read_transition_model(os.path.join(model_dir, "final.mdl"))
    _check_phones_compatible(lang_dir, model_dir, tm)
    n, p = tree.context_width, tree.central_position
    tmp = os.path.join(graph_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    stats: Dict = {"lang": lang_dir, "model_dir": model_dir, "context_width": n,
                   "central_position": p, "options": asdict(opts)}
    lg_path = os.path.join(tmp, "LG.fst")
    lang_inputs = [os.path.join(lang_dir, f) for f in ("L_disambig.fst", "G.fst",
                                                       "phones/disambig.int")]
    if _fresh(lg_path, lang_inputs):
        lg = _read_vector_fst(lg_path, "LG")
        log.info("reusing %s", lg_path)
    else:
        lg = make_lg(lang_dir, stats)
        _write_vector(lg, lg_path)
        log.info("LG: %d states (%.1f s)", stats["LG"]["states"], stats["LG"]["seconds"])
    clg_path = os.path.join(tmp, f"CLG_{n}_{p}.fst")
    ilabels_path = os.path.join(tmp, f"ilabels_{n}_{p}")
    if _fresh(clg_path, [lg_path]) and _fresh(ilabels_path, [lg_path]):
        clg = _read_vector_fst(clg_path, "CLG")
        ilabels = read_ilabel_info(ilabels_path)
        log.info("reusing %s", clg_path)
    else:
        t = time.time()
        disambig = read_int_list(os.path.join(lang_dir, "phones/disambig.int"))
        clg, ilabels = kaldifst.compose_context(disambig, n, p, lg)
        clg = arcsort_like_kaldi(FstArrays.from_fst(clg), "ilabel").to_fst()
        stats["CLG"] = {"states": clg.num_states, "ilabels": len(ilabels),
                        "seconds": round(time.time() - t, 3)}
        with atomic_open(os.path.join(tmp, f"disambig_ilabels_{n}_{p}.int")) as f:
            f.write("".join(f"{i}\n" for i, w in enumerate(ilabels) if len(w) == 1 and w[0] < 0))
        _write_vector(clg, clg_path)
        write_ilabel_info(ilabels, ilabels_path)
        log.info("CLG: %d states, %d context windows", clg.num_states, len(ilabels))
    if opts.remove_oov:
        oov = read_int_list(os.path.join(lang_dir, "oov.int"))
        clg = rm_arcs_with_output(FstArrays.from_fst(clg), oov).to_fst()
    hclga, disambig_tids = make_hclga(clg, ilabels, tree, tm, opts, stats)
    log.info("HCLGa: %d states, %d arcs (%.1f s)", hclga.num_states, hclga.num_arcs,
             stats["HCLGa"]["seconds"])
    t = time.time()
    hclg = add_self_loops(hclga, tm, opts.self_loop_scale)
    stats["HCLG"] = _sizes(hclg, time.time() - t)
    if hclg.num_states == 0:
        raise FormatError(f"mkgraph: the graph for {lang_dir} and {model_dir} is empty")
    _write_graph_dir(graph_dir, lang_dir, tm, disambig_tids, hclg)
    stats["seconds"] = round(time.time() - t0, 3)
    with atomic_open(os.path.join(graph_dir, "mkgraph.json")) as f:
        json.dump(stats, f, indent=1)
        f.write("\n")
    log.info("HCLG: %d states, %d arcs; %s written in %.1f s", hclg.num_states,
             hclg.num_arcs, graph_dir, stats["seconds"])
    return stats


def _write_vector(fst, path: str) -> None:
    from hybridasr.utils.atomic import atomic_path

    with atomic_path(path) as tmp:
        if not fst.write(tmp):
            raise FormatError(f"could not write {path}")


def _copy(src: str, dst: str) -> None:
    with open(src, "rb") as f, atomic_open(dst, "wb") as g:
        shutil.copyfileobj(f, g)


def _write_graph_dir(graph_dir: str, lang_dir: str, tm, disambig_tids, hclg) -> None:
    with atomic_open(os.path.join(graph_dir, "disambig_tid.int")) as f:
        f.write("".join(f"{t}\n" for t in disambig_tids))
    _copy(os.path.join(lang_dir, "words.txt"), os.path.join(graph_dir, "words.txt"))
    _copy(os.path.join(lang_dir, "phones.txt"), os.path.join(graph_dir, "phones.txt"))
    os.makedirs(os.path.join(graph_dir, "phones"), exist_ok=True)
    for name in _PHONES_COPIED:
        src = os.path.join(lang_dir, "phones", name)
        if os.path.isfile(src):
            _copy(src, os.path.join(graph_dir, "phones", name))
    with atomic_open(os.path.join(graph_dir, "num_pdfs")) as f:
        f.write(f"{tm.num_pdfs}\n")
    # last, so that a complete HCLG.fst means a complete graph dir
    hclg.write_const(os.path.join(graph_dir, "HCLG.fst"))
