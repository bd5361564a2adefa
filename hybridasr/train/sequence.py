"""Sequence-discriminative training on lattices: ``--objective=smbr`` or ``--objective=mmi``,
Kaldi nnet1's ``nnet-train-mpe-sequential`` (sMBR) and ``nnet-train-mmi-sequential`` (MMI).

Each training utterance has a denominator lattice (``steps/nnet/make_denlats.sh``: the CE
network's lattice on a weak, e.g. unigram, graph) and a numerator alignment (the batch's
targets: the CE network's alignment of the transcript, ``steps/nnet/align.sh``). At every
batch the lattices are rescored with the network's current log-likelihoods (log-posteriors
minus the log-priors of ``--seq-class-frame-counts``), scaled (``--seq-acwt``, graph costs by
``--seq-lm-scale``), and a forward-backward runs over them
(``hybridasr.graph.lattice_forward_backward``). The gradient at the network's logits is
Kaldi's ``nnet_diff``:

- sMBR: minus the sMBR posteriors, ``-gamma * (accuracy through the arc - expected
  accuracy)`` summed per pdf, the frame accuracy of an arc being 1 where its pdf is the
  numerator's, or (``--seq-one-silence-class``) where both are silence;
- MMI: denominator occupancies minus the numerator's one-hot; frames whose numerator pdf has
  no denominator occupancy get none (``--seq-drop-frames``, as nnet1).

Both sum to zero over each frame, so the same gradient reaches the pre-softmax activations
whether one differentiates log-softmax outputs or the raw ones, as nnet1 does. The step
minimises ``sum(diff * log_softmax(logits))`` with ``diff`` held fixed, which has exactly that
gradient; ``--seq-frame-smoothing H`` interpolates it with cross-entropy against the numerator
(``(1 - H) * diff + H * (softmax - onehot)``, Su et al. 2013).

Reported per frame: sMBR, the expected frame error ``1 - accuracy`` (so lower is better, as a
loss); MMI, ``-(acwt * numerator log-likelihood - lattice log-probability)``, nnet1's
objective with the sign of a loss. Errors: frames whose best pdf is not the numerator's. An
utterance without a lattice, whose lattice has another number of frames, or no path that
reaches a final state, is left out, counted and named once in the log, as nnet1 does.
"""
from __future__ import annotations

import glob
import logging
import os
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
import torch

from hybridasr.errors import ConfigError, FormatError
from hybridasr.options import option
from hybridasr.train.objective import Objective, TrainingData

log = logging.getLogger(__name__)

@dataclass
class SequenceOptions:
    """Options of ``--objective=smbr|mmi`` (nnet1's names without the prefix)."""
    seq_denlats: str = option("", "--objective=smbr|mmi: the denominator lattices' dir "
                                  "(lat.*.gz, steps/nnet/make_denlats.sh), holding those of "
                                  "the training and cross-validation utterances")
    seq_transition_model: str = option("", "--objective=smbr|mmi: the transition model of "
                                           "the lattices' transition-ids (default: "
                                           "<seq-denlats>/final.mdl)")
    seq_silence_phones: str = option("", "--objective=smbr: colon-separated integer ids of "
                                         "the silence phones (the lang's "
                                         "phones/silence.csl), e.g. 1:2:3")
    seq_acwt: float = option(0.1, "--objective=smbr|mmi: acoustic scale of the rescored "
                                  "lattices (nnet1's --acoustic-scale)", minimum=0.0)
    seq_lm_scale: float = option(1.0, "--objective=smbr|mmi: scale of the lattices' graph "
                                      "costs (nnet1's --lm-scale)", minimum=0.0)
    seq_one_silence_class: bool = option(True, "--objective=smbr: silence frames are correct "
                                               "wherever the numerator is silence too (nnet1's "
                                               "--one-silence-class; false: silence is never "
                                               "correct)")
    seq_frame_smoothing: float = option(0.0, "--objective=smbr|mmi: weight H of frame "
                                             "cross-entropy against the numerator in the "
                                             "gradient, (1 - H) * sequence + H * CE (Su et "
                                             "al.'s frame smoothing; 0: none, as nnet1)",
                                        minimum=0.0)
    seq_class_frame_counts: str = option("", "--objective=smbr|mmi: pdf counts whose "
                                             "log-priors are subtracted from the "
                                             "log-posteriors before rescoring (the CE "
                                             "network's ali_train_pdf.counts); empty: none")
    seq_prior_scale: float = option(1.0, "--objective=smbr|mmi: scale of those log-priors",
                                    minimum=0.0)
    seq_drop_frames: bool = option(True, "--objective=mmi: frames whose numerator pdf has no "
                                         "denominator occupancy get no gradient (nnet1's "
                                         "--drop-frames)")


