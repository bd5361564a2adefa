"""Diagonal-covariance GMMs, one per pdf, trained by maximum likelihood from alignments: the
model of Kaldi's ``train_mono.sh`` (``gmm-init-mono``, ``gmm-acc-stats-ali``, ``gmm-est`` with
``--mix-up``), in numpy.

- ``DiagGmmSet.init_global``: every pdf one Gaussian with the features' global mean and
  variance (``gmm-init-mono``).
- ``accumulate``: per component the occupancy and the first and second order statistics of
  the frames aligned to its pdf, weighted by the component's posterior under the current model
  (``gmm-acc-stats-ali``).
- ``update``: Kaldi's ``MleDiagGmmUpdate``: weights, means and variances from the statistics,
  variances floored at ``min_variance``; a component with less occupancy than
  ``min_gaussian_occupancy`` keeps its mean and variance, and is removed (unless it is its
  pdf's last) as ``--remove-low-count-gaussians`` does.
- ``split_by_count``: Kaldi's ``AmDiagGmm::SplitByCount``: the total target number of
  components shared out over the pdfs by occupancy^power (a pdf's components each keeping at
  least ``min_count`` frames), and within a pdf the heaviest component split in two, the
  halves' means moved by +-``perturb_factor`` standard deviations along a random direction
  (``DiagGmm::Split``).
- ``write_gmm_model``: the model as Kaldi's binary ``final.mdl`` (TransitionModel, then
  ``AmDiagGmm``), which ``hybridasr.kaldi.gmm_model.read_gmm_model`` and Kaldi's tools read.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import List

import numpy as np

from hybridasr.kaldi.gmm_model import AmDiagGmm
from hybridasr.kaldi.io.io_funcs import KaldiObjectWriter
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.utils.atomic import atomic_path

LOG_2PI = float(np.log(2 * np.pi))


@dataclass
class GmmStats:
    occ: List[np.ndarray]  # per pdf [components]
    x: List[np.ndarray]  # per pdf [components, dim]
    x2: List[np.ndarray]
    log_like: float = 0.0
    frames: int = 0

    def pdf_occupancy(self) -> np.ndarray:
        return np.array([o.sum() for o in self.occ])


@dataclass
class DiagGmmSet:
    """``weights[p]`` [C_p], ``means[p]`` and ``variances[p]`` [C_p, dim] of every pdf p."""
    weights: List[np.ndarray] = field(default_factory=list)
    means: List[np.ndarray] = field(default_factory=list)
    variances: List[np.ndarray] = field(default_factory=list)

    @classmethod
    def init_global(cls, num_pdfs: int, mean: np.ndarray, var: np.ndarray) -> "DiagGmmSet":
        return cls([np.ones(1) for _ in range(num_pdfs)],
                   [mean[None].astype(np.float64).copy() for _ in range(num_pdfs)],
                   [var[None].astype(np.float64).copy() for _ in range(num_pdfs)])

    @property
    def num_pdfs(self) -> int:
        return len(self.weights)

    @property
    def dim(self) -> int:
        return self.means[0].shape[1]

    def num_gauss(self) -> int:
        return sum(len(w) for w in self.weights)

    def to_am(self) -> AmDiagGmm:
        """The scoring form (``AmDiagGmm.log_likelihoods``: gconsts and the stacked
        means*invvars / -0.5*invvars rows)."""
        inv = np.concatenate(self.variances) ** -1.0
        mu = np.concatenate(self.means)
        w = np.concatenate(self.weights)
        gconsts = (np.log(np.maximum(w, 1e-300)) - 0.5 * self.dim * LOG_2PI
                   + 0.5 * np.log(inv).sum(1) - 0.5 * (mu * mu * inv).sum(1))
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in self.weights])])
        weights_x = np.ascontiguousarray(np.concatenate([(mu * inv).T, -0.5 * inv.T], axis=0))
        return AmDiagGmm(self.dim, self.num_pdfs, offsets, gconsts, weights_x)

    # ------------------------------------------------------------------ statistics
    def new_stats(self) -> GmmStats:
        d = self.dim
        return GmmStats([np.zeros(len(w)) for w in self.weights],
                        [np.zeros((len(w), d)) for w in self.weights],
                        [np.zeros((len(w), d)) for w in self.weights])

    def accumulate(self, am: AmDiagGmm, feats: np.ndarray, pdfs: np.ndarray,
                   stats: GmmStats) -> None:
        """Adds one utterance: ``feats`` [T, dim], ``pdfs`` [T] (its alignment's pdfs)."""
        x = np.asarray(feats, dtype=np.float64)
        comp = np.concatenate([x, x * x], axis=1) @ am.weights_x + am.gconsts  # [T, C]
        for p in np.unique(pdfs):
            rows = np.flatnonzero(pdfs == p)
            lo, hi = am.offsets[p], am.offsets[p + 1]
            c = comp[rows, lo:hi]
            top = c.max(axis=1, keepdims=True)
            post = np.exp(c - top)
            tot = post.sum(axis=1, keepdims=True)
            post /= tot
            stats.log_like += float((top[:, 0] + np.log(tot[:, 0])).sum())
            xr = x[rows]
            stats.occ[p] += post.sum(axis=0)
            stats.x[p] += post.T @ xr
            stats.x2[p] += post.T @ (xr * xr)
        stats.frames += len(pdfs)

    # ------------------------------------------------------------------ re-estimation
    def update(self, stats: GmmStats, min_variance: float = 0.001,
               min_gaussian_occupancy: float = 10.0, min_gaussian_weight: float = 1e-5) -> int:
        """MLE update in place; returns the number of components removed."""
        removed = 0
        for p in range(self.num_pdfs):
            occ = stats.occ[p]
            total = occ.sum()
            if total <= 0.0:
                continue  # no frame of this pdf: left as it was (Kaldi's too)
            w = occ / total
            ok = occ > min_gaussian_occupancy
            mean = stats.x[p][ok] / occ[ok, None]
            var = np.maximum(stats.x2[p][ok] / occ[ok, None] - mean * mean, min_variance)
            self.means[p][ok], self.variances[p][ok] = mean, var
            keep = ok & (w >= min_gaussian_weight)
            if not keep.any():  # never a pdf without components
                keep = occ == occ.max()
                keep[np.argmax(keep) + 1:] = False
            removed += int((~keep).sum())
            w = w[keep]
            self.weights[p] = w / w.sum()
            self.means[p] = self.means[p][keep]
            self.variances[p] = self.variances[p][keep]
        return removed

    def split_by_count(self, pdf_occs: np.ndarray, target_components: int,
                       rng: np.random.Generator, perturb_factor: float = 0.01,
                       power: float = 0.25, min_count: float = 20.0) -> None:
        """Mixes up to about ``target_components`` components (never removes any)."""
        targets = split_targets(pdf_occs, target_components, power, min_count)
        for p, target in enumerate(targets):
            w, m, v = self.weights[p], self.means[p], self.variances[p]
            if target <= len(w):
                continue
            w, m, v = list(w), list(m), list(v)
            while len(w) < target:
                k = int(np.argmax(w))
                w[k] /= 2.0
                shift = perturb_factor * rng.standard_normal(self.dim) * np.sqrt(v[k])
                w.append(w[k])
                m.append(m[k] + shift)
                v.append(v[k].copy())
                m[k] = m[k] - shift
            self.weights[p], self.means[p], self.variances[p] = \
                np.asarray(w), np.stack(m), np.stack(v)


def split_targets(pdf_occs: np.ndarray, target_components: int, power: float,
                  min_count: float) -> List[int]:
    """Kaldi's ``GetSplitTargets``: one component a pdf, then one more at a time to the pdf
    of the largest occupancy^power per component, until ``target_components``; a pdf whose
    components would get fewer than ``min_count`` frames each is split no further."""
    n = len(pdf_occs)
    num = [1] * n
    heap = [(-(float(o) ** power), p) for p, o in enumerate(pdf_occs)]  # key: occ^power / num
    heapq.heapify(heap)
    scaled = [float(o) ** power for o in pdf_occs]
    total = n
    while total < target_components and heap:
        key, p = heapq.heappop(heap)
        if key == 0.0:
            break
        if (num[p] + 1) * min_count >= pdf_occs[p]:
            continue  # cannot be split: dropped from the queue
        num[p] += 1
        total += 1
        heapq.heappush(heap, (-scaled[p] / num[p], p))
    return num


def write_gmm_model(tm: TransitionModel, gmms: DiagGmmSet, path: str) -> None:
    """Kaldi's binary ``final.mdl``: the TransitionModel, then the AmDiagGmm
    (``<DIMENSION> <NUMPDFS>``, and per pdf ``<DiagGMM> <GCONSTS> <WEIGHTS> <MEANS_INVVARS>
    <INV_VARS> </DiagGMM>``), written atomically."""
    am = gmms.to_am()
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        w = KaldiObjectWriter(f, binary=True)
        tm.write(w)
        w.token("<DIMENSION>")
        w.int32(gmms.dim)
        w.token("<NUMPDFS>")
        w.int32(gmms.num_pdfs)
        for p in range(gmms.num_pdfs):
            lo, hi = am.offsets[p], am.offsets[p + 1]
            inv = 1.0 / gmms.variances[p]
            w.token("<DiagGMM>")
            w.token("<GCONSTS>")
            w.float_vector(am.gconsts[lo:hi])
            w.token("<WEIGHTS>")
            w.float_vector(gmms.weights[p])
            w.token("<MEANS_INVVARS>")
            _write_float_matrix(f, gmms.means[p] * inv)
            w.token("<INV_VARS>")
            _write_float_matrix(f, inv)
            w.token("</DiagGMM>")


def _write_float_matrix(f, m: np.ndarray) -> None:
    """A binary Kaldi float matrix (``FM``, rows, columns, row-major float32)."""
    m = np.ascontiguousarray(m, dtype="<f4")
    f.write(b"FM ")
    f.write(b"\x04" + np.int32(m.shape[0]).astype("<i4").tobytes())
    f.write(b"\x04" + np.int32(m.shape[1]).astype("<i4").tobytes())
    f.write(m.tobytes())
