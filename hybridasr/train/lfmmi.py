"""Lattice-free MMI ("chain") training: ``--objective=lfmmi``.

The network (a chain model: TDNN-F, ``conf/model/tdnnf.conf``) outputs one row per
``--lfmmi-frame-subsampling-factor`` input frames (3) and one column per pdf of the chain tree;
its chain output is trained with ``hybridasr.chain.objective.chain_loss``: the numerator
(each utterance's supervision graph) minus the denominator (the one ``den.fst`` of all
utterances, leaky HMM ``--lfmmi-leaky-hmm-coefficient``), output l2
(``--lfmmi-l2-regularize``) and, where the model has one, its xent output trained towards the
numerator posteriors (``--lfmmi-xent-regularize``): the objective asks the loop for it through
``Objective.model_kwargs`` (``return_xent``).

What it reads:

- ``--lfmmi-den-fst``: ``den.fst``, or the dir of ``steps/nnet/chain/make_den_fst.sh`` holding
  it; beside it ``normalization.fst`` (each supervision is composed with it, as Kaldi's
  ``AddWeightToSupervisionFst``: the numerator paths carry the den graph's probabilities),
  ``tree`` and ``0.trans_mdl`` (the chain tree and transition model, as Kaldi's chain dir;
  ``final.mdl`` stands in for ``0.trans_mdl``);
- ``<ali-tr>``, ``<ali-cv>``: Kaldi alignment dirs (``ali.*.gz``, ``final.mdl``, ``num_jobs``):
  the GMM's alignment at the input frame rate (e.g. the ``<ali-dir>`` given to
  ``steps/nnet/chain/build_tree.sh``: supervision as Kaldi's ``chain-get-supervision`` from
  ``ali-to-phones --write-lengths``, tolerances of ``--lfmmi-left-tolerance`` and
  ``--lfmmi-right-tolerance`` input frames), or the chain tree dir itself (its alignment at the
  subsampled rate, ``frame_subsampling_factor`` beside it: each phone's output frames stand for
  ``factor`` input frames each, and the tolerances apply to those); or Kaldi lattice dirs
  (``lat.*.gz``, ``final.mdl``, ``num_jobs``, no ``ali.*.gz``: e.g. ``exp/tri3b_lats`` of
  ``steps/align_fmllr_lats.sh``), read as lattices: supervision from every phone path of each
  utterance's lattice, as Kaldi's ``get_egs.sh`` with ``--lat-dir``
  (``hybridasr.chain.lattice_supervision``; an unusable lattice is left out, counted).

An utterance without an alignment (or lattice), or whose alignment gives another number of
output frames than its features (beyond ``ceil(frames / factor)``), is counted, named in the
log and in ``lfmmi_report.json`` and left out. The exp dir also gets ``final.mdl``,
``tree`` (the chain ones: what decoding needs) and ``frame_subsampling_factor``, as Kaldi's
chain dirs.

Batches: whole utterances, or ``--chunking=size:step`` chunks whose starts are multiples of
the factor (the supervision is cut to each chunk's output frames, as Kaldi's
``SupervisionSplitter``); a batch is one forward-backward, its rows of different output
lengths padded to the longest (each row's figures are those of it alone). Reported
(``metrics.jsonl``, newbob's cv loss): minus Kaldi's ``log-probability for 'output'`` (the
chain objective plus the l2 term) per output frame; ``cv_fer``: the output frames whose
chain-output argmax is not the numerator's likeliest pdf (cross-validation only; 0 in
training).
"""
from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
from dataclasses import dataclass
from typing import Dict, List, Tuple

import torch

from hybridasr.chain.supervision_dir import read_supervisions

from hybridasr.errors import ConfigError, FormatError
from hybridasr.options import option
from hybridasr.train.objective import Objective, TrainingData

log = logging.getLogger(__name__)

