"""Log-likelihoods of a Kaldi GMM acoustic model (``final.mdl``: TransitionModel + AmDiagGmm).

A reference acoustic model for the decoder that needs no network: the alignment dir's own GMM
scores real features (the same pipeline as its training: ``apply-cmvn`` + ``add-deltas``), and
decoding them with the embedded decoder must reproduce Kaldi's ``gmm-latgen-faster`` results
(words and per-frame log-likelihoods of the best path). Kaldi's ``DiagGmm::LogLikelihoods``:
per component ``gconst + means_invvars . x - 0.5 * inv_vars . x^2``, log-sum-exp over the
components of a pdf (``gconst`` includes the log-weight).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader
from hybridasr.kaldi.transition_model import TransitionModel


@dataclass
class AmDiagGmm:
    dim: int
    num_pdfs: int
    offsets: np.ndarray  # [num_pdfs + 1]: components of pdf p are offsets[p]:offsets[p + 1]
    gconsts: np.ndarray  # [C] float64
    weights_x: np.ndarray  # [2 * dim, C] float64: rows of means_invvars then -0.5 inv_vars

    def log_likelihoods(self, feats: np.ndarray) -> np.ndarray:
        """[T, dim] features -> [T, num_pdfs] float32 log-likelihoods."""
        x = np.asarray(feats, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise FormatError(f"features have shape {x.shape}, the GMM expects dim {self.dim}")
        comp = np.concatenate([x, x * x], axis=1) @ self.weights_x + self.gconsts  # [T, C]
        starts = self.offsets[:-1]
        top = np.maximum.reduceat(comp, starts, axis=1)  # [T, P]
        sums = np.add.reduceat(np.exp(comp - np.repeat(top, np.diff(self.offsets), axis=1)),
                               starts, axis=1)
        return (top + np.log(sums)).astype(np.float32)


def _read_matrix(r: KaldiObjectReader, what: str) -> np.ndarray:
    tok = r.read_token(what)
    if tok not in ("FM", "DM"):
        raise FormatError(f"{r.name}: expected FM or DM starting {what}, got {tok[:40]!r}")
    rows, cols = r.read_int32(f"rows of {what}"), r.read_int32(f"columns of {what}")
    if rows < 0 or cols < 0 or rows * cols > 500_000_000:
        raise FormatError(f"{r.name}: bad size {rows} x {cols} of {what}")
    size = 4 if tok == "FM" else 8
    data = r._read_exact(rows * cols * size, what)
    return np.frombuffer(data, dtype="<f4" if size == 4 else "<f8").astype(
        np.float64).reshape(rows, cols)


def read_gmm_model(path: str) -> tuple[TransitionModel, AmDiagGmm]:
    """Reads a binary Kaldi GMM model (what ``train_mono.sh``/``align_si.sh`` write)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    with f:
        r = KaldiObjectReader(f, path)
        if not r.binary:
            raise FormatError(f"{path}: not a binary Kaldi model (convert a text model with "
                              f"gmm-copy --binary=true; a symlink copied as a file?)")
        tm = TransitionModel.read(r)
        r.expect_token("<DIMENSION>", "the AmDiagGmm")
        dim = r.read_int32("the feature dimension")
        r.expect_token("<NUMPDFS>", "the AmDiagGmm")
        num_pdfs = r.read_int32("the number of pdfs")
        if num_pdfs != tm.num_pdfs:
            raise FormatError(f"{path}: the AmDiagGmm has {num_pdfs} pdfs, the transition "
                              f"model {tm.num_pdfs}")
        gconsts, mi, iv, offsets = [], [], [], [0]
        for p in range(num_pdfs):
            r.expect_token("<DiagGMM>", f"pdf {p}")
            tok = r.read_token(f"<GCONSTS> of pdf {p}")
            if tok == "<GCONSTS>":
                g = r.read_float_vector(f"gconsts of pdf {p}")
                tok = r.read_token(f"<WEIGHTS> of pdf {p}")
            else:
                g = None
            if tok != "<WEIGHTS>":
                raise FormatError(f"{path}: expected <WEIGHTS> in pdf {p}, got {tok[:40]!r}")
            w = r.read_float_vector(f"weights of pdf {p}")
            r.expect_token("<MEANS_INVVARS>", f"pdf {p}")
            m = _read_matrix(r, f"means_invvars of pdf {p}")
            r.expect_token("<INV_VARS>", f"pdf {p}")
            v = _read_matrix(r, f"inv_vars of pdf {p}")
            r.expect_token("</DiagGMM>", f"pdf {p}")
            if m.shape != v.shape or m.shape != (len(w), dim):
                raise FormatError(f"{path}: pdf {p}: inconsistent sizes {m.shape}, {v.shape}, "
                                  f"{len(w)} weights, dim {dim}")
            if g is None:  # gconsts not stored: compute them as DiagGmm::ComputeGconsts does
                means = m / v
                g = (np.log(w) - 0.5 * dim * np.log(2 * np.pi)
                     + 0.5 * np.log(v).sum(1) - 0.5 * (means * means * v).sum(1))
            gconsts.append(g)
            mi.append(m)
            iv.append(v)
            offsets.append(offsets[-1] + len(w))
    weights_x = np.concatenate([np.concatenate(mi).T, -0.5 * np.concatenate(iv).T], axis=0)
    return tm, AmDiagGmm(dim, num_pdfs, np.asarray(offsets), np.concatenate(gconsts),
                         np.ascontiguousarray(weights_x))

