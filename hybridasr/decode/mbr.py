"""Minimum Bayes Risk decoding of a lattice into "sausages", as Kaldi's ``MinimumBayesRisk``
(``lat/sausages.cc``; Xu, Povey, Mangu and Zhu 2011, "Minimum Bayes risk decoding and system
combination based on a recursion for edit distance") that ``lattice-to-ctm-conf`` and
``lattice-mbr-decode`` use.

The lattice (costs already scaled: acoustic scale 1/LMWT, penalty added) is aligned to a
hypothesis R padded with epsilons (``<eps> w1 <eps> w2 ... wK <eps>``) by the edit-distance
recursion; each position q of R becomes a bin: word (0 = epsilon) -> posterior, summing to 1.
With ``decode_mbr`` each position takes the most probable word of its bin and the alignment is
redone until nothing changes (the MBR hypothesis, started from the lattice's best path);
without it R stays the given (or best-path) words. A word's confidence is its bin posterior;
its times the posterior-weighted average of the begin and end times of the arcs in its bin
(``GetOneBestTimes``); a bin's times are those summed over its words (``GetSausageTimes``).
Kaldi's defaults: ``--print-silence=false`` (epsilons are no output word), delta 1e-5 (the
small extra cost of a word aligned to an epsilon, so that competing words show up in bins).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from hybridasr.decode.lattice_best_path import best_path
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import INF, CompactLattice

DELTA = 1.0e-5  # Kaldi's MinimumBayesRisk::delta()
_TIE = 1.0e-9   # ties of the recursion's three alternatives (sums of 1s and deltas)
MAX_ITERS = 100


@dataclass
class MbrResult:
    words: List[int]                 # the hypothesis, epsilons removed
    confidences: np.ndarray          # per word: its bin posterior
    times: np.ndarray                # per word: (begin, end) in frames, float
    bins: List[Dict[int, float]]     # the sausage: per position, word (0: epsilon) -> posterior
    bin_times: np.ndarray            # per bin: (begin, end) in frames
    expected_errors: float           # the recursion's expected edit distance of the hypothesis
    iterations: int


def prune_lattice(lat: CompactLattice, beam: float) -> CompactLattice:
    """``lattice-prune --beam``: the arcs and final states on a path within ``beam`` of the
    best (costs as they are); the result is connected."""
    order = lat.topological_order()
    vf = {lat.start: 0.0} if order else {}
    for s in order:
        for a in lat.arcs[s]:
            c = vf.get(s, INF) + a.graph + a.acoustic
            if c < vf.get(a.next, INF):
                vf[a.next] = c
    vb: Dict[int, float] = {}
    for s in reversed(order):
        g, ac, _ = lat.finals.get(s, (INF, 0.0, ()))
        b = g + ac
        for a in lat.arcs[s]:
            b = min(b, a.graph + a.acoustic + vb.get(a.next, INF))
        vb[s] = b
    out = CompactLattice(lat.start, [[] for _ in lat.arcs], {})
    best = vb.get(lat.start, INF)
    if best == INF:
        return out
    limit = best + beam
    for s in order:
        for a in lat.arcs[s]:
            if vf.get(s, INF) + a.graph + a.acoustic + vb.get(a.next, INF) <= limit:
                out.arcs[s].append(a)
        if s in lat.finals and vf.get(s, INF) + sum(lat.finals[s][:2]) <= limit:
            out.finals[s] = lat.finals[s]
    return out


@dataclass
class _Graph:
    """The lattice in the recursion's form: states 1..N in topological order (1 the start,
    N a super-final state that the final weights lead to by epsilon arcs), arcs sorted by
    their end state."""
    n_states: int
    src: np.ndarray      # arc start state
    dst: np.ndarray      # arc end state (sorted)
    word: np.ndarray
    loglike: np.ndarray  # -(graph + acoustic cost)
    t_begin: np.ndarray  # frames: the time of the arc's start state
    t_end: np.ndarray    # and of its end state
    first: np.ndarray    # arcs into state n: first[n]:first[n + 1]


def _graph(lat: CompactLattice) -> _Graph:
    order = lat.topological_order()
    if not order or not lat.finals:
        raise FormatError("the lattice has no final state")
    num = {s: i + 1 for i, s in enumerate(order)}
    n = len(order) + 1
    times = np.zeros(n + 1)
    seen = {lat.start}
    src, dst, word, ll = [], [], [], []
    for s in order:
        for a in lat.arcs[s]:
            t = times[num[s]] + len(a.tids)
            if a.next not in seen:
                seen.add(a.next)
                times[num[a.next]] = t
            src.append(num[s])
            dst.append(num[a.next])
            word.append(a.word)
            ll.append(-(a.graph + a.acoustic))
        if s in lat.finals:
            g, ac, tids = lat.finals[s]
            times[n] = max(times[n], times[num[s]] + len(tids))
            src.append(num[s])
            dst.append(n)
            word.append(0)
            ll.append(-(g + ac))
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    by_end = np.argsort(dst, kind="stable")
    src, dst = src[by_end], dst[by_end]
    first = np.searchsorted(dst, np.arange(n + 2))
    return _Graph(n, src, dst, np.asarray(word, np.int64)[by_end],
                  np.asarray(ll, np.float64)[by_end], times[src], times[dst], first)


def _logsumexp(x: np.ndarray) -> float:
    m = x.max()
    return -INF if m == -INF else float(m + np.log(np.exp(x - m).sum()))


def _forward(g: _Graph, r: np.ndarray):
    """The edit-distance recursion (Kaldi's ``EditDistance``): per state, the log forward
    probability and the expected edit distance to each prefix of r; per arc, its alignment
    choice per position q = 1..Q (1: r_q is the arc's word or a substitution, 2: the arc's
    word is an insertion, 3: r_q is a deletion)."""
    q_len = len(r)
    alpha = np.full(g.n_states + 1, -INF)
    alpha[1] = 0.0
    alpha_dash = np.zeros((g.n_states + 1, q_len + 1))
    d = np.concatenate([[0.0], (r != 0).astype(np.float64)])  # l(0, r_q)
    dsum = np.cumsum(d)
    choice = np.zeros((len(g.src), q_len + 1), np.int8)
    alpha_dash[1] = dsum
    rq = np.concatenate([[-1], r])
    for n in range(2, g.n_states + 1):
        lo, hi = g.first[n], g.first[n + 1]
        if lo == hi:
            continue
        sa, wa = g.src[lo:hi], g.word[lo:hi]
        alpha[n] = _logsumexp(alpha[sa] + g.loglike[lo:hi])
        if alpha[n] == -INF:
            continue
        ins = np.where(wa != 0, 1.0 + DELTA, 0.0)[:, None]      # l(w_a, 0, penalize)
        prev = alpha_dash[sa]
        a1 = np.full(prev.shape, INF)
        a1[:, 1:] = prev[:, :-1] + (wa[:, None] != rq[None, 1:])
        a2 = prev + ins
        c = np.minimum(a1, a2)
        # x_q = min(c_q, x_{q-1} + d_q): a running minimum once the d's are summed out
        x = np.minimum.accumulate(c - dsum, axis=1) + dsum
        a3 = np.full(prev.shape, INF)
        a3[:, 1:] = x[:, :-1] + d[1:]
        choice[lo:hi] = np.where(a1 <= a2 + _TIE, np.where(a1 <= a3 + _TIE, 1, 3),
                                 np.where(a2 <= a3 + _TIE, 2, 3))
        w = np.exp(alpha[sa] + g.loglike[lo:hi] - alpha[n])
        alpha_dash[n] = w @ x
    return alpha, alpha_dash, choice


def _backward(g: _Graph, r: np.ndarray, alpha: np.ndarray, choice: np.ndarray):
    """Kaldi's ``AccStats`` backward pass: the bins' (position q, word, posterior, posterior x
    begin time, posterior x end time) contributions, as arrays."""
    q_len = len(r)
    beta_dash = np.zeros((g.n_states + 1, q_len + 1))
    beta_dash[g.n_states, q_len] = 1.0
    qs = np.arange(q_len + 1)
    recs = []
    for n in range(g.n_states, 1, -1):
        lo, hi = g.first[n], g.first[n + 1]
        if lo == hi or alpha[n] == -INF or not beta_dash[n].any():
            continue
        sa, wa, b = g.src[lo:hi], g.word[lo:hi], choice[lo:hi]
        w = np.exp(alpha[sa] + g.loglike[lo:hi] - alpha[n])
        u = w[:, None] * beta_dash[n][None, :]
        # y_q = u_q + [b_{q+1} == 3] y_{q+1}: sums over runs that end before a q+1 not deleted
        carry = np.zeros_like(b, dtype=bool)
        carry[:, :-1] = b[:, 1:] == 3
        ends = np.where(~carry, qs[None, :], q_len + 1)
        end = np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1]
        tail = np.zeros((len(w), q_len + 2))
        tail[:, :-1] = np.cumsum(u[:, ::-1], axis=1)[:, ::-1]
        y = tail[:, :-1] - np.take_along_axis(tail, end + 1, axis=1)
        y = np.maximum(y, 0.0)
        rows = np.broadcast_to(sa[:, None], b.shape)
        cols = np.broadcast_to(qs[None, :], b.shape)
        m1, m2, m3 = b == 1, b == 2, b == 3
        np.add.at(beta_dash, (rows[m1], cols[m1] - 1), y[m1])
        np.add.at(beta_dash, (rows[m2], cols[m2]), y[m2])
        np.add.at(beta_dash, (sa, 0), y[:, 0])
        words = np.broadcast_to(wa[:, None], b.shape)
        tb = np.broadcast_to(g.t_begin[lo:hi, None], b.shape)
        te = np.broadcast_to(g.t_end[lo:hi, None], b.shape)
        recs.append((cols[m1], words[m1], y[m1], y[m1] * tb[m1], y[m1] * te[m1]))
        recs.append((cols[m3], np.zeros(m3.sum(), np.int64), y[m3], y[m3] * te[m3],
                     y[m3] * te[m3]))
    rest = np.cumsum(beta_dash[1, :0:-1])[::-1]  # at the start state: the rest are deletions
    recs.append((qs[1:], np.zeros(q_len, np.int64), rest, np.zeros(q_len), np.zeros(q_len)))
    return [np.concatenate(x) for x in zip(*recs)]


def _bins(q_len: int, recs):
    q, word, post, tb, te = recs
    bins: List[Dict[int, float]] = [dict() for _ in range(q_len)]
    begin: List[Dict[int, float]] = [dict() for _ in range(q_len)]
    end: List[Dict[int, float]] = [dict() for _ in range(q_len)]
    keys, inv = np.unique(np.stack([q, word]), axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    sums = [np.bincount(inv, weights=v, minlength=keys.shape[1]) for v in (post, tb, te)]
    for (qq, ww), p, b, e in zip(keys.T.tolist(), *sums):
        if p <= 0.0:  # Kaldi's bins hold the words that got some posterior
            continue
        bins[qq - 1][ww] = float(p)
        begin[qq - 1][ww] = b
        end[qq - 1][ww] = e
    times = np.array([[sum(begin[i].values()), sum(end[i].values())] for i in range(q_len)])
    for i in range(1, q_len):  # overlapping neighbours meet in the middle, as Kaldi
        if times[i - 1, 1] > times[i, 0]:
            times[i - 1, 1] = times[i, 0] = 0.5 * (times[i - 1, 1] + times[i, 0])
    return bins, begin, end, times.reshape(q_len, 2)


def _with_eps(words: Sequence[int]) -> np.ndarray:
    w = [x for x in words if x != 0]
    r = np.zeros(2 * len(w) + 1, np.int64)
    r[1::2] = w
    return r


def mbr_decode(lat: CompactLattice, decode_mbr: bool = True,
               one_best: Optional[Sequence[int]] = None) -> MbrResult:
    """Kaldi's ``MinimumBayesRisk`` on ``lat`` (costs scaled and pruned as wanted; see the
    module's docstring). ``one_best``: the starting hypothesis (default: the best path);
    with ``decode_mbr=False`` it is the hypothesis the confidences are for."""
    g = _graph(lat)
    if one_best is None:
        bp = best_path(lat)
        one_best = bp.words if bp is not None else []
    r = _with_eps(one_best)
    for it in range(MAX_ITERS + 2):
        r = _with_eps(r)
        alpha, alpha_dash, choice = _forward(g, r)
        if alpha[g.n_states] == -INF:
            raise FormatError("the lattice has no complete path")
        expected = float(alpha_dash[g.n_states, len(r)])
        bins, begin, end, bin_times = _bins(len(r), _backward(g, r, alpha, choice))
        change = 0.0
        words, confs, times = [], [], []
        for q, b in enumerate(bins):
            if decode_mbr and b:
                top = min(b.items(), key=lambda kv: (-kv[1], kv[0]))
                change += b.get(int(r[q]), 0.0) - top[1]
                r[q] = top[0]
            if r[q] != 0:
                p = b.get(int(r[q]), 0.0)
                words.append(int(r[q]))
                confs.append(p)
                times.append((begin[q][r[q]] / p, end[q][r[q]] / p) if p > 0
                             else tuple(bin_times[q]))
        if change == 0.0 or it >= MAX_ITERS:
            break
    return MbrResult(words, np.asarray(confs, np.float64),
                     np.asarray(times, np.float64).reshape(-1, 2), bins, bin_times,
                     expected, it + 1)


def lattice_mbr(lat: CompactLattice, lm_weight: float, word_ins_penalty: float = 0.0,
                prune_beam: float = 5.0, decode_mbr: bool = True,
                one_best: Optional[Sequence[int]] = None) -> Optional[MbrResult]:
    """``lattice-add-penalty | lattice-prune --inv-acoustic-scale=LMWT --beam |
    lattice-to-ctm-conf --inv-acoustic-scale=LMWT --decode-mbr`` on a lattice of unscaled
    acoustic costs (as decoders write them); None when it has no path."""
    scaled = prune_lattice(lat.scaled(1.0, 1.0 / lm_weight, word_ins_penalty), prune_beam)
    if not scaled.finals:
        return None
    return mbr_decode(scaled, decode_mbr, one_best)

