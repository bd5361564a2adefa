"""The chain supervisions of a data set's utterances from a Kaldi alignment dir (``ali.*.gz``,
``final.mdl``: the alignment's phones, as ``ali-to-phones --write-lengths``) or lattice dir
(``lat.*.gz`` and no ``ali.*.gz``: ``hybridasr.chain.lattice_supervision``), each weighted by
``normalization.fst`` as Kaldi's ``AddWeightToSupervisionFst``; what cannot be used is left
out and counted by reason. Read by ``--objective=lfmmi`` (``hybridasr.train.lfmmi``)."""
from __future__ import annotations

import logging
import os
from typing import Dict, List, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError

log = logging.getLogger(__name__)

__all__ = ["weight_supervision", "read_supervisions"]


def weight_supervision(sup, normalization):
    """Kaldi's ``AddWeightToSupervisionFst``: the supervision composed with
    ``normalization.fst`` (a kaldifst FST, arcs sorted on ilabel), so that its paths carry the
    den graph's probabilities (the numerator then never exceeds the denominator), determinized,
    minimized and its states numbered in frame order again. None when nothing is left."""
    import kaldifst

    from hybridasr.chain.supervision import Supervision
    from hybridasr.graph.arrays import FstArrays

    f = kaldifst.compose(sup.fst.to_fst(), normalization)
    if f.num_states == 0:
        return None
    f = kaldifst.determinize(f)
    kaldifst.minimize(f)
    fst = FstArrays.from_fst(kaldifst.StdVectorFst(f))
    frames = np.full(fst.num_states, -1, dtype=np.int64)
    frames[fst.start] = 0
    for _ in range(sup.num_frames):  # acyclic, every path of num_frames arcs
        seen = frames[fst.src] >= 0
        frames[fst.dst[seen]] = frames[fst.src[seen]] + 1
    order = np.lexsort((np.arange(fst.num_states), frames))
    new_id = np.empty(fst.num_states, dtype=np.int64)
    new_id[order] = np.arange(fst.num_states)
    s, d = new_id[fst.src], new_id[fst.dst]
    arcs = np.lexsort((fst.ilabel, s))
    out = FstArrays(int(new_id[fst.start]), fst.final[order], s[arcs], fst.ilabel[arcs],
                    fst.olabel[arcs], fst.weight[arcs], d[arcs])
    return Supervision(out, frames[order], sup.num_frames)


def _ali_factor(ali_dir: str) -> int:
    path = os.path.join(ali_dir, "frame_subsampling_factor")
    if not os.path.isfile(path):
        return 1
    text = open(path, encoding="utf-8").read().strip()
    if not text.isdigit() or int(text) < 1:
        raise FormatError(f"{path}: expected a positive integer, got {text[:40]!r}")
    return int(text)


def speed_copies(wanted: Dict[str, int]) -> Dict[str, List[Tuple[str, float]]]:
    """original utterance -> [(copy, factor)] for the ``sp<F>-<utt>`` keys of ``wanted``
    (Kaldi's speed-perturbed copies; ``sp1.0-<utt>`` too, when ``<utt>`` is not wanted)."""
    from hybridasr.align.speed_perturb import perturbed_source

    out: Dict[str, List[Tuple[str, float]]] = {}
    for key in wanted:
        src = perturbed_source(key, ())
        if src is not None:
            out.setdefault(src[0], []).append((key, src[1]))
    return out