__all__ = ["LfMmiOptions", "LfMmiObjective", "chain_model_files", "read_supervisions"]

_NAMED = 5  # utterances named in a log line


@dataclass
class LfMmiOptions:
    """Options of ``--objective=lfmmi`` (Kaldi's ``--chain.*`` defaults of run_tdnn_1k.sh)."""
    lfmmi_den_fst: str = option("", "--objective=lfmmi: den.fst, or the dir holding it with "
                                    "normalization.fst, the chain tree and 0.trans_mdl "
                                    "(steps/nnet/chain/make_den_fst.sh's)")
    lfmmi_leaky_hmm_coefficient: float = option(0.1, "--objective=lfmmi: leaky-HMM "
                                                     "coefficient of the denominator (Kaldi's "
                                                     "--chain.leaky-hmm-coefficient)",
                                                minimum=0.0)
    lfmmi_xent_regularize: float = option(0.1, "--objective=lfmmi: weight of the xent "
                                               "output's cross-entropy against the numerator "
                                               "posteriors (0: the xent output is not used)",
                                          minimum=0.0)
    lfmmi_l2_regularize: float = option(0.0, "--objective=lfmmi: l2 penalty on the chain "
                                             "output (Kaldi's --chain.l2-regularize: 0 in "
                                             "run_tdnn_1k.sh, 5e-5 in older recipes)",
                                        minimum=0.0)
    lfmmi_frame_subsampling_factor: int = option(3, "--objective=lfmmi: input frames per "
                                                    "output frame of the model (its "
                                                    "--tdnnf-subsampling-factor)", minimum=1)
    lfmmi_left_tolerance: int = option(5, "--objective=lfmmi: input frames a phone may start "
                                          "before its aligned start", minimum=0)
    lfmmi_right_tolerance: int = option(5, "--objective=lfmmi: input frames a phone may end "
                                           "after its aligned end", minimum=0)
    lfmmi_frame_shift: bool = option(False, "--objective=lfmmi: in training, shift each "
                                            "batch's input frames by a random 0 .. factor-1 "
                                            "frames against its supervision (Kaldi's "
                                            "nnet3-chain-copy-egs --frame-shift, which its "
                                            "train.py varies from epoch to epoch)")


def chain_model_files(den_fst: str) -> Tuple[str, str, str]:
    """(den.fst, tree, transition model) of ``--lfmmi-den-fst`` (a file or its dir);
    ``normalization.fst`` is beside den.fst too."""
    den = os.path.join(den_fst, "den.fst") if os.path.isdir(den_fst) else den_fst
    d = os.path.dirname(den) or "."
    mdl = next((os.path.join(d, m) for m in ("0.trans_mdl", "final.mdl")
                if os.path.isfile(os.path.join(d, m))), os.path.join(d, "0.trans_mdl"))
    for f in (den, os.path.join(d, "normalization.fst"), os.path.join(d, "tree"), mdl):
        if not os.path.isfile(f):
            raise FormatError(f"--lfmmi-den-fst={den_fst}: no {f} (make it with "
                              f"steps/nnet/chain/make_den_fst.sh)")
    return den, os.path.join(d, "tree"), mdl


