"""Full-sum (Baum-Welch) training: ``--objective=fullsum``.

Instead of one alignment's targets, each utterance's loss sums over every path of its training
graph (the transcript through the lexicon and the HMMs, as ``compile-train-graphs`` builds it):
``-log Z = -log sum_paths exp(graph weight + am_scale * sum_t log p(pdf_t | x))``. Its
gradient with respect to the network's logits is ``am_scale * (softmax - gamma)``, ``gamma`` the
pdf occupations of the forward-backward (``hybridasr.graph.forward_backward``): so the step is
cross-entropy against ``gamma``, recomputed from the current network at every batch. This is
the GMM-free flat start of RASR/RETURNN setups (Zeyer et al. 2017, "A comprehensive study of
deep bidirectional LSTM RNNs for acoustic modeling", full-sum training from scratch) and what
HTK's HERest does for GMMs: starting from a random network the occupations are the graph's own
soft, uniform alignment, which the network sharpens batch by batch, unlike a Viterbi-trained
network, which learns one equal alignment's errors.

The imported targets of the run (e.g. the equal alignment) only give the utterance list and
frame counts. Reported per frame: the cross-entropy against ``gamma`` (never negative, unlike
``-log Z`` with a prior) and the frame error rate against the occupations' best pdf. An
utterance whose graph has no path of its frame count (too short for its transcript) is
counted, named in the log and left out.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch

from hybridasr.errors import ConfigError, FormatError
from hybridasr.options import option
from hybridasr.train.objective import Objective, TrainingData

log = logging.getLogger(__name__)

__all__ = ["FullSumOptions", "FullSumObjective", "check_fullsum_options"]


@dataclass
class FullSumOptions:
    """Options of ``--objective=fullsum``."""
    fullsum_model_dir: str = option("", "--objective=fullsum: dir with the tree and final.mdl "
                                        "the training graphs are built with (e.g. "
                                        "exp/flat/mono: init_mono.py's)")
    fullsum_lang: str = option("", "--objective=fullsum: lang dir of the training graphs "
                                   "(L.fst, words.txt, oov.int)")
    fullsum_am_scale: float = option(1.0, "--objective=fullsum: scale of the network's log "
                                          "posteriors against the graph's transition and "
                                          "silence log-probabilities", minimum=0.0)
    fullsum_prior_scale: float = option(0.0, "--objective=fullsum: the network's scores are "
                                             "log posteriors minus this times the log of "
                                             "the batch's mean posterior (a prior that "
                                             "keeps frequent pdfs such as silence from "
                                             "taking over)", minimum=0.0)
    fullsum_transition_scale: float = option(1.0, "--objective=fullsum: scale of the graphs' "
                                                  "transition log-probabilities", minimum=0.0)
    fullsum_self_loop_scale: float = option(1.0, "--objective=fullsum: scale of the graphs' "
                                                 "self-loop log-probabilities (1: the HMM's "
                                                 "own; Kaldi's alignment uses 0.1, which "
                                                 "favours pdfs with many paths)", minimum=0.0)


def check_fullsum_options(opts) -> None:
    for name in ("fullsum_model_dir", "fullsum_lang"):
        if not getattr(opts, name):
            raise ConfigError(f"--objective=fullsum needs --{name.replace('_', '-')}")
    if opts.fullsum_am_scale <= 0:
        raise ConfigError("--fullsum-am-scale must be above 0")


class FullSumObjective(Objective):
    """The training graphs of the utterances of ``datasets`` (each a pair of an
    ``UtteranceDataset`` and its data dir's ``text``) and the loss of a batch."""

    Options = FullSumOptions
    whole_utterances = "sums over the paths of whole utterances"

    @classmethod
    def check_chosen(cls, opts) -> None:
        check_fullsum_options(opts)

    @classmethod
    def build(cls, opts, data: TrainingData, inputs) -> "FullSumObjective":
        return cls(opts, [(data.train, os.path.join(inputs.data_tr, "text")),
                          (data.cv, os.path.join(inputs.data_cv, "text"))], data.num_outputs)

    def __init__(self, opts: FullSumOptions, datasets: Sequence[Tuple[object, str]],
                 num_pdfs: int):
        from hybridasr.align.training_graphs import GraphOptions, Lexicon, TrainingGraphCompiler
        from hybridasr.graph.forward_backward import pdf_graph
        from hybridasr.kaldi.io.table import read_text_rspecifier
        from hybridasr.kaldi.transition_model import read_transition_model
        from hybridasr.kaldi.tree import read_tree

        d = opts.fullsum_model_dir
        tm = read_transition_model(os.path.join(d, "final.mdl"))
        if tm.num_pdfs != num_pdfs:
            raise FormatError(f"--fullsum-model-dir={d}: its model has {tm.num_pdfs} pdfs, the "
                              f"network's targets {num_pdfs}")
        graph_opts = GraphOptions(opts.fullsum_transition_scale, opts.fullsum_self_loop_scale)
        lexicon = Lexicon(opts.fullsum_lang, graph_opts.normalize_unknown)
        compiler = TrainingGraphCompiler(tm, read_tree(os.path.join(d, "tree")), lexicon,
                                         graph_opts)
        self.am_scale = float(opts.fullsum_am_scale)
        self.prior_scale = float(opts.fullsum_prior_scale)
        self.graphs: Dict[str, object] = {}
        self.too_short: List[str] = []
        oov = 0
        for ds, text_path in datasets:
            text = read_text_rspecifier(text_path)
            for utt in ds.keys:
                if utt not in text:
                    raise FormatError(f"utterance {utt}: no transcript in {text_path} "
                                      f"(--objective=fullsum)")
                ids, n_oov = lexicon.word_ids(text[utt], utt)
                oov += n_oov
                graph, local2tid = compiler.compile(ids, utt, compact=True)
                g = pdf_graph(graph, tm.tid2pdf[local2tid], f"utterance {utt}")
                if g.min_frames() > ds.lengths[utt]:
                    self.too_short.append(utt)
                self.graphs[utt] = g
        log.info("full-sum training graphs of %d utterances (%d transcript words mapped to the "
                 "OOV word, %d found once lower-cased or stripped of punctuation, %d "
                 "punctuation tokens left out); %d too short for their transcript, left out%s",
                 len(self.graphs), oov, lexicon.normalized, lexicon.dropped, len(self.too_short),
                 f" (e.g. {', '.join(self.too_short[:5])})" if self.too_short else "")

    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        """(loss to differentiate, its reported sum, errors, frames) of ``logits`` [B, T, P]
        for ``batch``: the loss is ``am_scale`` times cross-entropy against ``gamma`` (zero
        for the utterances that do not fit their graph); reported: the cross-entropy."""
        from hybridasr.graph.forward_backward import forward_backward, unreachable

        rows = [i for i, k in enumerate(batch.keys) if k]
        lengths = batch.lengths.tolist()
        for i in rows:
            span = batch.spans[i] if batch.spans else (0, lengths[i])
            if span[1] - span[0] != lengths[i] or span[0] != 0:
                raise ConfigError(f"utterance {batch.keys[i]}: a batch row of frames "
                                  f"{span[0]}..{span[1]}: --objective=fullsum needs whole "
                                  f"utterances")
        logp = torch.log_softmax(logits.float(), dim=-1)
        scores = logp.detach()
        if self.prior_scale > 0:
            t = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0)
            real = (t < batch.lengths.to(logits.device).unsqueeze(1)).unsqueeze(-1)
            mean = (scores.exp() * real).sum((0, 1)) / real.sum().clamp(min=1)
            scores = scores - self.prior_scale * torch.log(mean.clamp(min=1e-10))
        scaled = scores * self.am_scale
        logz, gamma = forward_backward([self.graphs[batch.keys[i]] for i in rows],
                                       scaled[rows], [lengths[i] for i in rows])
        fits = ~unreachable(logz)
        keep = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
        keep[torch.as_tensor(rows, dtype=torch.long)[fits.cpu()]] = True
        full_gamma = torch.zeros_like(logp)
        full_gamma[rows] = gamma.to(logp.device)
        loss = -(full_gamma * logp).sum() * self.am_scale
        frames = int(batch.lengths[keep.cpu()].sum())
        reported = loss.detach() / self.am_scale
        with torch.no_grad():
            t = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0)
            real = (t < batch.lengths.to(logits.device).unsqueeze(1)) & keep.unsqueeze(1)
            errors = ((logp.argmax(-1) != full_gamma.argmax(-1)) & real).sum()
        return loss, reported.to(logits.device), errors, frames
