"""The chain denominator graph, as Kaldi's ``chain-make-den-fst`` (``CreateDenominatorFst``
and ``DenominatorGraph`` of ``chain/chain-den-graph.cc``): the phone LM composed with the
context dependency (kaldifst's ``compose_context``, no disambiguation symbols), the HMMs (our
H transducer, transition scale 1.0), HMM self-loops added with scale 1.0 (``--reorder=true``),
projected on transition-ids and mapped to pdf-id + 1, epsilons removed (remove-eps-local then
OpenFst's ``RmEpsilon``), minimised three times forward and reversed as Kaldi's
``DenGraphMinimizeWrapper`` (push-special, quantise to 10 * kDelta, encoded acceptor
minimisation), then states sorted by decreasing number of arcs in + out.

``normalization.fst`` is ``den.fst`` with a new start state whose epsilon arcs enter every
state with the initial probabilities (the start state's probability mass propagated through
the HMM for 100 frames, averaged, each state's arcs and final normalised to sum to one),
every state final with cost 0, epsilons removed and arcs sorted on input labels.

Differences from Kaldi: the context FST is kaldifst's ``compose_context`` over the phones
the LM uses (Kaldi's ``InverseContextFst`` knows every phone of the model); it builds the same
windows for the LM's paths, so only the numbering of intermediate labels differs."""
from __future__ import annotations

import logging
from typing import Dict, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.graph.fst_steps import arcsort_like_kaldi, compose, rm_input_symbols
from hybridasr.graph.h_transducer import make_h_transducer
from hybridasr.graph.push_special import KDELTA, push_special
from hybridasr.graph.rm_eps_local import rm_eps_local
from hybridasr.graph.self_loops import add_self_loops
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency
from hybridasr.utils.atomic import atomic_path

__all__ = ["make_den_fst", "initial_probs", "normalization_fst", "write_fst", "make_den_fsts"]

log = logging.getLogger(__name__)


def _rmepsilon(fst: FstArrays) -> FstArrays:
    import kaldifst

    f = fst.to_fst()
    kaldifst.rmepsilon(f)
    return FstArrays.from_fst(f)


def _minimize_acceptor_no_push(fst: FstArrays) -> FstArrays:
    import kaldifst

    f = fst.to_fst()
    kaldifst.minimize_encoded(f, delta=KDELTA * 10.0)
    return FstArrays.from_fst(f)


def _reverse(fst: FstArrays) -> FstArrays:
    import kaldifst

    return FstArrays.from_fst(kaldifst.reverse(fst.to_fst(), require_superinitial=True))


def _minimize_wrapper(fst: FstArrays) -> FstArrays:
    """Kaldi's ``DenGraphMinimizeWrapper``."""
    for i in range(1, 4):
        rev = _minimize_acceptor_no_push(push_special(_reverse(fst), KDELTA * 0.01))
        fst = _reverse(rev)
        fst = _minimize_acceptor_no_push(push_special(fst, KDELTA * 0.01))
        log.info("den graph after minimization pass %d: %d states, %d arcs", i,
                 fst.num_states, fst.num_arcs)
    return push_special(_rmepsilon(fst), KDELTA * 0.01)


def _sort_on_transition_count(fst: FstArrays) -> FstArrays:
    """Kaldi's ``SortOnTransitionCount``: states renumbered by decreasing (in + out) arcs,
    ties by old number (``std::sort`` of distinct (-count, state) pairs)."""
    n = fst.num_states
    count = np.bincount(fst.src, minlength=n) + np.bincount(fst.dst, minlength=n)
    order = np.lexsort((np.arange(n), -count))  # old states in new order
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    src, dst = new_id[fst.src], new_id[fst.dst]
    arc_order = np.argsort(src, kind="stable")  # keeps each state's arc order
    return FstArrays(int(new_id[fst.start]), fst.final[order], src[arc_order],
                     fst.ilabel[arc_order], fst.olabel[arc_order], fst.weight[arc_order],
                     dst[arc_order])


