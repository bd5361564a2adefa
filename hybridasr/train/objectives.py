"""What the network is trained to minimise (``--objective``): the objectives' registry, one
line each (``hybridasr.registry``), and the options of them all.

Each objective is one module behind one interface (``hybridasr.train.objective.Objective``):
frame cross-entropy against the imported alignment (``ce``, ``hybridasr.train.cross_entropy``),
full-sum over each utterance's training graph (``fullsum``, ``hybridasr.train.fullsum``),
sequence-discriminative criteria on denominator lattices (``smbr``, ``mmi``,
``hybridasr.train.sequence``), CTC over sentencepiece units (``ctc``, ``hybridasr.train.ctc``:
no frame targets; ``<ali-tr>``/``<ali-cv>`` are units dirs). ``check_objective`` refuses, at
start, options and batches the chosen objective cannot train with, naming the option;
``read_objective_data`` and ``make_objective`` give the trainer its data and loss.
"""
from __future__ import annotations

from dataclasses import dataclass

from hybridasr.options import option
from hybridasr.registry import Registry
from hybridasr.train.cross_entropy import CrossEntropyOptions, FrameCrossEntropy
from hybridasr.train.ctc import CtcObjective
from hybridasr.train.fullsum import FullSumObjective, FullSumOptions
from hybridasr.train.lfmmi import LfMmiObjective, LfMmiOptions
from hybridasr.train.objective import Objective, TrainingData
from hybridasr.train.sequence import SequenceObjective, SequenceOptions

OBJECTIVES = Registry("objective", "--objective")
OBJECTIVES.add("ce", FrameCrossEntropy, summary="frame cross-entropy against the imported "
                                                "alignment")
OBJECTIVES.add("fullsum", FullSumObjective, summary=(
    "-log of the sum over all paths of each utterance's training graph (Baum-Welch; needs "
    "--fullsum-model-dir and --fullsum-lang; the imported targets then only give the "
    "utterances and their frame counts)"))
_SEQUENCE = ("sequence training on denominator lattices (--seq-denlats) against the imported "
             "alignment (the numerator), usually from a CE network (--init-model); "
             "steps/nnet/train_mpe.sh")
OBJECTIVES.add("smbr", SequenceObjective, summary=_SEQUENCE)
OBJECTIVES.add("mmi", SequenceObjective, summary=_SEQUENCE)
OBJECTIVES.add("ctc", CtcObjective, summary=(
    "CTC over the sentencepiece units of a units dir (steps/nnet/train_units.sh), blank 0: "
    "<ali-tr> and <ali-cv> are units dirs, no alignment; the loss is per output frame, "
    "--subsample speeds it up; steps/nnet/train_ctc.sh"))
OBJECTIVES.add("lfmmi", LfMmiObjective, summary=(
    "lattice-free MMI (chain) of a subsampling chain model (TDNN-F) against --lfmmi-den-fst, "
    "numerators from <ali-tr>/<ali-cv> alignment dirs, xent regularisation"))
# a new objective: its module and one line here, e.g. OBJECTIVES.add("chain", ChainObjective,
# summary="...") (and its Options among the bases of ObjectiveOptions below)


@dataclass
class ObjectiveChoice:
    objective: str = option("ce", OBJECTIVES.choice_help(), choices=tuple(OBJECTIVES))


@dataclass
class ObjectiveOptions(CrossEntropyOptions, ObjectiveChoice, FullSumOptions, SequenceOptions,
                       LfMmiOptions):
    """What the network is trained to minimise: ``--objective`` and every objective's
    options (each registered objective's ``Options`` is a base; the fields run from the last
    base to the first, the order of ``--help``)."""


def objective_class(name: str) -> type:
    """The ``Objective`` class of ``--objective=name``."""
    return OBJECTIVES.entry(name).build


def check_objective(opts: ObjectiveOptions, strategy, chunked: bool) -> None:
    """ConfigError at start when the objective's options are bad or it cannot be trained
    with these batches."""
    classes = list(dict.fromkeys(OBJECTIVES[n] for n in OBJECTIVES))  # each class once
    for cls in classes:
        cls.check_options(opts)
    chosen = objective_class(opts.objective)
    for cls in classes:
        if cls is not chosen:
            cls.check_not_chosen(opts, opts.objective)
    chosen.check_chosen(opts)
    chosen.check_batches(opts.objective, strategy, chunked)


def read_objective_data(opts: ObjectiveOptions, inputs, transform, use_cmvn: bool,
                        report_dir: str = "") -> TrainingData:
    """The output count and the training and cross-validation sets of the objective."""
    return objective_class(opts.objective).read_data(opts, inputs, transform, use_cmvn,
                                                     report_dir)


def make_objective(opts: ObjectiveOptions, data: TrainingData, inputs) -> Objective:
    """The objective callable of ``hybridasr.train.loop.run_epoch`` over ``data``."""
    return objective_class(opts.objective).build(opts, data, inputs)


def default_objective() -> Objective:
    """The default ``--objective`` with its default options (it needs no data: frame
    cross-entropy), for ``run_epoch`` called without one."""
    opts = ObjectiveOptions()
    return objective_class(opts.objective).build(opts, None, None)
