"""Network outputs -> scaled log-likelihoods, Kaldi nnet1 ``nnet-forward`` style.

``log p(x|s) ~ log p(s|x) - prior_scale * log p(s)``: log-softmax of the logits minus the
scaled log-priors from the alignment's pdf counts (``--class-frame-counts``). Pdfs whose prior
is below ``prior_floor`` get a huge log-prior (see ``hybridasr.align.counts.log_priors``), so
their log-likelihood is hugely negative and the decoder never uses them. Kaldi's nnet1 with
``--no-softmax`` subtracts the priors from the pre-softmax activations instead; that differs
from the log-softmax by one constant per frame, which changes no decoding result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from hybridasr.align.counts import load_log_priors  # noqa: F401 (its users import it here)
from hybridasr.errors import FormatError
from hybridasr.options import option


@dataclass
class PriorOptions:
    class_frame_counts: str = option("", "pdf counts of the training alignment (Kaldi text "
                                         "vector); empty: write log-posteriors without "
                                         "dividing by priors")
    prior_scale: float = option(1.0, "scale of the log-priors")
    prior_floor: float = option(1e-10, "pdfs with a prior below this are disabled")


def scaled_loglikes(logits, log_priors: Optional[np.ndarray] = None,
                    prior_scale: float = PriorOptions.prior_scale) -> np.ndarray:
    """[T, P] logits (tensor or array) -> float32 log-posteriors minus scaled log-priors."""
    x = torch.as_tensor(logits).float()
    out = torch.log_softmax(x, dim=-1).cpu().numpy()
    if log_priors is not None:
        if log_priors.shape[-1] != out.shape[-1]:
            raise FormatError(f"{log_priors.shape[-1]} log-priors for {out.shape[-1]} outputs")
        out = out - np.float32(prior_scale) * log_priors
    return out.astype(np.float32, copy=False)