def make_den_fst(tree: ContextDependency, tm: TransitionModel, phone_lm: FstArrays,
                 stats: Dict = None) -> FstArrays:
    """``CreateDenominatorFst``: an epsilon-free acceptor of pdf-id + 1."""
    import kaldifst

    if phone_lm.num_states == 0 or phone_lm.start < 0:
        raise FormatError("make_den_fst: the phone LM is empty")
    lm_phones = set(np.unique(phone_lm.ilabel).tolist())
    unknown = sorted(lm_phones - set(tm.topology.phones))
    if unknown:
        raise FormatError(f"make_den_fst: the phone LM has phones {unknown[:10]} that the "
                          f"transition model {tm.name} does not know")
    if tree.num_pdfs > tm.num_pdfs:
        raise FormatError(f"make_den_fst: the tree {tree.name} has {tree.num_pdfs} pdfs, the "
                          f"model {tm.name} {tm.num_pdfs}")
    n, p = tree.context_width, tree.central_position
    clg, ilabels = kaldifst.compose_context([], n, p, phone_lm.to_fst(), project_ifst=True)
    clg = arcsort_like_kaldi(FstArrays.from_fst(clg), "ilabel").to_fst()
    h, disambig_tids = make_h_transducer(ilabels, tree, tm, 1.0)
    hclg = FstArrays.from_fst(compose(h.to_fst(), clg, "H o C o phone-LM"))
    if disambig_tids:  # only the pseudo-epsilon window #-1 can occur: it is an epsilon
        hclg = rm_input_symbols(hclg, disambig_tids)
    hclg = add_self_loops(hclg, tm, 1.0)
    il = hclg.ilabel
    pdf1 = np.where(il > 0, tm.tid2pdf[np.clip(il, 0, tm.num_transition_ids)] + 1, 0)
    fst = FstArrays(hclg.start, hclg.final, hclg.src, pdf1, pdf1.copy(), hclg.weight, hclg.dst)
    n_before = fst.num_arcs
    fst = _rmepsilon(rm_eps_local(fst))
    fst = _minimize_wrapper(fst)
    fst = _sort_on_transition_count(fst)
    if np.any(fst.ilabel <= 0):
        raise FormatError("make_den_fst: epsilons left in the denominator graph (a bug)")
    unseen = np.setdiff1d(np.arange(1, tm.num_pdfs + 1), fst.ilabel)
    if len(unseen):
        log.warning("%d pdf-ids are not seen in the denominator graph (e.g. pdf-id %d)",
                    len(unseen), int(unseen[0]) - 1)
    if stats is not None:
        stats.update({"lm_states": phone_lm.num_states, "lm_arcs": phone_lm.num_arcs,
                      "transition_id_arcs": n_before, "states": fst.num_states,
                      "arcs": fst.num_arcs, "unseen_pdfs": int(len(unseen))})
    log.info("den graph: %d states, %d arcs", fst.num_states, fst.num_arcs)
    return fst


def initial_probs(den: FstArrays, num_iters: int = 100) -> np.ndarray:
    """``DenominatorGraph::SetInitialProbs`` (float64, returned as float32 as Kaldi keeps
    them): the start state's probability propagated for ``num_iters`` frames, averaged."""
    n = den.num_states
    arc_p = np.exp(-den.weight.astype(np.float64))
    tot = np.exp(-den.final.astype(np.float64)) + np.bincount(den.src, arc_p, minlength=n)
    if np.any(tot <= 0.0) or np.any(tot >= 100.0):
        bad = int(np.flatnonzero((tot <= 0.0) | (tot >= 100.0))[0])
        raise FormatError(f"den graph: state {bad} has total probability {tot[bad]} out of it")
    norm = 1.0 / tot
    cur = np.zeros(n)
    cur[den.start] = 1.0
    avg = np.zeros(n)
    for _ in range(num_iters):
        avg += cur / num_iters
        nxt = np.bincount(den.dst, (cur * norm)[den.src] * arc_p, minlength=n)
        cur = nxt / nxt.sum()
    return avg.astype(np.float32)


def normalization_fst(den: FstArrays, init: np.ndarray = None) -> FstArrays:
    """``DenominatorGraph::GetNormalizationFst``."""
    import kaldifst

    if init is None:
        init = initial_probs(den)
    if np.any(init <= 0.0):
        raise FormatError(f"den graph: {int(np.sum(init <= 0))} states are unreachable from "
                          f"the start within 100 frames (initial probability 0)")
    n = den.num_states
    src = np.concatenate([den.src, np.full(n, n)])
    fst = FstArrays(n, np.zeros(n + 1, dtype=np.float32), src,
                    np.concatenate([den.ilabel, np.zeros(n, np.int64)]),
                    np.concatenate([den.olabel, np.zeros(n, np.int64)]),
                    np.concatenate([den.weight, (-np.log(init.astype(np.float32)))
                                    .astype(np.float32)]),
                    np.concatenate([den.dst, np.arange(n)]))
    fst.final[n] = np.inf
    f = fst.to_fst()
    kaldifst.rmepsilon(f)
    kaldifst.arcsort(f, sort_type="ilabel")
    return FstArrays.from_fst(f)


def write_fst(fst: FstArrays, path: str) -> None:
    """Writes a ``StdVectorFst`` in OpenFst's binary format (Kaldi's ``WriteFstKaldi``)."""
    f = fst.to_fst()
    with atomic_path(path) as tmp:
        if not f.write(tmp):
            raise FormatError(f"could not write {path}")


def make_den_fsts(tree_path: str, model_path: str, phone_lm_path: str, den_out: str,
                  normalization_out: str) -> Tuple[FstArrays, FstArrays]:
    """``chain-make-den-fst <tree> <transition-model> <phone-lm-fst> <den.fst>
    <normalization.fst>``."""
    from hybridasr.kaldi.fst import read_fst
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree

    tree, tm = read_tree(tree_path), read_transition_model(model_path)
    lm = FstArrays.from_fst(read_fst(phone_lm_path), phone_lm_path)
    den = make_den_fst(tree, tm, lm)
    norm = normalization_fst(den)
    write_fst(den, den_out)
    write_fst(norm, normalization_out)
    return den, norm
