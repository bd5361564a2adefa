"""Chain supervision from lattices of the alignment model, as Kaldi's
``steps/nnet3/chain/get_egs.sh`` makes it: ``lattice-align-phones --replace-output-symbols=true``
(each path cut at its phone boundaries, one arc per phone) then ``chain-get-supervision``
(``PhoneLatticeToProtoSupervision``: every phone arc allows its phone from ``left_tolerance``
input frames before its start to ``right_tolerance`` after its end, the union over the arcs).

``phone_lattice`` turns one CompactLattice (transition-ids in its weights' strings: the
``lat.*.gz`` of Kaldi's ``align_fmllr_lats.sh`` or of the toolkit's lattice decoder) into a
``PhoneLattice``: a phone starts at a transition-id that leaves its HMM's first state (not a
self-loop: Kaldi's reordered HMMs, which every decoding graph and training graph has) and
lasts until the next phone start or the end; each state's time is its number of frames from
the start, the same on every path. The weights are dropped (Kaldi's supervision has none).
``lattice_supervision`` then builds the numerator graph with
``hybridasr.chain.supervision.phone_lattice_supervision``, the one code path of alignments
too (an alignment is the linear phone lattice).

A lattice that cannot be used (empty, no complete path, states reached after different
numbers of frames, a phone continued by another phone's transition-ids) raises
``UnusableLattice`` (skipped by training, as Kaldi's ``chain-get-supervision`` warns and
skips); a transition-id outside the model is a ``FormatError``: the lattices do not belong
to the model.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Iterator, List, Set, Tuple

import numpy as np

from hybridasr.chain.supervision import (PhoneLattice, Supervision, SupervisionOptions,
                                         phone_lattice_supervision)
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import CompactLattice
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency

__all__ = ["UnusableLattice", "phone_lattice", "lattice_supervision", "lattice_files",
           "is_lattice_dir", "iter_dir_lattices"]

_START = -1  # the phone lattice's start: every state at frame 0


class UnusableLattice(FormatError):
    """A lattice no supervision can be made from (a counted skip in training)."""


def _check_tids(lat: CompactLattice, tm: TransitionModel, what: str) -> None:
    tids = [t for arcs in lat.arcs for a in arcs for t in a.tids] + \
        [t for _, _, ts in lat.finals.values() for t in ts]
    if tids:
        tm.check_alignment(np.asarray(tids, dtype=np.int64), what)


def phone_lattice(lat: CompactLattice, tm: TransitionModel, what: str = "lattice") -> PhoneLattice:
    """The lattice's phones with their times (Kaldi's ``lattice-align-phones
    --replace-output-symbols=true``), trimmed to the arcs on complete paths."""
    if lat.start < 0 or lat.num_states == 0:
        raise UnusableLattice(f"{what}: empty lattice")
    _check_tids(lat, tm, what)
    try:
        order = lat.topological_order()
    except FormatError as e:
        raise UnusableLattice(f"{what}: {e}") from None
    starts_phone = np.zeros(len(tm.tid2phone), dtype=bool)
    starts_phone[1:] = (tm.tid2hmm_state[1:] == 0) & ~np.asarray(tm.tid_is_self_loop[1:], bool)
    tid_phone = np.asarray(tm.tid2phone)

    # the state-level lattice: compact states, then one node per transition-id of a string
    times: Dict[int, int] = {lat.start: 0}
    ongoing: Dict[int, Set[Tuple[int, int]]] = {}  # node -> phones under way: (begin, phone)
    phone_arcs: Set[Tuple[int, int, int]] = set()  # (begin node, end node, phone)
    final_nodes: List[int] = []
    next_node = [lat.num_states]

    def ends_here(node: int) -> None:
        for begin, ph in ongoing.get(node, ()):
            phone_arcs.add((begin, node, ph))

    def step(u: int, tid: int, v: int) -> None:
        t = times[u] + (1 if tid else 0)
        if times.setdefault(v, t) != t:
            raise UnusableLattice(f"{what}: state {v} is reached after {times[v]} and after "
                                  f"{t} frames (not a lattice of one utterance's frames)")
        cur = ongoing.get(u, set())
        if not tid:
            ongoing.setdefault(v, set()).update(cur)
        elif starts_phone[tid]:
            if times[u] and not cur:
                raise UnusableLattice(f"{what}: a phone starts at frame {times[u]} where no "
                                      f"phone ended")
            ends_here(u)
            ongoing.setdefault(v, set()).add((_START if times[u] == 0 else u,
                                              int(tid_phone[tid])))
        else:
            ph = int(tid_phone[tid])
            if not cur or any(p != ph for _, p in cur):
                raise UnusableLattice(
                    f"{what}: transition-id {tid} (phone {ph}) at frame {times[u]} continues "
                    f"{'no phone' if not cur else 'phone ' + str(sorted(cur)[0][1])} (a "
                    f"lattice of another model, or HMMs not reordered?)")
            ongoing.setdefault(v, set()).update(cur)

    def string(u: int, tids, dest: int) -> None:
        for k, tid in enumerate(tids or (0,)):
            last = k == max(len(tids), 1) - 1
            if last and dest >= 0:
                v = dest
            else:
                v, next_node[0] = next_node[0], next_node[0] + 1
            step(u, int(tid), v)
            u = v
        if dest < 0:
            final_nodes.append(u)

    for s in order:
        if s not in times:
            continue
        for a in lat.arcs[s]:
            string(s, a.tids, a.next)
        if s in lat.finals:
            if lat.finals[s][2]:
                string(s, lat.finals[s][2], -1)
            else:
                final_nodes.append(s)
    for node in final_nodes:
        ends_here(node)
    return _trimmed(phone_arcs, set(final_nodes), times, what)


def _trimmed(phone_arcs, final_nodes, times, what) -> PhoneLattice:
    """The phone arcs on complete paths, states renumbered in time order (the start 0)."""
    fwd: Dict[int, List[Tuple[int, int, int]]] = {}
    for arc in phone_arcs:
        fwd.setdefault(arc[0], []).append(arc)
    reach, stack = {_START}, [_START]
    while stack:
        for _, d, _ in fwd.get(stack.pop(), ()):
            if d not in reach:
                reach.add(d)
                stack.append(d)
    back: Dict[int, List[int]] = {}
    for b, e, _ in phone_arcs:
        back.setdefault(e, []).append(b)
    coreach = {n for n in final_nodes if n in reach}
    stack = list(coreach)
    while stack:
        for b in back.get(stack.pop(), ()):
            if b not in coreach:
                coreach.add(b)
                stack.append(b)
    keep = sorted((b, e, p) for b, e, p in phone_arcs if b in coreach and e in coreach)
    if not keep:
        raise UnusableLattice(f"{what}: no complete path of phones (empty lattice)")
    nodes = sorted({n for b, e, _ in keep for n in (b, e)},
                   key=lambda n: (0, n) if n == _START else (times[n], n))
    ids = {n: i for i, n in enumerate(nodes)}
    keep.sort(key=lambda arc: (ids[arc[0]], ids[arc[1]], arc[2]))
    t = np.array([0 if n == _START else times[n] for n in nodes], dtype=np.int64)
    final = np.array([n in final_nodes for n in nodes], dtype=bool)
    out = PhoneLattice(0, np.array([ids[b] for b, _, _ in keep], dtype=np.int64),
                       np.array([ids[e] for _, e, _ in keep], dtype=np.int64),
                       np.array([p for _, _, p in keep], dtype=np.int64), t, final)
    if len(set(t[final].tolist())) != 1:
        raise UnusableLattice(f"{what}: final states at frames {sorted(set(t[final].tolist()))}"
                              f" (a lattice ends at one frame)")
    return out


def lattice_supervision(lat: CompactLattice, tm_lat: TransitionModel, tree: ContextDependency,
                        tm: TransitionModel, opts: SupervisionOptions = SupervisionOptions(),
                        what: str = "lattice", frame_factor: int = 1) -> Supervision:
    """The numerator graph of a lattice of ``tm_lat`` (the alignment model's) for the chain
    tree and model; ``frame_factor``: input frames per lattice frame (1; a chain model's
    lattices: its frame subsampling factor). UnusableLattice when the lattice cannot be
    converted, FormatError (naming ``what``) when no path fits the tolerances."""
    plat = phone_lattice(lat, tm_lat, what)
    plat.times = plat.times * frame_factor
    try:
        return phone_lattice_supervision(plat, tree, tm, opts)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") from None


def is_lattice_dir(ali_dir: str) -> bool:
    """A dir with ``lat.*.gz`` and no ``ali.*.gz`` (Kaldi's ``align_fmllr_lats.sh``'s)."""
    try:
        names = os.listdir(ali_dir)
    except OSError:
        return False
    return any(re.fullmatch(r"lat\.\d+\.gz", n) for n in names) and \
        not any(re.fullmatch(r"ali\.\d+\.gz", n) for n in names)


def lattice_files(lat_dir: str) -> List[str]:
    """``lat.1.gz`` .. ``lat.<num_jobs>.gz``, checked as alignments are
    (``hybridasr.align.alignments.alignment_files``)."""
    from hybridasr.align.alignments import alignment_files

    return alignment_files(lat_dir, "lat")


def iter_dir_lattices(lat_dir: str, wanted) -> Iterator[Tuple[str, str, CompactLattice]]:
    """(file, utterance, lattice) of the dir's lattices whose utterance is in ``wanted``."""
    from hybridasr.kaldi.lattice import read_lattices

    for path in lattice_files(lat_dir):
        for utt, lat in read_lattices(f"ark:gunzip -c {path}|"):
            if utt in wanted:
                yield path, utt, lat
