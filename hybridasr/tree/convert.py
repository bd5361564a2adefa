"""Alignment conversion to another tree and model, as Kaldi's ``convert-ali``
(``ConvertAlignment`` in ``hmm/hmm-utils.cc``).

The alignment is split into phones; each phone's window (the new tree's context width N and
central position P, 0 outside the utterance) gives, per pdf-class, the new tree's pdf; each
frame keeps its phone, HMM state and transition index, and gets the new model's
transition-id for (phone, HMM state, forward pdf, self-loop pdf). So the phone sequence, the
state sequence and the length are the old alignment's. With ``reorder`` (Kaldi's default,
true) the result is in reordered form (self-loops after the forward transition), whatever
the input's (``ChangeReorderingOfAlignment`` per phone when they differ).

With ``frame_subsampling_factor`` > 1 (Kaldi's ``--frame-subsampling-factor``, as
``steps/nnet3/chain/build_tree.sh`` uses) each phone gets its length at the subsampled rate,
and a phone whose length or topology changed gets a path through the new topology
(``hybridasr.tree.phone_paths``: Kaldi draws a random one; for the chain topology there is
only one). The new topology may have separate forward and self-loop pdf-classes (chain).
"""
from __future__ import annotations

import logging
from typing import Dict, Iterable, Iterator, Optional, Tuple

import numpy as np

from hybridasr.align.phones import is_reordered, split_to_phones
from hybridasr.errors import FormatError
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency
from hybridasr.tree.model import num_pdf_classes
from hybridasr.tree.phone_paths import min_length, new_phone_lengths, phone_path
from hybridasr.tree.stats import phone_windows, tid_to_pdf_class

__all__ = ["AlignmentConverter", "convert_alignment", "convert_alignments",
           "change_reordering"]

log = logging.getLogger(__name__)


