"""Word times and confidences of a lattice, written as Kaldi's CTM (``<utt> 1 <start> <dur>
<word> <conf>``).

- Words and times: the best path at the LM weight (``lattice-1best --lm-scale=LMWT`` on a
  lattice of unscaled acoustic costs, i.e. acoustic scale 1/LMWT), its transition-ids split
  into phones (``SplitToPhones``) and the phones grouped into words by
  ``phones/word_boundary.int`` (begin, end, internal, singleton, nonword), as
  ``lattice-align-words | nbest-to-ctm`` does on a linear lattice; nonword (silence) phones are
  no word. The times are frames times the frame shift.
- Confidences: word posteriors of the lattice, pruned as ``lattice-prune --beam=5
  --inv-acoustic-scale=LMWT`` and scaled alike (``lattice-to-ctm-conf --inv-acoustic-scale``
  conventions): forward-backward over the word arcs (log semiring), then for each best-path word
  the largest, over the frames of its span, of the summed posteriors of lattice arcs with the
  same word that cover that frame (the arc of a word reaches until the next word's arc: its
  transition-ids and those of the epsilon arcs after it). Each frame's sum is over paths
  disjoint at that frame, so the confidence is in [0, 1]: 1 when every path has the word there.
  Kaldi's ``lattice-to-ctm-conf`` aligns the lattice into MBR "sausages" instead; the two agree
  where the lattice is sure and both go down as competing words gain mass.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.align.phones import phone_segments
from hybridasr.decode.lattice_best_path import best_path
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import INF, CompactLattice
from hybridasr.kaldi.transition_model import TransitionModel

BOUNDARY_KINDS = ("nonword", "begin", "end", "internal", "singleton")
PRUNE_BEAM = 5.0  # get_ctm_conf.sh's lattice-prune --beam

log = logging.getLogger(__name__)


@dataclass
class CtmWord:
    word: int
    start: int       # frame
    frames: int
    conf: float = 1.0


def read_word_boundary(path: str) -> Dict[int, str]:
    """phone id -> kind, from ``phones/word_boundary.int``."""
    out = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in BOUNDARY_KINDS:
            raise FormatError(f"{path}:{n}: expected '<phone-id> <{'|'.join(BOUNDARY_KINDS)}>'")
        out[int(parts[0])] = parts[1]
    return out


def word_spans(tm: TransitionModel, tids: Sequence[int], words: Sequence[int],
               boundary: Dict[int, str], what: str) -> List[CtmWord]:
    """The words of a path with their frames: its phones grouped by word boundary kinds; a
    FormatError naming ``what`` when the phones do not make the path's words."""
    spans: List[Tuple[int, int]] = []
    t = 0
    open_at: Optional[int] = None
    for phone, n in phone_segments(tm, np.asarray(tids, dtype=np.int64), what):
        kind = boundary.get(phone)
        if kind is None:
            raise FormatError(f"{what}: phone {phone} is not in word_boundary.int")
        if kind == "singleton" or kind == "begin":
            if open_at is not None:
                raise FormatError(f"{what}: a word starts at frame {t} before the one at "
                                  f"frame {open_at} ended")
            if kind == "singleton":
                spans.append((t, n))
            else:
                open_at = t
        elif kind in ("internal", "end"):
            if open_at is None:
                raise FormatError(f"{what}: a word-{kind} phone at frame {t} outside a word")
            if kind == "end":
                spans.append((open_at, t + n - open_at))
                open_at = None
        elif open_at is not None:
            raise FormatError(f"{what}: a nonword phone at frame {t} inside a word")
        t += n
    if open_at is not None:
        raise FormatError(f"{what}: the last word (from frame {open_at}) never ends")
    if len(spans) != len(words):
        raise FormatError(f"{what}: its phones make {len(spans)} words, its word sequence "
                          f"has {len(words)}")
    return [CtmWord(w, s, n) for w, (s, n) in zip(words, spans)]


def _state_times(lat: CompactLattice, order: List[int]) -> Dict[int, int]:
    times = {lat.start: 0}
    for s in order:
        ts = times[s]
        for a in lat.arcs[s]:
            times.setdefault(a.next, ts + len(a.tids))
    return times


def _logadd(a: float, b: float) -> float:
    """-log(exp(-a) + exp(-b)) of costs."""
    if a == INF:
        return b
    if b == INF:
        return a
    m = min(a, b)
    return m - math.log1p(math.exp(-abs(a - b)))