def check_sequence_options(opts) -> None:
    if not opts.seq_denlats:
        raise ConfigError(f"--objective={opts.objective} needs --seq-denlats (the denominator "
                          f"lattices of steps/nnet/make_denlats.sh)")
    if opts.seq_acwt <= 0:
        raise ConfigError("--seq-acwt must be above 0")
    if opts.seq_frame_smoothing > 1:
        raise ConfigError(f"--seq-frame-smoothing={opts.seq_frame_smoothing}: a weight in "
                          f"[0, 1]")


def read_denominator_lattices(denlats: str, keys) -> Tuple[Dict[str, object], Dict[str, str]]:
    """The FrameLattices of ``keys`` in ``denlats``/lat.*.gz, and why each unusable one is
    left out (``{utt: reason}``)."""
    from hybridasr.graph.lattice_forward_backward import frame_lattice
    from hybridasr.kaldi.lattice import read_lattices

    files = sorted(glob.glob(os.path.join(denlats, "lat.*.gz")))
    if not files:
        raise FormatError(f"--seq-denlats={denlats}: no lat.*.gz (make them with "
                          f"steps/nnet/make_denlats.sh)")
    wanted = set(keys)
    lats, bad = {}, {}
    for f in files:
        for key, lat in read_lattices(f"ark:gunzip -c {f}|"):
            if key not in wanted:
                continue
            try:
                lats[key] = frame_lattice(lat, f"lattice {key} in {f}")
            except FormatError as e:
                bad[key] = str(e)
    for k in wanted - set(lats) - set(bad):
        bad[k] = f"no lattice in {denlats}/lat.*.gz"
    return lats, bad


