"""Tables of lattices: generating them (what ``latgen-faster-mapped`` does for an archive of
log-likelihoods) and sweeping LM weights and insertion penalties over them (``lattice-scale
--inv-acoustic-scale=LMWT | lattice-add-penalty | lattice-best-path`` for every pair in one
pass), with the lattices' oracle WER and density for the decode summary JSON."""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.decode.lattice_decoder import LatticeDecoder
from hybridasr.kaldi.lattice import CompactLattice, CompactLatticeWriter
from hybridasr.decode.lattice_best_path import best_paths
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.symbol_table import ids_to_text

log = logging.getLogger(__name__)


@dataclass
class LatgenSummary:
    num_done: int = 0
    num_partial: int = 0
    num_failed: int = 0
    num_frames: int = 0
    num_arcs: int = 0
    elapsed: float = 0.0

    @property
    def density(self) -> float:
        return self.num_arcs / self.num_frames if self.num_frames else 0.0

    def describe(self) -> str:
        return (f"generated {self.num_done} lattices ({self.num_partial} without reaching a "
                f"final state, {self.num_failed} empty); {self.density:.2f} arcs per frame over "
                f"{self.num_frames} frames; {self.elapsed:.2f}s")


def latgen_table(decoder: LatticeDecoder, matrices: Iterable[Tuple[str, np.ndarray]],
                 acoustic_scale: float, lattices: CompactLatticeWriter,
                 words: Optional[IntVectorWriter] = None,
                 alignments: Optional[IntVectorWriter] = None,
                 allow_partial: bool = False,
                 word_symbols: Optional[Dict[int, str]] = None) -> LatgenSummary:
    """Lattices of every utterance; ``word_symbols`` (words.txt): each best path's words are
    logged as ``key word word ...``, as Kaldi's ``--word-symbol-table`` does."""
    s = LatgenSummary()
    start = time.perf_counter()
    for key, mat in matrices:
        r = decoder.decode(mat, acoustic_scale, utt=key)
        s.num_done += 1
        s.num_frames += r.num_frames
        if r.ok and not r.reached_final:
            s.num_partial += 1
            if not allow_partial:
                log.warning("utterance %s: no final state reached (--allow-partial=false): "
                            "no lattice written", key)
                continue
            log.warning("utterance %s: no final state reached; writing the partial lattice", key)
        if not r.ok:
            s.num_failed += 1
            log.warning("utterance %s: no surviving path over %d frames: empty lattice",
                        key, r.num_frames)
        s.num_arcs += r.lattice.num_arcs
        lattices.write(key, r.lattice)
        if words is not None or alignments is not None or word_symbols is not None:
            bp = best_paths(r.lattice, [1.0], [acoustic_scale], [0.0])[0] if r.ok else None
            if word_symbols is not None:
                log.info("%s %s", key, ids_to_text(word_symbols, bp.words if bp else []))
            if words is not None:
                words.write(key, bp.words if bp else [])
            if alignments is not None:
                alignments.write(key, bp.tids if bp else [])
    s.elapsed = time.perf_counter() - start
    return s


def oracle_errors(lat: CompactLattice, ref: Sequence[int]) -> Optional[int]:
    """Fewest word errors (edit distance) of any path of the lattice against ``ref`` (word
    ids; -1 for a word not in the lattice's vocabulary), as Kaldi's ``lattice-oracle``."""
    n = len(ref)
    ref_arr = np.asarray(ref, dtype=np.int64)
    idx = np.arange(n + 1)

    def deletions(d):  # d[j] = min_k<=j d[k] + (j - k)
        return np.minimum.accumulate(d - idx) + idx

    order = lat.topological_order()
    if not order:
        return None
    dist: Dict[int, np.ndarray] = {lat.start: idx.astype(np.float64)}
    best = np.inf
    for s in order:
        d = dist.pop(s, None)
        if d is None:
            continue
        d = deletions(d)
        for a in lat.arcs[s]:
            if a.word:
                nd = d + 1  # the word inserted
                nd[1:] = np.minimum(nd[1:], d[:-1] + (ref_arr != a.word))
            else:
                nd = d
            old = dist.get(a.next)
            dist[a.next] = nd if old is None else np.minimum(old, nd)
        if s in lat.finals:
            best = min(best, d[n])
    return None if best == np.inf else int(best)


@dataclass
class SweepResult:
    best: Dict[Tuple[int, float], Dict[str, List[int]]]  # (lmwt, penalty) -> utt -> words
    num_lattices: int = 0
    num_frames: int = 0
    num_arcs: int = 0
    oracle_errors: int = 0
    oracle_ref_words: int = 0
    oracle_missing: int = 0

    def summary(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "best"}
        d["lattice_density_arcs_per_frame"] = (self.num_arcs / self.num_frames
                                               if self.num_frames else 0.0)
        if self.oracle_ref_words:
            d["oracle_wer"] = 100.0 * self.oracle_errors / self.oracle_ref_words
        return d


def sweep(lattices: Iterable[Tuple[str, CompactLattice]], lmwts: Sequence[int],
          penalties: Sequence[float], refs: Optional[Dict[str, List[int]]] = None) -> SweepResult:
    combos = [(lm, p) for lm in lmwts for p in penalties]
    res = SweepResult({c: {} for c in combos})
    for key, lat in lattices:
        paths = best_paths(lat, [1.0] * len(combos), [1.0 / c[0] for c in combos],
                           [c[1] for c in combos])
        for c, bp in zip(combos, paths):
            res.best[c][key] = bp.words if bp else []
        res.num_lattices += 1
        res.num_arcs += lat.num_arcs
        res.num_frames += len(paths[0].tids) if paths and paths[0] else 0
        if refs is not None:
            if key not in refs:
                continue
            errs = oracle_errors(lat, refs[key])
            if errs is None:
                res.oracle_missing += 1
                errs = len(refs[key])
            res.oracle_errors += errs
            res.oracle_ref_words += len(refs[key])
    return res