def word_arc_posteriors(lat: CompactLattice, prune_beam: float = PRUNE_BEAM):
    """(word, first frame, end frame, posterior) of each word arc of a scaled lattice (costs
    as they are: scale it first) after pruning at ``prune_beam``; an arc's frames run until
    the next word arc (through the epsilon arcs after it, on the path of most posterior)."""
    order = lat.topological_order()
    if not order:
        return []
    times = _state_times(lat, order)

    def cost(s, a):
        return a.graph + a.acoustic

    def final_cost(s):
        g, ac, _ = lat.finals[s]
        return g + ac

    # Viterbi forward/backward for pruning, then log-semiring forward/backward
    vf, vb = {lat.start: 0.0}, {}
    for s in order:
        for a in lat.arcs[s]:
            c = vf.get(s, INF) + cost(s, a)
            if c < vf.get(a.next, INF):
                vf[a.next] = c
    for s in reversed(order):
        b = final_cost(s) if s in lat.finals else INF
        for a in lat.arcs[s]:
            b = min(b, cost(s, a) + vb.get(a.next, INF))
        vb[s] = b
    best = vb[lat.start]
    if best == INF:
        return []
    keep = lambda s, a: vf.get(s, INF) + cost(s, a) + vb.get(a.next, INF) <= best + prune_beam  # noqa: E731
    keep_final = lambda s: s in lat.finals and vf.get(s, INF) + final_cost(s) <= best + prune_beam  # noqa: E731
    alpha = {lat.start: 0.0}
    for s in order:
        if s not in alpha:
            continue
        for a in lat.arcs[s]:
            if keep(s, a):
                alpha[a.next] = _logadd(alpha.get(a.next, INF), alpha[s] + cost(s, a))
    beta: Dict[int, float] = {}
    for s in reversed(order):
        b = final_cost(s) if keep_final(s) else INF
        for a in lat.arcs[s]:
            if keep(s, a) and a.next in beta:
                b = _logadd(b, cost(s, a) + beta[a.next])
        beta[s] = b
    total = beta[lat.start]
    # the frame a word's extent ends at, from each state: the next word arc's start (or the end)
    end_from: Dict[int, int] = {}
    for s in reversed(order):
        end, mass = times[s], INF
        for a in lat.arcs[s]:
            if not keep(s, a) or beta.get(a.next, INF) == INF:
                continue
            c = cost(s, a) + beta[a.next]
            if c < mass:
                mass = c
                end = times[s] if a.word else end_from.get(a.next, times[a.next])
        if keep_final(s) and final_cost(s) < mass:
            end = times[s] + len(lat.finals[s][2])
        end_from[s] = end
    out = []
    for s in order:
        if s not in alpha:
            continue
        for a in lat.arcs[s]:
            if a.word and keep(s, a) and beta.get(a.next, INF) < INF:
                post = math.exp(-(alpha[s] + cost(s, a) + beta[a.next] - total))
                out.append((a.word, times[s], max(end_from.get(a.next, times[a.next]),
                                                  times[s] + len(a.tids)), post))
    return out


def confidences(words: List[CtmWord], arcs) -> None:
    """Sets each word's ``conf`` (see the module's docstring)."""
    by_word: Dict[int, list] = {}
    for w, s, e, p in arcs:
        by_word.setdefault(w, []).append((s, e, p))
    for cw in words:
        lo, hi = cw.start, cw.start + max(cw.frames, 1)
        per_frame = np.zeros(hi - lo)
        for s, e, p in by_word.get(cw.word, ()):
            a, b = max(s, lo), min(e, hi)
            if a < b:
                per_frame[a - lo:b - lo] += p
        cw.conf = float(min(1.0, per_frame.max())) if len(per_frame) else 0.0


def lattice_ctm(lat: CompactLattice, tm: TransitionModel, boundary: Dict[int, str],
                lm_weight: float, word_ins_penalty: float = 0.0, what: str = "lattice",
                prune_beam: float = PRUNE_BEAM, confidence: str = "frame",
                decode_mbr: bool = True) -> Optional[List[CtmWord]]:
    """The best path's words with frames and confidences (None: no path). ``lat``: acoustic
    costs unscaled, as decoders write them; ``lm_weight``: LMWT (acoustic scale 1/LMWT).
    ``confidence="mbr"``: ``lattice-to-ctm-conf``'s MBR words (``decode_mbr``) or best-path
    words with bin posteriors (hybridasr.decode.mbr) instead of the per-frame posteriors."""
    if confidence == "mbr":
        return mbr_ctm_words(lat, tm, boundary, lm_weight, word_ins_penalty, what,
                             prune_beam, decode_mbr)
    if confidence != "frame":
        raise ValueError(f"confidence must be 'frame' or 'mbr', not {confidence!r}")
    scaled = lat.scaled(1.0, 1.0 / lm_weight, word_ins_penalty)
    bp = best_path(scaled)
    if bp is None:
        return None
    words = word_spans(tm, bp.tids, bp.words, boundary, what)
    confidences(words, word_arc_posteriors(scaled, prune_beam))
    return words


