"""Kaldi's ``TransitionModel`` (``hmm/transition-model.h``), read from the head of a model file.

Every Kaldi acoustic model (``final.mdl`` of a GMM, nnet2 or nnet3 system) starts with a
TransitionModel; this module reads it, binary or text, in the old ``<Triples>`` layout
(phone, hmm-state, pdf) and the newer ``<Tuples>`` layout (phone, hmm-state, forward-pdf,
self-loop-pdf), and stops after ``</TransitionModel>``: what follows (AmDiagGmm, nnet) is never
read.

Numbering, exactly as Kaldi's ``ComputeDerived``: transition-states are the tuples in file
order, numbered from 1; the transition-ids of a transition-state are consecutive, one per
transition out of its HMM state in topology order, starting at 1 for the first state.
A transition-id's pdf is the tuple's self-loop pdf when the transition is the HMM state's
self-loop, its forward pdf otherwise.

All per-transition-id lookups are numpy arrays of length ``num_transition_ids + 1`` (index 0 is
unused and holds -1, or False), so a whole alignment maps at once: ``tm.tid2pdf[ali]``.
"""
from __future__ import annotations

import io
import os
from typing import Optional

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import NO_PDF, HmmTopology
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter, read_kaldi_object
from hybridasr.utils.atomic import atomic_path

__all__ = ["TransitionModel", "read_transition_model", "write_transition_model"]