def copy_segments(segs, original_frames: int, factor: float, copy_frames: int, k: int,
                  max_mismatch: int = 2):
    """The phone segments (alignment frames, ``k`` input frames each) of a copy of
    ``copy_frames`` input frames made at speed ``factor`` from an original of
    ``original_frames``: its phones at the same relative times; None where the copy's length
    is not the original's divided by the factor (within ``max_mismatch`` frames, as
    ``perturb_ali.py``) or too short for its phones."""
    from hybridasr.align.speed_perturb import resample_segments

    if abs(copy_frames - original_frames / factor) > max_mismatch + k:
        return None
    return resample_segments(segs, -(-copy_frames // k))


def read_supervisions(ali_dir: str, wanted: Dict[str, int], tree, tm, opts,
                      normalization=None) -> Tuple[Dict[str, object], Dict[str, List[str]]]:
    """The supervisions of the utterances of ``wanted`` (utterance -> input frames) from the
    alignment dir ``ali_dir`` (weighted by ``normalization``, a kaldifst FST, where given),
    and the utterances left out, by reason: ``no_path`` (no path fits the tolerances),
    ``not_in_den`` (no path of the den graph's phone LM: its phone sequences were never seen
    in the alignment ``den.fst`` was estimated from), ``length_mismatch``, ``no_alignment``
    or ``no_lattice``. A dir with ``lat.*.gz`` and no ``ali.*.gz`` is read as lattices of its
    ``final.mdl`` (``hybridasr.chain.lattice_supervision``); a lattice that cannot be used is
    left out (``unusable_lattice``)."""
    from hybridasr.align.alignments import alignment_files, iter_alignment_file
    from hybridasr.align.phones import phone_segments
    from hybridasr.chain.lattice_supervision import (UnusableLattice, is_lattice_dir,
                                                     iter_dir_lattices, phone_lattice)
    from hybridasr.chain.supervision import (PhoneLattice, SupervisionOptions,
                                             phone_lattice_supervision)
    from hybridasr.kaldi.transition_model import read_transition_model

    f = int(opts.lfmmi_frame_subsampling_factor)
    sup_opts = SupervisionOptions(opts.lfmmi_left_tolerance, opts.lfmmi_right_tolerance, f)
    sup_opts.check()
    k = _ali_factor(ali_dir)
    if k not in (1, f):
        raise ConfigError(f"{ali_dir}/frame_subsampling_factor is {k}; "
                          f"--lfmmi-frame-subsampling-factor={f}")
    tm_ali = read_transition_model(os.path.join(ali_dir, "final.mdl"))
    lattices = is_lattice_dir(ali_dir)
    sups: Dict[str, object] = {}
    skipped: Dict[str, List[str]] = {"length_mismatch": [], "no_path": [], "not_in_den": []}
    if lattices:
        skipped["unusable_lattice"] = []
        log.info("LF-MMI: supervision from the lattices (lat.*.gz) of %s", ali_dir)

    def phone_lattices():
        if lattices:
            for path, utt, lat in iter_dir_lattices(ali_dir, wanted):
                if utt in sups:
                    continue
                what = f"{path}: utterance {utt}"
                try:
                    yield utt, what, phone_lattice(lat, tm_ali, what)
                except UnusableLattice as e:
                    (log.warning if not skipped["unusable_lattice"] else log.debug)("%s", e)
                    skipped["unusable_lattice"].append(utt)
            return
        copies = speed_copies(wanted)
        for path in alignment_files(ali_dir):
            for utt, ali in iter_alignment_file(path):
                if (utt not in wanted or utt in sups) and utt not in copies:
                    continue
                what = f"{path}: utterance {utt}"
                tm_ali.check_alignment(ali, what)
                segs = phone_segments(tm_ali, ali, what)
                if utt in wanted and utt not in sups:
                    yield utt, what, PhoneLattice.linear([p for p, _ in segs],
                                                         [n for _, n in segs])
                for copy, factor in copies.get(utt, ()):
                    if copy in sups:
                        continue
                    stretched = copy_segments(segs, len(ali) * k, factor, wanted[copy], k)
                    if stretched is None:
                        skipped["length_mismatch"].append(copy)
                        continue
                    stretched_copies.append(copy)
                    yield copy, f"{what} (stretched to {copy})", PhoneLattice.linear(
                        [p for p, _ in stretched], [n for _, n in stretched])

    stretched_copies: List[str] = []
    for utt, what, plat in phone_lattices():
        plat.times = plat.times * k
        if -(-plat.num_frames // f) != -(-wanted[utt] // f):
            skipped["length_mismatch"].append(utt)
            continue
        try:
            sup = phone_lattice_supervision(plat, tree, tm, sup_opts)
        except FormatError as e:
            log.debug("%s: %s", what, e)
            skipped["no_path"].append(utt)
            continue
        if normalization is not None:
            sup = weight_supervision(sup, normalization)
        if sup is None:  # no path of the den graph's
            skipped["not_in_den"].append(utt)
        else:
            sups[utt] = sup
    if stretched_copies:
        log.info("LF-MMI: %d speed-perturbed copies (sp<F>-<utt>) supervised from their "
                 "originals' alignments, stretched", len(stretched_copies))
    left_out = {u for v in skipped.values() for u in v}
    skipped["no_lattice" if lattices else "no_alignment"] = [
        u for u in wanted if u not in sups and u not in left_out]
    return sups, skipped
