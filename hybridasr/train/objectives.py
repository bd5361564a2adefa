"""What the network is trained to minimise (``--objective``), one home for the choice:
frame cross-entropy against the imported alignment (``ce``, the loop's own), full-sum over
each utterance's training graph (``fullsum``, ``hybridasr.train.fullsum``), or
sequence-discriminative criteria on denominator lattices (``smbr``, ``mmi``,
``hybridasr.train.sequence``), or CTC over sentencepiece units (``ctc``,
``hybridasr.train.ctc``: no frame targets; ``<ali-tr>``/``<ali-cv>`` are units dirs, and the
trainer builds its data with ``setup_ctc_data``). Every objective but ``ce`` needs whole
utterances in a batch:
``check_objective`` refuses the batching that cuts them, at start, naming the option."""
from __future__ import annotations

import os
from dataclasses import dataclass

from hybridasr.errors import ConfigError
from hybridasr.options import option
from hybridasr.train.fullsum import FullSumOptions, check_fullsum_options
from hybridasr.train.sequence import SEQUENCE_OBJECTIVES, SequenceOptions, check_sequence_options

OBJECTIVES = ("ce", "fullsum") + SEQUENCE_OBJECTIVES + ("ctc",)


@dataclass
class ObjectiveOptions(FullSumOptions, SequenceOptions):
    """What the network is trained to minimise."""
    objective: str = option("ce", "ce: frame cross-entropy against the imported alignment | "
                                  "fullsum: -log of the sum over all paths of each utterance's "
                                  "training graph (Baum-Welch; needs --fullsum-model-dir and "
                                  "--fullsum-lang; the imported targets then only give the "
                                  "utterances and their frame counts) | smbr | mmi: sequence "
                                  "training on denominator lattices (--seq-denlats) against "
                                  "the imported alignment (the numerator), usually from a CE "
                                  "network (--init-model); steps/nnet/train_mpe.sh | ctc: "
                                  "CTC over the sentencepiece units of a units dir "
                                  "(steps/nnet/train_units.sh), blank 0: <ali-tr> and "
                                  "<ali-cv> are units dirs, no alignment; the loss is per "
                                  "output frame, --subsample speeds it up; "
                                  "steps/nnet/train_ctc.sh",
                            choices=OBJECTIVES)
    label_smoothing: float = option(0.0, "--objective=ce: the training loss puts this much "
                                         "of each frame's target evenly on all pdfs (0: none); "
                                         "the reported and cv losses stay plain "
                                         "cross-entropy", minimum=0.0)


def check_objective(opts: ObjectiveOptions, strategy, chunked: bool) -> None:
    """ConfigError at start when the objective cannot be trained with these batches."""
    if not opts.label_smoothing < 1:
        raise ConfigError(f"--label-smoothing={opts.label_smoothing}: below 1 (0.1 is usual)")
    if opts.label_smoothing > 0 and opts.objective != "ce":
        raise ConfigError(f"--label-smoothing is for --objective=ce, not "
                          f"--objective={opts.objective}")
    if opts.objective == "ce":
        return
    if opts.objective == "fullsum":
        check_fullsum_options(opts)
        what = "sums over the paths of whole utterances"
    elif opts.objective == "ctc":
        what = "sums over the CTC paths of whole utterances"
    else:
        check_sequence_options(opts)
        what = "rescores each utterance's whole lattice"
    if strategy.splits_utterances or strategy.per_frame or chunked:
        raise ConfigError(f"--objective={opts.objective} {what}; "
                          f"{strategy.describe()}{' with --chunking' if chunked else ''} cuts "
                          f"them: use a strategy that batches whole utterances (e.g. "
                          f"--seq-ordering=laplace:4) and no --chunking")


def make_objective(opts: ObjectiveOptions, train_set, cv_set, data_tr: str, data_cv: str,
                   num_pdfs: int):
    """None for cross-entropy (without label smoothing), else the objective callable of ``hybridasr.train.loop``
    over the utterances of the training and cross-validation ``UtteranceDataset``s."""
    if opts.objective == "ce":
        if opts.label_smoothing > 0:
            from hybridasr.train.label_smoothing import SmoothedCrossEntropy

            return SmoothedCrossEntropy(opts.label_smoothing)
        return None
    if opts.objective == "ctc":
        raise ConfigError("--objective=ctc: its data and objective come from "
                          "hybridasr.train.ctc.setup_ctc_data (units dirs, not alignments)")
    if opts.objective == "fullsum":
        from hybridasr.train.fullsum import FullSumObjective

        return FullSumObjective(opts, [(train_set, os.path.join(data_tr, "text")),
                                       (cv_set, os.path.join(data_cv, "text"))], num_pdfs)
    from hybridasr.train.sequence import SequenceObjective

    keys = list(train_set.keys) + [k for k in cv_set.keys if k not in set(train_set.keys)]
    lengths = dict(cv_set.lengths)
    lengths.update(train_set.lengths)
    return SequenceObjective(opts, keys, lengths, num_pdfs)