def ctm_lines(key: str, words: List[CtmWord], symbols: Dict[int, str],
              frame_shift: float) -> str:
    """``<key> 1 <start> <dur> <word> <conf>`` lines (seconds with 2 decimals, as Kaldi)."""
    out = []
    for w in words:
        out.append(f"{key} 1 {w.start * frame_shift:.2f} {w.frames * frame_shift:.2f} "
                   f"{symbols.get(w.word, str(w.word))} {w.conf:.2f}\n")
    return "".join(out)


def lattices_to_ctm(lattices, tm: TransitionModel, boundary: Dict[int, str],
                    symbols: Dict[int, str], lm_weight: float, write: Callable[[str], None],
                    word_ins_penalty: float = 0.0, frame_shift: float = 0.01,
                    prune_beam: float = PRUNE_BEAM, confidence: str = "frame",
                    decode_mbr: bool = True) -> Tuple[int, List[str]]:
    """CTM lines of each (key, lattice), in order, through ``write``; a lattice without a
    path or whose best path does not split into words is skipped (counted, as Kaldi's
    ``lattice-align-words`` skips it). Returns (done, skipped keys)."""
    done, skipped = 0, []
    for key, lat in lattices:
        try:
            words = lattice_ctm(lat, tm, boundary, lm_weight, word_ins_penalty,
                                f"utterance {key}", prune_beam, confidence, decode_mbr)
        except FormatError as e:
            skipped.append(key)
            log.warning("skipping %s: %s", key, e)
            continue
        if words is None:
            skipped.append(key)
            log.warning("skipping %s: the lattice has no path", key)
            continue
        write(ctm_lines(key, words, symbols, frame_shift))
        done += 1
    return done, skipped


@dataclass
class CtmWords:
    """The words of CTMs as columns (one entry per word, in the file's order)."""
    utts: List[str] = field(default_factory=list)
    words: List[str] = field(default_factory=list)
    seconds: List[float] = field(default_factory=list)
    confs: List[float] = field(default_factory=list)
    correct: Optional[List[bool]] = None  # set by labelled_ctm_words

    def __len__(self) -> int:
        return len(self.words)


def read_ctm(path: str) -> CtmWords:
    """The words of a CTM with a confidence column; FormatError naming the file and line."""
    out = CtmWords()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) != 6:
                    raise ValueError
                dur, conf = float(parts[3]), float(parts[5])
            except ValueError:
                raise FormatError(f"{path}:{n}: not a CTM line with a confidence "
                                  f"(<utt> 1 <start> <dur> <word> <conf>): "
                                  f"{line.rstrip()}") from None
            out.utts.append(parts[0])
            out.words.append(parts[4])
            out.seconds.append(dur)
            out.confs.append(conf)
    return out


def mbr_ctm_words(lat: CompactLattice, tm, boundary, lm_weight: float,
                  word_ins_penalty: float = 0.0, what: str = "lattice",
                  prune_beam: float = 5.0, decode_mbr: bool = True):
    """``lattice-to-ctm-conf``'s words for a CTM (``CtmWord``; None: no
    path): with ``decode_mbr`` the MBR words, else the best path's; confidences their bin
    posteriors. Times: the best path's phone-based word spans (``word_spans``) for the
    words the MBR hypothesis shares with the best path (aligned by edit distance), the MBR
    times (rounded to frames) for the others: the lattice's word arcs are not word-aligned as
    Kaldi's ``lattice-align-words`` makes them, so their state times include silence."""
    import kaldialign

    from hybridasr.decode.mbr import lattice_mbr

    bp = best_path(lat.scaled(1.0, 1.0 / lm_weight, word_ins_penalty))
    if bp is None:
        return None
    spans = word_spans(tm, bp.tids, bp.words, boundary, what)
    res = lattice_mbr(lat, lm_weight, word_ins_penalty, prune_beam, decode_mbr, bp.words)
    if res is None:
        return None
    out: List[CtmWord] = []
    exact: List[bool] = []
    i = j = 0
    for ref, hyp in kaldialign.align(bp.words, res.words, -1):
        if hyp != -1:
            if ref == hyp:
                cw = spans[i]
                out.append(CtmWord(hyp, cw.start, cw.frames, float(res.confidences[j])))
                exact.append(True)
            else:
                b, e = (int(round(t)) for t in res.times[j])
                out.append(CtmWord(hyp, b, max(e - b, 0), float(res.confidences[j])))
                exact.append(False)
            j += 1
        if ref != -1:
            i += 1
    for k, cw in enumerate(out):  # averaged times kept between their neighbours
        if exact[k]:
            continue
        lo = out[k - 1].start + out[k - 1].frames if k else 0
        hi = out[k + 1].start if k + 1 < len(out) else cw.start + cw.frames
        start = min(max(cw.start, lo), max(hi, lo))
        cw.frames, cw.start = max(min(cw.start + cw.frames, hi) - start, 0), start
    return out