class TransitionModel:
    """Kaldi's transition model; ``tuples`` is an (n, 4) int32 array of
    (phone, hmm_state, forward_pdf, self_loop_pdf), one row per transition-state."""

    def __init__(self, topology: HmmTopology, tuples: np.ndarray, log_probs: np.ndarray,
                 name: str = "<transition model>"):
        self.topology = topology
        self.tuples = np.asarray(tuples, dtype=np.int32).reshape(-1, 4)
        self.name = name
        self._compute_derived()
        log_probs = np.asarray(log_probs, dtype=np.float32)
        if log_probs.shape != (self.num_transition_ids + 1,):
            raise FormatError(f"{name}: <LogProbs> has {log_probs.shape[0]} entries, expected "
                              f"{self.num_transition_ids + 1} (number of transition-ids + 1): "
                              f"corrupt model")
        self.log_probs = log_probs

    # ------------------------------------------------------------------ derived tables
    def _compute_derived(self) -> None:
        name, topo = self.name, self.topology
        n_states = len(self.tuples)
        if n_states == 0:
            raise FormatError(f"{name}: transition model has no transition-states")
        num_ids_per_state = np.empty(n_states, dtype=np.int64)
        for i, (phone, hmm_state, fwd, loop) in enumerate(self.tuples.tolist()):
            entry = self._entry(phone, i)
            if not 0 <= hmm_state < len(entry):
                raise FormatError(f"{name}: transition-state {i + 1}: HMM state {hmm_state} "
                                  f"out of range for phone {phone}")
            if fwd < 0 or loop < 0:
                raise FormatError(f"{name}: transition-state {i + 1}: negative pdf-id")
            num_ids_per_state[i] = len(entry[hmm_state].transitions)
        # state2id[s] = first transition-id of transition-state s (1-based; one past the end too)
        state2id = np.zeros(n_states + 2, dtype=np.int64)
        state2id[1:] = 1 + np.concatenate([[0], np.cumsum(num_ids_per_state)])
        num_tids = int(state2id[-1]) - 1
        self.state2id = state2id.astype(np.int32)
        self.num_transition_states = n_states
        self.num_transition_ids = num_tids
        self.num_pdfs = int(max(self.tuples[:, 2].max(), self.tuples[:, 3].max())) + 1
        # Kaldi's NumPhones(): the largest phone id in the tuples.
        self.num_phones = int(self.tuples[:, 0].max())

        size = num_tids + 1
        tid2tstate = np.zeros(size, dtype=np.int32)
        tid2trans_index = np.full(size, -1, dtype=np.int32)
        is_self_loop = np.zeros(size, dtype=bool)
        is_final = np.zeros(size, dtype=bool)
        dest_state = np.full(size, -1, dtype=np.int32)
        for i, (phone, hmm_state, _, _) in enumerate(self.tuples.tolist()):
            entry = self._entry(phone, i)
            first = int(state2id[i + 1])
            for k, (dst, _) in enumerate(entry[hmm_state].transitions):
                tid = first + k
                tid2tstate[tid] = i + 1
                tid2trans_index[tid] = k
                is_self_loop[tid] = dst == hmm_state
                is_final[tid] = dst + 1 == len(entry)
                dest_state[tid] = dst
        rows = self.tuples[np.maximum(tid2tstate - 1, 0)]
        valid = tid2tstate > 0
        self.tid2tstate = tid2tstate
        self.tid2trans_index = tid2trans_index
        self.tid_is_self_loop = is_self_loop
        self.tid_is_final = is_final
        self.tid2dest_state = dest_state
        self.tid2phone = np.where(valid, rows[:, 0], -1).astype(np.int32)
        self.tid2hmm_state = np.where(valid, rows[:, 1], -1).astype(np.int32)
        self.tid2pdf = np.where(valid, np.where(is_self_loop, rows[:, 3], rows[:, 2]),
                                -1).astype(np.int32)
        # phones whose topology starts in an emitting state (SplitToPhones' plausibility check)
        starts_emitting = np.zeros(self.num_phones + 1, dtype=bool)
        for p in set(self.tuples[:, 0].tolist()):
            starts_emitting[p] = self.topology.topology_for_phone(p)[0].forward_pdf_class != NO_PDF
        self.phone_starts_emitting = starts_emitting

    def _entry(self, phone: int, i: int):
        try:
            return self.topology.topology_for_phone(phone)
        except FormatError:
            raise FormatError(f"{self.name}: transition-state {i + 1} has phone {phone}, which "
                              f"the model's topology does not cover: corrupt model") from None

    # ------------------------------------------------------------------ Kaldi-named lookups
    def tuple_to_transition_state(self, phone: int, hmm_state: int, forward_pdf: int,
                                  self_loop_pdf: int) -> int:
        """Kaldi's ``TupleToTransitionState``; a tuple the model lacks is an error saying the
        tree (which gave the pdfs) and the model do not belong together."""
        table = self.__dict__.get("_tstate_of")
        if table is None:
            table = self._tstate_of = {tuple(r): i + 1 for i, r in enumerate(self.tuples.tolist())}
        ts = table.get((phone, hmm_state, forward_pdf, self_loop_pdf))
        if ts is None:
            raise FormatError(f"{self.name}: no transition-state for phone {phone}, HMM state "
                              f"{hmm_state}, pdfs ({forward_pdf}, {self_loop_pdf}): the tree "
                              f"and the model do not belong together")
        return ts

    def _check_tid(self, tid: int) -> int:
        tid = int(tid)
        if not 1 <= tid <= self.num_transition_ids:
            raise FormatError(f"{self.name}: transition-id {tid} out of range "
                              f"[1, {self.num_transition_ids}]")
        return tid

    def transition_id_to_pdf(self, tid: int) -> int:
        return int(self.tid2pdf[self._check_tid(tid)])

    def pdfs_of_phones(self, phones) -> np.ndarray:
        """The sorted pdf-ids of the HMM states of ``phones`` (e.g. a lang dir's silence:
        the pdfs gmm-boost-silence boosts)."""
        own = np.isin(self.tid2phone, list(phones))
        own[0] = False  # (transition-id 0 is none)
        return np.unique(self.tid2pdf[own])

    def transition_id_to_phone(self, tid: int) -> int:
        return int(self.tid2phone[self._check_tid(tid)])

    def transition_id_to_hmm_state(self, tid: int) -> int:
        return int(self.tid2hmm_state[self._check_tid(tid)])

    def transition_id_to_transition_index(self, tid: int) -> int:
        return int(self.tid2trans_index[self._check_tid(tid)])

    def transition_id_to_transition_state(self, tid: int) -> int:
        return int(self.tid2tstate[self._check_tid(tid)])

    def is_self_loop(self, tid: int) -> bool:
        return bool(self.tid_is_self_loop[self._check_tid(tid)])

    def is_final(self, tid: int) -> bool:
        return bool(self.tid_is_final[self._check_tid(tid)])

    def pair_to_transition_id(self, tstate: int, trans_index: int) -> int:
        first, end = int(self.state2id[tstate]), int(self.state2id[tstate + 1])
        if not 0 <= trans_index < end - first:
            raise FormatError(f"transition index {trans_index} out of range for "
                              f"transition-state {tstate}")
        return first + trans_index

    def self_loop_of(self, tstate: int) -> int:
        """The self-loop transition-id of a transition-state, 0 if it has none."""
        for tid in range(int(self.state2id[tstate]), int(self.state2id[tstate + 1])):
            if self.tid_is_self_loop[tid]:
                return tid
        return 0

    def transition_prob(self, tid: int) -> float:
        return float(np.exp(self.log_probs[self._check_tid(tid)]))

    def is_hmm(self) -> bool:
        return self.topology.is_hmm()

    # ------------------------------------------------------------------ whole alignments
    def check_alignment(self, ali: np.ndarray, what: str = "alignment") -> np.ndarray:
        """Raises FormatError naming ``what`` if a transition-id is outside the model."""
        ali = np.asarray(ali)
        if ali.size and (int(ali.min()) < 1 or int(ali.max()) > self.num_transition_ids):
            bad = ali[(ali < 1) | (ali > self.num_transition_ids)][0]
            raise FormatError(f"{what}: transition-id {int(bad)} is outside the model "
                              f"{self.name} (which has transition-ids 1..{self.num_transition_ids}):"
                              f" the alignment does not belong to this model")
        return ali

    def ali_to_pdf(self, ali: np.ndarray, what: str = "alignment") -> np.ndarray:
        return self.tid2pdf[self.check_alignment(ali, what)]

    def __repr__(self) -> str:
        return (f"TransitionModel({self.name}: {self.num_phones} phones, {self.num_pdfs} pdfs, "
                f"{self.num_transition_states} transition-states, "
                f"{self.num_transition_ids} transition-ids)")

    # ------------------------------------------------------------------ reading / writing
    @classmethod
    def read(cls, r: KaldiObjectReader) -> "TransitionModel":
        tok = r.read_token("<TransitionModel>")
        if tok != "<TransitionModel>":
            raise FormatError(f"{r.name}: not a Kaldi model: expected <TransitionModel> at the "
                              f"start, got {tok[:40]!r}")
        topo = HmmTopology.read(r)
        layout = r.read_token("<Triples> or <Tuples>")
        if layout not in ("<Triples>", "<Tuples>"):
            raise FormatError(f"{r.name}: expected <Triples> or <Tuples> after the topology, "
                              f"got {layout[:40]!r}")
        n = r.read_int32("the number of transition-states")
        if n <= 0 or n > 50_000_000:
            raise FormatError(f"{r.name}: bad number of transition-states {n}")
        width = 4 if layout == "<Tuples>" else 3
        tuples = _read_int_rows(r, n, width, layout)
        if width == 3:
            tuples = np.concatenate([tuples, tuples[:, 2:3]], axis=1)
        end = r.read_token(f"</{layout[1:]}")
        if end not in ("</Triples>", "</Tuples>"):
            raise FormatError(f"{r.name}: expected </{layout[1:]} after {n} transition-states, "
                              f"got {end[:40]!r}")
        r.expect_token("<LogProbs>", "the transition model")
        log_probs = r.read_float_vector("the transition log-probabilities")
        r.expect_token("</LogProbs>", "the transition model")
        r.expect_token("</TransitionModel>", "the transition model")
        return cls(topo, tuples, log_probs, name=r.name)

    def write(self, w: KaldiObjectWriter, layout: Optional[str] = None) -> None:
        """Writes as Kaldi's ``TransitionModel::Write``. ``layout`` ("triples"/"tuples")
        overrides Kaldi's choice (tuples only when forward and self-loop pdfs differ)."""
        if layout is None:
            layout = "triples" if self.is_hmm() else "tuples"
        if layout not in ("triples", "tuples"):
            raise ValueError(f"layout must be 'triples' or 'tuples', not {layout!r}")
        if layout == "triples" and not np.array_equal(self.tuples[:, 2], self.tuples[:, 3]):
            raise ValueError("the <Triples> layout cannot hold separate self-loop pdfs")
        tag = "Triples" if layout == "triples" else "Tuples"
        w.token("<TransitionModel>")
        w.raw_text("\n")
        self.topology.write(w, extended=not self.is_hmm())
        w.token(f"<{tag}>")
        w.int32(len(self.tuples))
        w.raw_text("\n")
        for row in self.tuples.tolist():
            for v in (row if layout == "tuples" else row[:3]):
                w.int32(v)
            w.raw_text("\n")
        w.token(f"</{tag}>")
        w.raw_text("\n")
        w.token("<LogProbs>")
        w.raw_text("\n")
        w.float_vector(self.log_probs)
        w.token("</LogProbs>")
        w.raw_text("\n")
        w.token("</TransitionModel>")
        w.raw_text("\n")


