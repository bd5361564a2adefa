"""Estimating an fMLLR (constrained MLLR) transform of a speaker from a diagonal-covariance GMM,
as Kaldi's ``gmm-est-fmllr`` (``transform/fmllr-diag-gmm.{h,cc}``: ``FmllrDiagGmmAccs``,
``ComputeFmllrMatrixDiagGmmFull``/``Diagonal``/``Offset``; Gales 1998).

Statistics, per frame ``x`` (its extended ``[x; 1]`` written ``x~``) with weight ``w`` and the
posteriors ``g`` of the Gaussians of its pdf (given the frame, under the untransformed model,
or another of the same Gaussians: ``gmm-est-fmllr-gpost``'s speaker-independent one):
``beta += w``, ``K += w sum_g g mu_g / var_g (x~)^T`` (``d x (d+1)``) and, for each dimension
``i``, ``G_i += w sum_g g / var_g[i] x~ x~^T`` (``(d+1) x (d+1)``). The transform ``W = [A b]``
maximises ``beta log|det A| + sum_i (w_i k_i - 1/2 w_i G_i w_i^T)``.

Update types (Kaldi's ``--fmllr-update-type``): ``full`` (the default, as Kaldi's), row by row
from the identity: each row is ``(alpha c_i + k_i) G_i^-1``, ``c_i`` the row of ``A``'s
cofactors and ``alpha`` the root of ``alpha^2 c_i G_i^-1 c_i + alpha c_i G_i^-1 k_i - beta = 0``
with the higher objective, Kaldi's 40 passes over the rows; ``diag``, ``A`` diagonal, each scale
(the positive root) and offset in closed form; ``offset``, ``A`` the identity; ``none``. Below
``min_count`` frames of ``beta`` the transform stays the identity, as Kaldi's does; its
``--fmllr-min-count`` is 500, ``MIN_COUNT`` here 20: Kaldi's would leave a recording of a few
seconds unadapted, which a network trained on fMLLR features reads far worse (docs/transcribe.md).
"""
from __future__ import annotations

import numpy as np

from hybridasr.errors import FormatError

__all__ = ["FmllrAccs", "NUM_ITERS", "MIN_COUNT", "UPDATE_TYPES"]

NUM_ITERS = 40    # Kaldi's FmllrOptions::num_iters
MIN_COUNT = 20.0  # the toolkit's; Kaldi's --fmllr-min-count is 500 (the module's docstring)
UPDATE_TYPES = ("full", "diag", "offset", "none")  # Kaldi's; the first the default


