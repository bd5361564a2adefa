"""A transition model for a tree and a topology, as Kaldi's ``TransitionModel(ctx_dep, topo)``
constructor, and the monophone model of a lang dir, as ``gmm-init-mono`` (without the GMM).

The transition-states are every (phone, HMM state, pdf, pdf) the tree can give, sorted (the
sort defines the transition-ids); each transition's log-probability is the topology's
(``InitializeProbs``). A model file holds the TransitionModel alone: Kaldi's decoders and
aligners (``latgen-faster-mapped``, ``align-compiled-mapped``) and the toolkit read nothing
else of ``final.mdl``.
"""
from __future__ import annotations

import math
import os
from typing import List, Optional, Sequence

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import NO_PDF, HmmTopology
from hybridasr.kaldi.io.io_funcs import read_kaldi_object
from hybridasr.kaldi.io.table import read_int_lists
from hybridasr.kaldi.transition_model import TransitionModel, write_transition_model
from hybridasr.kaldi.tree import ContextDependency, write_tree
from hybridasr.tree.pdf_pairs import pdf_pairs_for
from hybridasr.tree.stub_map import stub_map

__all__ = ["read_topology", "num_pdf_classes", "build_transition_model", "monophone_tree",
           "init_mono"]


def read_topology(path: str) -> HmmTopology:
    """A lang dir's ``topo`` (text or binary)."""
    if not os.path.isfile(path):
        raise FormatError(f"missing HMM topology {path}")
    return read_kaldi_object(path, HmmTopology.read, "HMM topology")


def num_pdf_classes(topo: HmmTopology) -> List[int]:
    """Per phone id (index), the number of pdf-classes of its HMM (Kaldi's ``NumPdfClasses``);
    0 for ids the topology does not cover."""
    out = [0] * (max(topo.phones) + 1)
    for p in topo.phones:
        out[p] = 1 + max(max(s.forward_pdf_class, s.self_loop_pdf_class)
                         for s in topo.topology_for_phone(p))
    return out


def build_transition_model(tree: ContextDependency, topo: HmmTopology,
                           name: str = "<transition model>") -> TransitionModel:
    tuples = set()
    for phone in topo.phones:
        for k, st in enumerate(topo.topology_for_phone(phone)):
            if st.forward_pdf_class == NO_PDF:
                continue
            pdfs = tree.pdfs_for(phone, st.forward_pdf_class)
            if not pdfs:
                raise FormatError(f"{name}: the tree {tree.name} has no pdf for phone {phone}, "
                                  f"pdf-class {st.forward_pdf_class}: tree and topology do not "
                                  f"match")
            if st.self_loop_pdf_class == st.forward_pdf_class:
                tuples.update((phone, k, pdf, pdf) for pdf in pdfs)
                continue
            # a chain topology (separate self-loop pdf-class): the (forward, self-loop) pairs
            # the tree gives over the same contexts (Kaldi's GetPdfInfo with pdf-class pairs)
            pairs = pdf_pairs_for(tree, phone, st.forward_pdf_class, st.self_loop_pdf_class,
                                  topo.phones)
            if not pairs:
                raise FormatError(f"{name}: the tree {tree.name} has no pdf for phone {phone}, "
                                  f"pdf-class {st.self_loop_pdf_class}: tree and topology do "
                                  f"not match")
            tuples.update((phone, k, f, l) for f, l in pairs)
    rows = np.array(sorted(tuples), dtype=np.int32)
    return _with_probs(topo, rows, name)  # the sorted tuples define the transition-ids


def _with_probs(topo: HmmTopology, rows: np.ndarray, name: str) -> TransitionModel:
    probs: List[float] = [0.0]
    for phone, k, _, _ in rows.tolist():
        for dst, prob in topo.topology_for_phone(phone)[k].transitions:
            if prob <= 0.0:
                raise FormatError(f"{name}: phone {phone}, HMM state {k}: transition to {dst} "
                                  f"has probability {prob} (remove it from the topology)")
            probs.append(math.log(prob))
    return TransitionModel(topo, rows, np.array(probs, dtype=np.float32), name=name)


def monophone_tree(topo: HmmTopology, phone_sets: Optional[Sequence[Sequence[int]]] = None,
                   name: str = "<monophone tree>") -> ContextDependency:
    """Kaldi's ``MonophoneContextDependencyShared``: one pdf per phone set and pdf-class (the
    phones of a set, e.g. ``phones/sets.int``'s word-position variants, share their pdfs);
    without sets, one per phone."""
    if phone_sets is None:
        phone_sets = [[p] for p in topo.phones]
    sets = [sorted(set(s)) for s in phone_sets]
    covered = {p for s in sets for p in s}
    missing = sorted(set(topo.phones) - covered)
    if missing:
        raise FormatError(f"{name}: phones {missing[:10]} of the topology are in no phone set")
    extra = sorted(covered - set(topo.phones))
    if extra:
        raise FormatError(f"{name}: phones {extra[:10]} of the phone sets are not in the "
                          f"topology")
    root, _ = stub_map(0, sets, num_pdf_classes(topo), [False] * len(sets))
    return ContextDependency(1, 0, root, name=name)


def init_mono(topo_path: str, model_out: str, tree_out: str,
              shared_phones: Optional[str] = None, binary: bool = True) -> TransitionModel:
    """``gmm-init-mono --shared-phones=<sets.int> <topo> <dim> <model> <tree>`` without the
    GMM: writes the monophone tree and a model file holding its transition model."""
    topo = read_topology(topo_path)
    sets = read_int_lists(shared_phones) if shared_phones else None
    tree = monophone_tree(topo, sets, name=tree_out)
    tm = build_transition_model(tree, topo, name=model_out)
    write_tree(tree, tree_out, binary=binary)
    write_transition_model(tm, model_out, binary=binary)
    return tm