def _read_int_rows(r: KaldiObjectReader, n: int, width: int, what: str) -> np.ndarray:
    if r.binary:  # n * width int32s, each a size byte + 4 bytes: read them in one go
        raw = r._read_exact(5 * n * width, f"the {n} entries of {what}")
        rec = np.frombuffer(raw, dtype=[("size", "i1"), ("value", "<i4")])
        if not np.all(rec["size"] == 4):
            raise FormatError(f"{r.name}: bad int32 size byte in {what}: corrupt model")
        return rec["value"].astype(np.int32).reshape(n, width)
    vals = [r.read_int32(f"an entry of {what}") for _ in range(n * width)]
    return np.array(vals, dtype=np.int32).reshape(n, width)


def read_transition_model(path: str) -> TransitionModel:
    """Reads the TransitionModel at the head of a Kaldi model file (binary or text).

    ``path`` may also be ``-`` or a ``command |`` (Kaldi rxfilenames). Reads nothing past
    ``</TransitionModel>``.
    """
    _check_not_a_flattened_symlink(path)
    return read_kaldi_object(path, TransitionModel.read, "model")


def _check_not_a_flattened_symlink(path: str) -> None:
    """A copied experiment dir sometimes holds ``final.mdl`` as a tiny file naming its target
    (``40.mdl``): say so, instead of a bare format error."""
    try:
        if os.path.getsize(path) > 255:
            return
        with open(path, "rb") as f:
            target = f.read().strip().decode("utf-8", "replace")
    except (OSError, ValueError):
        return
    if target and "\n" not in target and os.path.isfile(
            os.path.join(os.path.dirname(path), target)):
        raise FormatError(f"{path}: not a Kaldi model: the file holds only the name "
                          f"{target!r} (a symbolic link copied as a file?); use "
                          f"{os.path.join(os.path.dirname(path), target)}")


def write_transition_model(tm: TransitionModel, path: str, binary: bool = True,
                           layout: Optional[str] = None) -> None:
    """Writes ``tm`` alone as a Kaldi model file (atomically); Kaldi's tools read the
    TransitionModel of it (e.g. ``show-transitions``)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        tm.write(KaldiObjectWriter(f, binary), layout=layout)


def transition_model_to_bytes(tm: TransitionModel, binary: bool = True,
                              layout: Optional[str] = None) -> bytes:
    buf = io.BytesIO()
    tm.write(KaldiObjectWriter(buf, binary), layout=layout)
    return buf.getvalue()