class FmllrAccs:
    """fMLLR statistics of one speaker for a ``hybridasr.kaldi.gmm_model.AmDiagGmm``."""

    def __init__(self, gmm):
        self.gmm = gmm
        d = gmm.dim
        self.beta = 0.0
        self.K = np.zeros((d, d + 1))
        self.G = np.zeros((d, d + 1, d + 1))
        self.mean_invvars = gmm.weights_x[:d].T       # [C, d]
        self.inv_vars = -2.0 * gmm.weights_x[d:].T    # [C, d]

    def accumulate(self, feats: np.ndarray, pdfs: np.ndarray, weights: np.ndarray,
                   post_gmm=None) -> None:
        """Adds frames ``feats`` [T, d], each with its pdf and weight (0: left out; a frame
        of several pdfs is given once for each). ``post_gmm``: the model whose Gaussians give
        the posteriors within a pdf (Kaldi's ``gmm-post-to-gpost`` with the speaker-
        independent model, then ``gmm-est-fmllr-gpost``), of the same Gaussians per pdf;
        None: this one's own (``gmm-est-fmllr``)."""
        gmm = self.gmm
        pg = gmm if post_gmm is None else post_gmm
        if pg is not gmm and (pg.dim != gmm.dim or not np.array_equal(pg.offsets,
                                                                      gmm.offsets)):
            raise FormatError(f"fMLLR stats: the posterior model's Gaussians ({pg.num_pdfs} "
                              f"pdfs, {pg.offsets[-1]} Gaussians of dim {pg.dim}) are not "
                              f"the model's ({gmm.num_pdfs}, {gmm.offsets[-1]}, {gmm.dim})")
        x = np.asarray(feats, dtype=np.float64)
        pdfs = np.asarray(pdfs)
        w = np.asarray(weights, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != gmm.dim or len(pdfs) != len(x) or len(w) != len(x):
            raise FormatError(f"fMLLR stats: {x.shape} features of dim {gmm.dim} with "
                              f"{len(pdfs)} pdfs and {len(w)} weights")
        keep = w != 0
        x, pdfs, w = x[keep], pdfs[keep], w[keep]
        if not len(x):
            return
        if pdfs.min() < 0 or pdfs.max() >= gmm.num_pdfs:
            raise FormatError(f"fMLLR stats: a pdf outside 0..{gmm.num_pdfs - 1}")
        xx = np.concatenate([x, x * x], axis=1)
        xt = np.concatenate([x, np.ones((len(x), 1))], axis=1)  # x~
        m = np.zeros_like(x)  # per frame: sum_g post_g mu_g / var_g
        v = np.zeros_like(x)  # per frame: sum_g post_g / var_g
        for p in np.unique(pdfs):
            rows = np.flatnonzero(pdfs == p)
            lo, hi = gmm.offsets[p], gmm.offsets[p + 1]
            comp = xx[rows] @ pg.weights_x[:, lo:hi] + pg.gconsts[lo:hi]
            comp = np.exp(comp - comp.max(axis=1, keepdims=True))
            post = comp / comp.sum(axis=1, keepdims=True) * w[rows, None]
            m[rows] = post @ self.mean_invvars[lo:hi]
            v[rows] = post @ self.inv_vars[lo:hi]
        self.beta += float(w.sum())
        self.K += m.T @ xt
        self.G += np.einsum("ti,tj,tk->ijk", v, xt, xt, optimize=True)

    def objective(self, W: np.ndarray) -> float:
        """The auxiliary function of ``W`` (per the statistics), Kaldi's FmllrAuxFuncDiagGmm."""
        d = self.gmm.dim
        quad = sum(W[i] @ self.G[i] @ W[i] for i in range(d))
        return float(self.beta * np.linalg.slogdet(W[:, :d])[1] + np.sum(W * self.K)
                     - 0.5 * quad)

    def estimate(self, num_iters: int = NUM_ITERS, min_count: float = MIN_COUNT,
                 update_type: str = UPDATE_TYPES[0]) -> np.ndarray:
        """The transform ``[A b]`` (``d x (d+1)``) of ``update_type`` (``UPDATE_TYPES``); the
        identity below ``min_count`` frames."""
        d = self.gmm.dim
        W = np.hstack([np.eye(d), np.zeros((d, 1))])
        if update_type not in UPDATE_TYPES:
            raise ValueError(f"unknown fMLLR update type {update_type!r}: one of "
                             f"{'|'.join(UPDATE_TYPES)}")
        if self.beta < min_count or self.beta <= 0 or update_type == "none":
            return W
        if update_type == "diag":
            return self._diagonal(W)
        if update_type == "offset":
            for i in range(d):  # the objective's maximum in b_i with A = I
                W[i, d] = (self.K[i, d] - self.G[i][i, d]) / self.G[i][d, d]
            return W
        G_inv = np.linalg.inv(self.G)
        for _ in range(num_iters):
            for i in range(d):
                c = np.zeros(d + 1)
                c[:d] = np.linalg.inv(W[:, :d]).T[i]  # the cofactor row, up to det(A)
                gc, k = G_inv[i] @ c, self.K[i]
                e1, e2 = float(c @ gc), float(k @ gc)  # c G^-1 c, c G^-1 k
                disc = np.sqrt(e2 * e2 + 4.0 * e1 * self.beta)
                best, best_f = None, -np.inf
                for alpha in ((-e2 + disc) / (2.0 * e1), (-e2 - disc) / (2.0 * e1)):
                    f = self.beta * np.log(abs(alpha * e1 + e2)) - 0.5 * alpha * alpha * e1
                    if f > best_f:
                        best, best_f = alpha, f
                W[i] = G_inv[i] @ (best * c + k)
        return W

    def _diagonal(self, W: np.ndarray) -> np.ndarray:
        """``A`` diagonal: per row, the offset ``o`` at its best for a scale ``s`` is
        ``(k_id - s g_idi) / g_idd``; then ``a s^2 + b s + beta = 0`` with ``a = g_idi^2 / g_idd
        - g_iii`` (negative) and ``b = k_ii - g_idi k_id / g_idd``, its positive root."""
        d = self.gmm.dim
        for i in range(d):
            G = self.G[i]
            k_ii, k_id = self.K[i, i], self.K[i, d]
            g_iii, g_idd, g_idi = G[i, i], G[d, d], G[d, i]
            a = g_idi * g_idi / g_idd - g_iii
            b = k_ii - g_idi * k_id / g_idd
            s = (-b - np.sqrt(b * b - 4.0 * a * self.beta)) / (2.0 * a)
            W[i, i] = s
            W[i, d] = (k_id - s * g_idi) / g_idd
        return W