class LfMmiObjective(Objective):
    """The LF-MMI loss of a batch: its rows' supervisions against the den graph."""

    Options = LfMmiOptions
    errors_are = "output frames whose chain-output argmax is not the numerator's likeliest pdf"

    @classmethod
    def check_options(cls, opts) -> None:
        left, right = opts.lfmmi_left_tolerance, opts.lfmmi_right_tolerance
        if left + right + 1 < opts.lfmmi_frame_subsampling_factor:
            raise ConfigError(f"--lfmmi-left-tolerance={left} + --lfmmi-right-tolerance="
                              f"{right} + 1 must be at least --lfmmi-frame-subsampling-factor="
                              f"{opts.lfmmi_frame_subsampling_factor} (Kaldi's rule)")

    @classmethod
    def check_chosen(cls, opts) -> None:
        if not opts.lfmmi_den_fst:
            raise ConfigError("--objective=lfmmi needs --lfmmi-den-fst (den.fst or the dir of "
                              "steps/nnet/chain/make_den_fst.sh)")

    @classmethod
    def check_not_chosen(cls, opts, chosen: str) -> None:
        default = LfMmiOptions()
        for name in vars(default):
            if getattr(opts, name) != getattr(default, name):
                raise ConfigError(f"--{name.replace('_', '-')} is for --objective=lfmmi, not "
                                  f"--objective={chosen}")

    @classmethod
    def check_batches(cls, name: str, strategy, chunked: bool) -> None:
        if strategy.splits_utterances or strategy.per_frame:
            raise ConfigError(f"--objective={name} trains on whole utterances or "
                              f"--chunking chunks; {strategy.describe()} cuts them: use a "
                              f"strategy that batches whole utterances (e.g. "
                              f"--seq-ordering=laplace:4)")

    @classmethod
    def read_data(cls, opts, inputs, transform, use_cmvn: bool,
                  report_dir: str = "") -> TrainingData:
        """The data dirs' utterances with a supervision from ``<ali-tr>``/``<ali-cv>``."""
        from hybridasr.chain.den_forward_backward import DenGraph
        from hybridasr.data.dataset import UtteranceDataset
        from hybridasr.graph.arrays import FstArrays
        from hybridasr.kaldi.transition_model import read_transition_model
        from hybridasr.kaldi.tree import read_tree
        import kaldifst

        if transform.subsample != 1 or transform.label_delay:
            raise ConfigError("--objective=lfmmi: the chain model subsamples itself; train "
                              "without --subsample and --label-delay")
        den_path, tree_path, mdl_path = chain_model_files(opts.lfmmi_den_fst)
        tree, tm = read_tree(tree_path), read_transition_model(mdl_path)
        if tree.num_pdfs != tm.num_pdfs:
            raise FormatError(f"{tree_path} has {tree.num_pdfs} pdfs, {mdl_path} "
                              f"{tm.num_pdfs}")
        den = DenGraph.from_fst(FstArrays.from_fst(kaldifst.StdVectorFst.read(den_path)),
                                tm.num_pdfs)
        norm = kaldifst.StdVectorFst.read(os.path.join(os.path.dirname(den_path) or ".",
                                                       "normalization.fst"))
        kaldifst.arcsort(norm, sort_type="ilabel")
        report = {"den_fst": den_path, "num_pdfs": tm.num_pdfs,
                  "frame_subsampling_factor": opts.lfmmi_frame_subsampling_factor}
        sets, sups = [], {}
        for name, data, ali in (("training", inputs.data_tr, inputs.ali_tr),
                                ("cross-validation", inputs.data_cv, inputs.ali_cv)):
            ds = UtteranceDataset.from_data_dir(data, None, transform, use_cmvn)
            got, skipped = read_supervisions(ali, ds.lengths, tree, tm, opts, norm)
            sups.update(got)
            ds.keys = [k for k in ds.keys if k in got]
            ds.lengths = {k: ds.lengths[k] for k in ds.keys}
            for why, utts in skipped.items():
                if utts:
                    log.warning("LF-MMI %s set %s: %d utterances left out (%s; e.g. %s)", name,
                                data, len(utts), why.replace("_", " "),
                                ", ".join(utts[:_NAMED]))
            not_in_den = len(skipped.get("not_in_den", ()))
            if not_in_den * 2 > not_in_den + len(ds.keys):
                raise FormatError(
                    f"LF-MMI {name} set {data}: {not_in_den} of {not_in_den + len(ds.keys)} "
                    f"utterances of {ali} have no path through the den graph "
                    f"({os.path.dirname(den_path) or '.'}/normalization.fst; e.g. "
                    f"{', '.join(skipped['not_in_den'][:_NAMED])}): their phone sequences are "
                    f"not in its phone LM, so the numerator and den.fst come from alignments "
                    f"of different transcripts. Make both from the same ones: lattices for a "
                    f"Kaldi GMM's alignment with the OOV word for unknown words as Kaldi's "
                    f"(steps/align_si.sh --generate-lats true --normalize-unknown false), or "
                    f"the tree and den.fst from the numerator's own alignment")
            if not ds.keys:
                raise FormatError(f"LF-MMI {name} set {data}: no utterance has a supervision "
                                  f"from {ali}")
            report[name] = {"data": data, "ali_dir": ali, "utterances": len(ds.keys),
                            **{k: len(v) for k, v in skipped.items()},
                            "left_out": {k: v[:100] for k, v in skipped.items() if v}}
            log.info("LF-MMI %s set: %d utterances with supervision from %s", name,
                     len(ds.keys), ali)
            sets.append(ds)
        if report_dir:
            _write_chain_files(report_dir, report, tree_path, mdl_path,
                               opts.lfmmi_frame_subsampling_factor)
        return TrainingData(tm.num_pdfs, sets[0], sets[1], extra=(den, sups))

    @classmethod
    def build(cls, opts, data: TrainingData, inputs) -> "LfMmiObjective":
        den, sups = data.extra
        return cls(opts, den, sups)

    def __init__(self, opts, den, supervisions: Dict[str, object]):
        from hybridasr.chain.objective import ChainObjectiveOptions

        self.den, self.sups = den, supervisions
        self.factor = int(opts.lfmmi_frame_subsampling_factor)
        self.chain_opts = ChainObjectiveOptions(opts.lfmmi_leaky_hmm_coefficient,
                                                opts.lfmmi_xent_regularize,
                                                opts.lfmmi_l2_regularize)
        self._chunks: Dict[Tuple[str, int, int], object] = {}
        self.frame_shift = bool(opts.lfmmi_frame_shift)

    def model_inputs(self, feats: torch.Tensor, batch, training: bool) -> torch.Tensor:
        """With ``--lfmmi-frame-shift`` in training: each row's frames moved ``s`` earlier
        (``s`` drawn from 0 .. factor-1 a batch), its last frame repeated ``s`` times at its
        end, so output frame t sees input frame factor * t + s; the supervision, its phones
        allowed within the tolerances, is unchanged. Padding stays where it was."""
        if not (training and self.frame_shift and self.factor > 1):
            return feats
        s = int(torch.randint(self.factor, ()).item())
        if s == 0:
            return feats
        t = torch.arange(feats.shape[1], device=feats.device).unsqueeze(0)
        last = (batch.lengths.to(feats.device) - 1).clamp(min=0).unsqueeze(1)
        idx = torch.where(t <= last, torch.minimum(t + s, last), t)
        return feats.gather(1, idx.unsqueeze(2).expand(-1, -1, feats.shape[2]))

    def model_kwargs(self, model) -> dict:
        """The xent output where the model has one and it is weighted; a model of another
        frame subsampling factor is an error."""
        f = getattr(model, "frame_subsampling_factor", None)
        if f is not None and int(f) != self.factor:
            raise ConfigError(f"--lfmmi-frame-subsampling-factor={self.factor} but the model "
                              f"outputs every {f}th frame (--tdnnf-subsampling-factor, "
                              f"--blstm-subsampling-factor)")
        if self.chain_opts.xent_regularize > 0 and \
                "return_xent" in inspect.signature(model.forward).parameters:
            return {"return_xent": True}
        return {}

    def _graph(self, key: str, begin: int, frames: int):
        from hybridasr.chain.supervision import split_supervision

        try:
            sup = self.sups[key]
        except KeyError:
            raise FormatError(f"utterance {key}: no supervision (--objective=lfmmi)") from None
        if begin + frames > sup.num_frames:
            raise FormatError(f"utterance {key}: output frames {begin}..{begin + frames} past "
                              f"its supervision's {sup.num_frames}")
        if begin == 0 and frames == sup.num_frames:
            return sup.fst
        cut = self._chunks.get((key, begin, frames))
        if cut is None:
            cut = self._chunks[(key, begin, frames)] = split_supervision(sup, begin, frames)
        return cut

    def __call__(self, output, batch) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """(loss, reported loss, errors, output frames) of the model's ``output``: the chain
        output [B, ceil(T / factor), P], or (chain, xent)."""
        from hybridasr.chain.num_forward_backward import NumGraphs
        from hybridasr.chain.objective import chain_loss, num_posteriors

        chain, xent = output if isinstance(output, (tuple, list)) else (output, None)
        f, t_in = self.factor, batch.feats.shape[1]
        if chain.shape[1] != -(-t_in // f):
            raise ConfigError(f"the model gave {chain.shape[1]} output frames for {t_in} input "
                              f"frames; --lfmmi-frame-subsampling-factor={f} expects "
                              f"{-(-t_in // f)}")
        lengths = batch.lengths.tolist()
        rows: List[Tuple[int, int, object]] = []  # (row, output frames, numerator graph)
        for i, key in enumerate(batch.keys):
            if not key or not lengths[i]:
                continue
            start = batch.spans[i][0] if batch.spans else 0
            if start % f:
                raise ConfigError(f"utterance {key}: a chunk starting at frame {start}: "
                                  f"--objective=lfmmi needs chunk starts at multiples of "
                                  f"{f} (a --chunking step that is)")
            n = -(-lengths[i] // f)
            rows.append((i, n, self._graph(key, start // f, n)))
        dev = chain.device
        loss = torch.zeros((), dtype=torch.float32, device=dev)
        reported = torch.zeros((), dtype=torch.float64, device=dev)
        errors = torch.zeros((), dtype=torch.int64, device=dev)
        if not rows:
            return loss, reported, errors, 0
        n = max(r[1] for r in rows)
        idx = torch.as_tensor([i for i, _, _ in rows], dtype=torch.long, device=dev)
        out_len = torch.as_tensor([m for _, m, _ in rows], dtype=torch.long, device=dev)
        out = chain.index_select(0, idx)[:, :n].float()
        xo = None if xent is None else xent.index_select(0, idx)[:, :n].float()
        num = NumGraphs.from_fsts([g for _, _, g in rows], out.shape[2], device=dev)
        res = chain_loss(out, self.den, num, xo, self.chain_opts, lengths=out_len)
        loss = loss + res.loss
        reported += -(res.objf + res.l2_term) * res.frames
        frames = res.frames
        if not torch.is_grad_enabled():
            best = num_posteriors(out, num, out_len).argmax(-1)
            live = torch.arange(n, device=dev) < out_len.unsqueeze(1)
            errors += ((out.argmax(-1) != best) & live).sum()
        return loss, reported, errors, frames


def _write_chain_files(exp_dir: str, report: dict, tree_path: str, mdl_path: str,
                       factor: int) -> None:
    """``lfmmi_report.json``, and what decoding takes from a chain dir: ``final.mdl``,
    ``tree``, ``frame_subsampling_factor``."""
    from hybridasr.utils.atomic import atomic_open, atomic_path

    os.makedirs(exp_dir, exist_ok=True)
    with atomic_open(os.path.join(exp_dir, "lfmmi_report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
        fh.write("\n")
    for src, name in ((mdl_path, "final.mdl"), (tree_path, "tree")):
        with atomic_path(os.path.join(exp_dir, name)) as tmp:
            shutil.copyfile(src, tmp)
    with atomic_open(os.path.join(exp_dir, "frame_subsampling_factor"), "w",
                     encoding="utf-8") as fh:
        fh.write(f"{factor}\n")
