"""A Kaldi GMM of a network's tree scoring a recording's frames beside the network, for
``transcribe.py --gmm-dir``: the per-recording form of ``steps/nnet/decode.sh --gmm-dir`` (the
log-likelihoods ``(1 - w) * network + w * GMM``, Kaldi's ``DecodableSumScaled``; see
``hybridasr.decode.score_fusion``).

The GMM reads its own features, as Kaldi's ``decode.sh`` builds them from the raw ones: CMVN as
its dir's ``cmvn_opts`` says, then ``splice_opts`` + ``final.mat`` where it has ``final.mat``,
else ``add-deltas`` with its ``delta_opts`` (``hybridasr.features.fmllr.FmllrPipeline``). The
raw features are the model's (its conf): fusion is right only where those are the GMM's own, as
the recipe checks before it fuses (``data/gmm_features.json``). CMVN of a recording is the
transcriber's: Kaldi's online CMVN from the model dir's global stats, or the recording's own
stats (a recording is its own speaker). No fMLLR: a SAT GMM needs per-speaker transforms, which
new audio does not have; such a dir is refused, naming why.
"""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from hybridasr.errors import ConfigError, FormatError

__all__ = ["GmmScorer", "pipeline_features"]


def pipeline_features(pipeline, raw: np.ndarray, global_stats: Optional[np.ndarray] = None,
                      online: bool = False, cmvn_stats: Optional[np.ndarray] = None
                      ) -> np.ndarray:
    """A GMM pipeline's features (``FmllrPipeline``, its transforms aside) of one recording's
    raw features: CMVN as its ``cmvn_opts`` says (``cmvn_stats``: its speaker's; else
    ``online``: Kaldi's online CMVN from ``global_stats``; else the recording's own stats, a
    speaker of one recording), then splice + LDA or deltas."""
    from hybridasr.features.cmvn import accumulate_cmvn_stats
    from hybridasr.features.online_cmvn import online_cmvn

    if cmvn_stats is None and online and pipeline.cmvn_opts["norm_means"]:
        x = online_cmvn(np.asarray(raw, dtype=np.float32), global_stats,
                        pipeline.cmvn_opts["norm_vars"])
        return pipeline.after_cmvn(x)
    return pipeline(raw, accumulate_cmvn_stats(raw) if cmvn_stats is None else cmvn_stats, "")


class GmmScorer:
    """``gmm_dir``'s ``final.mdl`` with its feature pipeline; ``weight`` its share of the sum."""

    def __init__(self, gmm_dir: str, weight: float, model_dir: str, num_pdfs: int,
                 raw_dim: int):
        from hybridasr.features.fmllr import FmllrPipeline
        from hybridasr.kaldi.gmm_model import read_gmm_model

        if not 0.0 < weight <= 1.0:
            raise ConfigError(f"--gmm-weight={weight:g}: give a number above 0 and at most 1 "
                              f"(without --gmm-dir: the network alone)")
        for f in ("final.mdl", "tree"):
            if not os.path.isfile(os.path.join(gmm_dir, f)):
                raise FormatError(f"--gmm-dir: missing file {os.path.join(gmm_dir, f)}")
        if any(n.startswith("trans.") for n in os.listdir(gmm_dir)):
            raise ConfigError(f"--gmm-dir {gmm_dir} holds fMLLR transforms (trans.*): a "
                              f"speaker-adapted GMM scores adapted features, and new audio has "
                              f"no transforms; transcribe with the network alone")
        mine = os.path.join(model_dir, "tree")
        with open(os.path.join(gmm_dir, "tree"), "rb") as a:
            theirs = a.read()
        if not os.path.isfile(mine):
            raise FormatError(f"--gmm-dir: the model dir has no tree ({mine}) to check that the "
                              f"GMM's pdfs are the network's")
        with open(mine, "rb") as b:
            if b.read() != theirs:
                raise ConfigError(f"--gmm-dir {gmm_dir}: its tree is not the network's ({mine}): "
                                  f"their pdfs differ")
        self.gmm_dir, self.weight = gmm_dir, float(weight)
        _, self.gmm = read_gmm_model(os.path.join(gmm_dir, "final.mdl"))
        if self.gmm.num_pdfs != num_pdfs:
            raise FormatError(f"--gmm-dir {gmm_dir}: {self.gmm.num_pdfs} pdfs, the network "
                              f"{num_pdfs}")
        self.pipeline = FmllrPipeline.from_gmm_dir(gmm_dir)
        dim = self.pipeline.output_dim(raw_dim)
        if dim != self.gmm.dim:
            raise FormatError(f"--gmm-dir {gmm_dir}: the model's {raw_dim}-dim features through "
                              f"the GMM's pipeline give {dim or 'no'} dims, its final.mdl "
                              f"expects {self.gmm.dim}: not the features the GMM was trained on")

    def loglikes(self, raw: np.ndarray, global_stats: Optional[np.ndarray], online: bool,
                 cmvn_stats: Optional[np.ndarray] = None) -> np.ndarray:
        """The GMM's (frames x pdfs) log-likelihoods of one recording's raw features, through
        its pipeline (``pipeline_features``)."""
        return self.gmm.log_likelihoods(pipeline_features(self.pipeline, raw, global_stats,
                                                          online, cmvn_stats))

    def fuse(self, network: np.ndarray, gmm: np.ndarray, what: str) -> np.ndarray:
        """``(1 - weight) * network + weight * gmm``; the shapes must agree."""
        if network.shape != gmm.shape:
            raise FormatError(f"{what}: the network gives {network.shape[0]}x{network.shape[1]} "
                              f"log-likelihoods, the GMM {gmm.shape[0]}x{gmm.shape[1]}")
        return ((1.0 - self.weight) * network + self.weight * gmm).astype(np.float32)
