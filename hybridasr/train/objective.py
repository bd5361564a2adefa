"""The one interface every training objective implements (``--objective``).

An objective is one module: an ``Objective`` subclass, registered by one line in
``hybridasr.train.objectives`` (``OBJECTIVES.add("ctc", CtcObjective, summary=...)``), that
declares

- its options: ``Options``, a dataclass of ``hybridasr.options.option`` fields (named after
  it: ``--fullsum-*``, ``--seq-*``); ``check_options`` checks their values whether it is
  chosen or not, ``check_chosen`` what it needs when it is (``--fullsum-lang``), and
  ``check_not_chosen`` refuses its own options given to another objective;
- what it trains on: ``read_data`` gives the number of network outputs and the training and
  cross-validation sets (``UtteranceDataset``) with what a batch then carries; by default the
  frame targets of an imported alignment dir (``<ali-tr>``, ``<ali-cv>``); ``ctc`` reads units
  dirs instead (no frame targets: a batch has the utterance keys whose unit sequences the
  objective holds). ``build`` then makes the objective from its options and that data (the
  training graphs of ``fullsum``, the denominator lattices of ``smbr``/``mmi``);
- whether it needs whole utterances in a batch (``whole_utterances``: what it does with them;
  ``check_batches`` then refuses, at start, the batching that cuts them);
- what it asks of the model: ``model_kwargs(model)``, keyword arguments of the model's
  forward (``lfmmi``: ``return_xent``, the second output of a chain model); none by default;
- its loss: ``__call__(logits [B, T, P], batch)`` (the model's output as it returns it)
  returns (loss to differentiate, summed;
  the loss reported and steered by, summed, detached; errors; frames the two are divided by):
  ``hybridasr.train.loop.run_epoch`` adds them up and never looks inside;
- its cross-validation figure: ``errors`` per frame is reported as ``cv_fer`` and logged
  under ``errors_are`` (frame errors against the alignment for the frame objectives, the
  greedy units' edit errors per output frame for ``ctc``).

The trainer and the epoch loop only call these; no objective is special-cased there.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Tuple

import torch

from hybridasr.errors import ConfigError, FormatError
from hybridasr.registry import NoOptions


@dataclass
class TrainingData:
    """What an objective trains on: the network's output count, the training and
    cross-validation sets, and what it read beside them for ``build`` (``extra``)."""
    num_outputs: int
    train: Any
    cv: Any
    extra: Any = None


class Objective(ABC):
    """A training criterion (see the module's docstring)."""

    Options: ClassVar[type] = NoOptions
    whole_utterances: ClassVar[str] = ""  # what it does with whole utterances ("": frames)
    errors_are: ClassVar[str] = "frame error rate"  # what its error figure is, for the log

    # --- declarations (the options are the flat ObjectiveOptions of train.py) ------------
    @classmethod
    def check_options(cls, opts) -> None:
        """ConfigError when its own options have bad values, chosen or not."""

    @classmethod
    def check_chosen(cls, opts) -> None:
        """ConfigError when it is chosen without what it needs."""

    @classmethod
    def check_not_chosen(cls, opts, chosen: str) -> None:
        """ConfigError when an option only it reads is set for objective ``chosen``."""

    @classmethod
    def check_batches(cls, name: str, strategy, chunked: bool) -> None:
        """ConfigError at start when objective ``name`` cannot be trained on these batches."""
        if cls.whole_utterances and (strategy.splits_utterances or strategy.per_frame or
                                     chunked):
            raise ConfigError(f"--objective={name} {cls.whole_utterances}; "
                              f"{strategy.describe()}{' with --chunking' if chunked else ''} "
                              f"cuts them: use a strategy that batches whole utterances (e.g. "
                              f"--seq-ordering=laplace:4) and no --chunking")

    # --- what it trains on --------------------------------------------------------------
    @classmethod
    def read_data(cls, opts, inputs, transform, use_cmvn: bool,
                  report_dir: str = "") -> TrainingData:
        """The datasets over an imported alignment's frame targets (``inputs.ali_tr``,
        ``inputs.ali_cv``: ``steps/import_ali.sh``); the targets are checked against the
        number of pdfs as they are read. ``report_dir``: where an objective may write what it
        counted (the main process's exp dir; empty on the others)."""
        from hybridasr.align.ali_dir import ImportedAlignments
        from hybridasr.data.dataset import UtteranceDataset

        ali_tr, ali_cv = ImportedAlignments(inputs.ali_tr), ImportedAlignments(inputs.ali_cv)
        num_pdfs = ali_tr.num_pdfs
        if inputs.ali_cv != inputs.ali_tr and ali_cv.num_pdfs != num_pdfs:
            raise FormatError(f"{inputs.ali_tr} and {inputs.ali_cv} disagree on the number "
                              f"of pdfs")
        tr = UtteranceDataset.from_data_dir(inputs.data_tr, ali_tr.targets_scp, transform,
                                            use_cmvn, ali_tr.target_lengths, num_pdfs)
        cv = UtteranceDataset.from_data_dir(inputs.data_cv, ali_cv.targets_scp, transform,
                                            use_cmvn, ali_cv.target_lengths, num_pdfs)
        return TrainingData(num_pdfs, tr, cv)

    @classmethod
    @abstractmethod
    def build(cls, opts, data: TrainingData, inputs) -> "Objective":
        """The objective of ``opts`` over ``data`` (its sets after the feature statistics are
        fitted); ``inputs``: the data and alignment dirs of the run."""

    # --- the loss -----------------------------------------------------------------------
    def model_kwargs(self, model) -> dict:
        """Keyword arguments the loop passes to the model's forward besides the features and
        lengths (e.g. ``{"return_xent": True}``); ``__call__`` then gets the model's output as
        the model returns it. ``model``: the network (unwrapped from DDP). A model that
        outputs every n-th frame only is an error here: only the chain objective takes it."""
        f = int(getattr(model, "frame_subsampling_factor", 1) or 1)
        if f > 1:
            raise ConfigError(f"the model outputs every {f}th frame (a chain model: "
                              f"--tdnnf-subsampling-factor, --blstm-subsampling-factor): train "
                              f"it with --objective=lfmmi")
        return {}

    def model_inputs(self, feats: torch.Tensor, batch, training: bool) -> torch.Tensor:
        """The features the loop gives the model for ``batch`` ([B, T, D], on the device):
        ``feats`` as they are; an objective may augment them in training (the chain
        objective's frame shift)."""
        return feats

    @abstractmethod
    def __call__(self, logits: torch.Tensor, batch) -> Tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor, int]:
        """(loss to differentiate, reported loss (detached), errors, frames) of a batch."""