class SequenceObjective(Objective):
    """The lattices of the utterances of ``keys`` and the loss of a batch (see the module's
    docstring); the criterion is ``opts.objective`` (``smbr`` or ``mmi``)."""

    Options = SequenceOptions
    whole_utterances = "rescores each utterance's whole lattice"

    @classmethod
    def check_chosen(cls, opts) -> None:
        check_sequence_options(opts)

    @classmethod
    def build(cls, opts, data: TrainingData, inputs) -> "SequenceObjective":
        train_set, cv_set = data.train, data.cv
        keys = list(train_set.keys) + [k for k in cv_set.keys if k not in set(train_set.keys)]
        lengths = dict(cv_set.lengths)
        lengths.update(train_set.lengths)
        return cls(opts, keys, lengths, data.num_outputs)

    def __init__(self, opts, keys: Sequence[str], lengths: Dict[str, int], num_pdfs: int):
        from hybridasr.align.counts import load_log_priors
        from hybridasr.kaldi.transition_model import read_transition_model

        check_sequence_options(opts)
        self.criterion = opts.objective
        mdl = opts.seq_transition_model or os.path.join(opts.seq_denlats, "final.mdl")
        tm = read_transition_model(mdl)
        if tm.num_pdfs != num_pdfs:
            raise FormatError(f"{mdl} has {tm.num_pdfs} pdfs, the network {num_pdfs}: the "
                              f"lattices do not belong to this network's targets")
        self.tid2pdf = np.asarray(tm.tid2pdf, dtype=np.int64)
        silence = set()
        if opts.seq_silence_phones:
            try:
                silence = {int(p) for p in opts.seq_silence_phones.split(":") if p}
            except ValueError:
                raise ConfigError(f"--seq-silence-phones={opts.seq_silence_phones}: integer "
                                  f"phone ids separated by ':'") from None
        elif self.criterion == "smbr" and opts.seq_one_silence_class:
            log.warning("--seq-silence-phones not given: no pdf counts as silence")
        phone = np.zeros(len(self.tid2pdf), dtype=np.int64)
        for t in range(1, len(self.tid2pdf)):
            phone[t] = tm.transition_id_to_phone(t)
        self.tid_is_sil = np.isin(phone, sorted(silence))
        self.tid_is_sil[0] = False
        self.pdf_is_sil = np.zeros(num_pdfs, dtype=bool)
        self.pdf_is_sil[self.tid2pdf[1:][self.tid_is_sil[1:]]] = True
        self.one_silence_class = bool(opts.seq_one_silence_class)
        self.acwt, self.lm_scale = float(opts.seq_acwt), float(opts.seq_lm_scale)
        self.smoothing = float(opts.seq_frame_smoothing)
        self.drop_frames = bool(opts.seq_drop_frames)
        self.log_prior = None
        if opts.seq_class_frame_counts:
            self.log_prior = torch.as_tensor(
                load_log_priors(opts.seq_class_frame_counts, num_pdfs),
                dtype=torch.float64) * float(opts.seq_prior_scale)
        self.lattices, self.skipped = read_denominator_lattices(opts.seq_denlats, keys)
        for k, lat in list(self.lattices.items()):
            if lat.num_frames != lengths[k]:
                self.skipped[k] = (f"its lattice has {lat.num_frames} frames, the features "
                                   f"{lengths[k]}")
                del self.lattices[k]
        self._logged = set()
        self.dropped_frames = 0
        arcs = sum(lt.num_arcs for lt in self.lattices.values())
        frames = sum(lt.num_frames for lt in self.lattices.values())
        log.info("%s: %d denominator lattices (%.1f arcs per frame); %d utterances left out%s",
                 self.criterion, len(self.lattices), arcs / max(frames, 1), len(self.skipped),
                 "".join(f"\n  {k}: {v}" for k, v in sorted(self.skipped.items())[:10]))

    def _skip(self, key: str, why: str) -> None:
        self.skipped[key] = why
        if key not in self._logged:
            self._logged.add(key)
            log.warning("utterance %s left out of %s training: %s", key, self.criterion, why)

    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        from hybridasr.features.transform import IGNORE_INDEX
        from hybridasr.graph.lattice_forward_backward import LatticeBatch, forward_backward

        B, T, P = logits.shape
        lengths = batch.lengths.tolist()
        for i, k in enumerate(batch.keys):
            span = batch.spans[i] if batch.spans else (0, lengths[i])
            if k and (span[0] != 0 or span[1] - span[0] != lengths[i]):
                raise ConfigError(f"utterance {k}: a batch row of frames {span[0]}..{span[1]}: "
                                  f"--objective={self.criterion} needs whole utterances")
        rows = [i for i, k in enumerate(batch.keys) if k and k in self.lattices]
        for i, k in enumerate(batch.keys):
            if k and k not in self.lattices and k not in self._logged:
                self._skip(k, self.skipped.get(k, "no lattice"))
        logp = torch.log_softmax(logits if logits.dtype == torch.float64 else logits.float(),
                                 dim=-1)
        targets = batch.targets.to(logits.device)
        diff = torch.zeros_like(logp)
        reported = 0.0
        keep = []
        if rows:
            lats = [self.lattices[batch.keys[i]] for i in rows]
            lb = LatticeBatch.of(lats)
            loglike = logp.detach().double().cpu()
            if self.log_prior is not None:
                loglike = loglike - self.log_prior
            loglike = loglike.numpy()
            row_of = np.asarray(rows, dtype=np.int64)[lb.row]
            pdf = self.tid2pdf[lb.tid]
            scores = (self.acwt * loglike[row_of, lb.time, pdf] - self.lm_scale * lb.graph)
            num = targets.cpu().numpy()
            ref = num[row_of, lb.time]
            accuracy = None
            if self.criterion == "smbr":
                if self.one_silence_class:
                    accuracy = (pdf == ref) | (self.tid_is_sil[lb.tid] & self.pdf_is_sil[ref])
                else:
                    accuracy = (pdf == ref) & ~self.tid_is_sil[lb.tid]
            r = forward_backward(lb, scores, accuracy)
            flat = (row_of * T + lb.time) * P + pdf
            for j, i in enumerate(rows):
                if not np.isfinite(r.logz[j]):
                    self._skip(batch.keys[i], "no path of its lattice reaches a final state")
                else:
                    keep.append((j, i))
            good = np.zeros(B, dtype=bool)
            good[[i for _, i in keep]] = True
            use = good[row_of]
            if self.criterion == "smbr":
                d = -np.bincount(flat[use], weights=r.smbr_posterior[use], minlength=B * T * P)
                reported = sum(lengths[i] - r.expected_accuracy[j] for j, i in keep)
                diff = torch.as_tensor(d.reshape(B, T, P), dtype=logp.dtype,
                                       device=logp.device)
            else:
                den = np.bincount(flat[use], weights=r.posterior[use], minlength=B * T * P)
                den = den.reshape(B, T, P)
                d = den.copy()
                for j, i in keep:
                    n = lengths[i]
                    ali = num[i, :n]
                    d[i, np.arange(n), ali] -= 1.0
                    if self.drop_frames:
                        drop = den[i, np.arange(n), ali] < 1e-20
                        d[i, :n][drop] = 0.0
                        self.dropped_frames += int(drop.sum())
                    reported -= (self.acwt * float(loglike[i, np.arange(n), ali].sum())
                                 - float(r.logz[j]))
                diff = torch.as_tensor(d, dtype=logp.dtype, device=logp.device)
        used = torch.zeros(B, dtype=torch.bool, device=logp.device)
        used[[i for _, i in keep]] = True
        t = torch.arange(T, device=logp.device).unsqueeze(0)
        real = (t < batch.lengths.to(logp.device).unsqueeze(1)) & used.unsqueeze(1)
        if self.smoothing > 0:
            onehot = torch.zeros_like(logp)
            safe = torch.where(targets == IGNORE_INDEX, torch.zeros_like(targets), targets)
            onehot.scatter_(-1, safe.unsqueeze(-1), 1.0)
            diff = (1 - self.smoothing) * diff - self.smoothing * onehot * real.unsqueeze(-1)
        loss = (diff * logp).sum()
        frames = int(batch.lengths[used.cpu()].sum())
        with torch.no_grad():
            errors = ((logp.argmax(-1) != targets) & real).sum()
        return (loss, torch.tensor(float(reported), dtype=torch.float64, device=logp.device),
                errors, frames)