class AlignmentConverter:
    """Converts alignments of ``old_tm`` to ``new_tm`` with ``new_tree`` (``convert(ali)``)."""

    def __init__(self, old_tm: TransitionModel, new_tm: TransitionModel,
                 new_tree: ContextDependency, reorder: bool = True,
                 frame_subsampling_factor: int = 1):
        if frame_subsampling_factor < 1:
            raise FormatError(f"frame subsampling factor must be >= 1, got "
                              f"{frame_subsampling_factor}")
        self.factor = int(frame_subsampling_factor)
        self.old, self.new, self.tree = old_tm, new_tm, new_tree
        self.reorder = bool(reorder)
        self.n, self.p = new_tree.context_width, new_tree.central_position
        self.old_pc = tid_to_pdf_class(old_tm)
        self.old_fwd_pc, self.old_loop_pc = _state_pdf_classes(old_tm)
        self.num_classes = num_pdf_classes(new_tm.topology)
        self._topology_ok: Dict[int, bool] = {}
        # the new model's transition-states by (phone, state, fwd pdf, loop pdf), as sorted
        # codes: a whole utterance is looked up with one searchsorted
        t = new_tm.tuples.astype(np.int64)
        m = int(max(new_tm.num_pdfs, int(t[:, 1].max()) + 1, 1))
        self._base = m + 1
        codes = self._encode(t[:, 0], t[:, 1], t[:, 2], t[:, 3])
        self._order = np.argsort(codes, kind="stable")
        self._codes = codes[self._order]
        self._pdfs: Dict[Tuple[int, ...], np.ndarray] = {}
        self.num_done = self.num_failed = 0

    def _encode(self, phone, state, fwd, loop) -> np.ndarray:
        b = self._base
        return ((phone * b + state) * b + fwd) * b + loop

    def _same_topology(self, phone: int) -> bool:
        ok = self._topology_ok.get(phone)
        if ok is None:
            try:
                ok = self.old.topology.topology_for_phone(phone) == \
                    self.new.topology.topology_for_phone(phone)
            except FormatError:
                ok = False
            self._topology_ok[phone] = ok
        return ok

    def _window_pdfs(self, window: Tuple[int, ...]) -> np.ndarray:
        """The new tree's pdf of each pdf-class of the window's central phone."""
        pdfs = self._pdfs.get(window)
        if pdfs is None:
            vals = []
            for pc in range(self.num_classes[window[self.p]]):
                pdf = self.tree.compute(window, pc)
                if pdf is None:
                    raise FormatError(f"the tree {self.tree.name} has no pdf for phone window "
                                      f"{list(window)}, pdf-class {pc}")
                vals.append(pdf)
            pdfs = self._pdfs[window] = np.array(vals, dtype=np.int64)
        return pdfs

    def convert(self, ali: np.ndarray, what: str = "alignment") -> Optional[np.ndarray]:
        """The converted alignment, or None when ``ali`` does not split into phones (Kaldi:
        "Could not convert alignment ... (possibly truncated alignment?)")."""
        ali = self.old.check_alignment(np.asarray(ali, dtype=np.int32), what)
        if not len(ali):
            self.num_done += 1
            return ali.copy()
        old_reordered = is_reordered(self.old, ali)
        ends, ok = split_to_phones(self.old, ali)
        if not ok:
            self.num_failed += 1
            log.warning("%s: could not convert the alignment (it does not split into phones; "
                        "possibly truncated?)", what)
            return None
        starts = np.concatenate([[0], ends[:-1]])
        phones = self.old.tid2phone[ali[starts]].astype(np.int64)
        windows = phone_windows(phones, self.n, self.p)
        lengths = ends - starts
        if self.factor != 1 or not all(self._same_topology(ph) for ph in set(phones.tolist())):
            return self._convert_per_phone(ali, phones, windows, starts, ends, old_reordered,
                                           what)
        max_pc = int(max(self.old_fwd_pc[ali].max(), self.old_loop_pc[ali].max())) + 1
        table = np.zeros((len(phones), max_pc), dtype=np.int64)
        for i, (ph, win) in enumerate(zip(phones.tolist(), map(tuple, windows.tolist()))):
            pdfs = self._window_pdfs(win)
            k = min(len(pdfs), max_pc)
            table[i, :k] = pdfs[:k]
        inst = np.repeat(np.arange(len(phones)), lengths)
        fwd = table[inst, self.old_fwd_pc[ali]]
        loop = table[inst, self.old_loop_pc[ali]]
        state = self.old.tid2hmm_state[ali].astype(np.int64)
        codes = self._encode(phones[inst], state, fwd, loop)
        pos = np.searchsorted(self._codes, codes)
        pos = np.minimum(pos, len(self._codes) - 1)
        found = self._codes[pos] == codes
        if not found.all():
            k = int(np.flatnonzero(~found)[0])
            raise FormatError(f"{what}: {self.new.name} has no transition-state for phone "
                              f"{int(phones[inst[k]])}, HMM state {int(state[k])}, pdfs "
                              f"({int(fwd[k])}, {int(loop[k])}): the tree {self.tree.name} and the model do not "
                              f"belong together")
        tstate = self._order[pos] + 1
        new = (self.new.state2id[tstate].astype(np.int64) +
               self.old.tid2trans_index[ali].astype(np.int64)).astype(np.int32)
        if old_reordered != self.reorder:
            for s, e in zip(starts.tolist(), ends.tolist()):
                new[s:e] = change_reordering(self.new, new[s:e])
        self.num_done += 1
        return new

    def _convert_per_phone(self, ali, phones, windows, starts, ends, old_reordered, what):
        """Kaldi's ``ConvertAlignmentInternal`` with new phone lengths (subsampling) and paths
        through the new topology where the length or the topology changed."""
        topo = self.new.topology
        mins = [min_length(topo, ph) for ph in phones.tolist()]
        new_len = new_phone_lengths(mins, (ends - starts).tolist(), self.factor - 1,
                                    self.factor)
        if new_len is None:
            self.num_failed += 1
            log.warning("%s: could not convert the alignment (failed to produce suitable "
                        "phone lengths)", what)
            return None
        out = []
        for i, ph in enumerate(phones.tolist()):
            pdfs = self._window_pdfs(tuple(windows[i].tolist()))
            old = ali[starts[i]:ends[i]]
            entry = topo.topology_for_phone(ph)
            if new_len[i] == len(old) and self._same_topology(ph):
                steps = list(zip(self.old.tid2hmm_state[old].tolist(),
                                 self.old.tid2trans_index[old].tolist()))
                reordered = old_reordered
            else:
                steps, reordered = phone_path(topo, ph, new_len[i]), False
            seg = np.empty(len(steps), dtype=np.int32)
            for j, (state, k) in enumerate(steps):
                st = entry[state]
                ts = self.new.tuple_to_transition_state(ph, state,
                                                        int(pdfs[st.forward_pdf_class]),
                                                        int(pdfs[st.self_loop_pdf_class]))
                seg[j] = self.new.state2id[ts] + k
            if reordered != self.reorder:
                seg = change_reordering(self.new, seg)
            out.append(seg)
        self.num_done += 1
        new = np.concatenate(out) if out else np.zeros(0, np.int32)
        assert len(new) == (len(ali) + self.factor - 1) // self.factor
        return new

    def convert_all(self, alignments: Iterable[Tuple[str, np.ndarray]]
                    ) -> Iterator[Tuple[str, np.ndarray]]:
        """(utterance, converted) for each that converts; failures are counted and skipped."""
        for utt, ali in alignments:
            out = self.convert(ali, f"utterance {utt}")
            if out is not None:
                yield utt, out


def convert_alignment(old_tm: TransitionModel, new_tm: TransitionModel,
                      new_tree: ContextDependency, ali: np.ndarray,
                      reorder: bool = True,
                      frame_subsampling_factor: int = 1) -> Optional[np.ndarray]:
    """One alignment (see ``AlignmentConverter``)."""
    return AlignmentConverter(old_tm, new_tm, new_tree, reorder,
                              frame_subsampling_factor).convert(ali)


def _state_pdf_classes(tm: TransitionModel):
    """Per transition-id, the forward and the self-loop pdf-class of its HMM state."""
    fwd = np.zeros(tm.num_transition_ids + 1, dtype=np.int64)
    loop = np.zeros(tm.num_transition_ids + 1, dtype=np.int64)
    for tid in range(1, tm.num_transition_ids + 1):
        st = tm.topology.topology_for_phone(int(tm.tid2phone[tid]))[int(tm.tid2hmm_state[tid])]
        fwd[tid], loop[tid] = st.forward_pdf_class, st.self_loop_pdf_class
    return fwd, loop


def change_reordering(tm: TransitionModel, ali: np.ndarray) -> np.ndarray:
    """Kaldi's ``ChangeReorderingOfAlignment``: within each run of a transition-state, the
    forward transition moves from the end to the start of the run or back."""
    ali = np.array(ali, dtype=np.int32)
    size = len(ali)
    start = 0
    while start != size:
        start_tid = int(ali[start])
        tstate = tm.tid2tstate[start_tid]
        start_is_not_loop = not tm.tid_is_self_loop[start_tid]
        end = start + 1
        while end != size and tm.tid2tstate[ali[end]] == tstate:
            if not tm.tid_is_self_loop[ali[end]]:
                if start_is_not_loop:
                    break
                end += 1
                break
            end += 1
        ali[start], ali[end - 1] = ali[end - 1], ali[start]
        start = end
    return ali


def convert_alignments(old_model: str, new_model: str, new_tree: str, ali_rspecifier: str,
                       ali_wspecifier: str, reorder: bool = True,
                       frame_subsampling_factor: int = 1) -> Tuple[int, int]:
    """``convert-ali <old-model> <new-model> <new-tree> <old-ali> <new-ali>``: (converted,
    failed); an error when none converted (Kaldi's exit status 1)."""
    from hybridasr.kaldi.io.intvec import read_int_vectors
    from hybridasr.kaldi.io.table_writer import IntVectorWriter
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree

    old_tm = read_transition_model(old_model)
    new_tm = read_transition_model(new_model)
    tree = read_tree(new_tree)
    if old_tm.topology != new_tm.topology and frame_subsampling_factor == 1:
        log.warning("the topologies of %s and %s differ: conversion may fail", old_model,
                    new_model)
    if tree.num_pdfs != new_tm.num_pdfs:
        raise FormatError(f"{new_tree} has {tree.num_pdfs} pdfs but {new_model} has "
                          f"{new_tm.num_pdfs}: they do not belong together")
    conv = AlignmentConverter(old_tm, new_tm, tree, reorder, frame_subsampling_factor)
    with IntVectorWriter(ali_wspecifier) as w:
        for utt, ali in read_int_vectors(ali_rspecifier):
            out = conv.convert(ali, f"{ali_rspecifier}: utterance {utt}")
            if out is not None:
                w.write(utt, out)
    log.info("converted the alignments of %d utterances, failed for %d", conv.num_done,
             conv.num_failed)
    if conv.num_done == 0:
        raise FormatError(f"{ali_rspecifier}: no alignment converted")
    return conv.num_done, conv.num_failed
