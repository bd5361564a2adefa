"""A trained MLP and its feature transform as a Kaldi nnet1 model directory.

Which step of our ``FeatureTransform`` (``hybridasr.features.transform``) becomes which Kaldi
step when Kaldi's ``steps/nnet/decode.sh`` (``nnet-forward``) runs the exported model:

=====================================  =====================================================
ours                                   Kaldi nnet1
=====================================  =====================================================
per-speaker CMVN (``norm_means``,      ``apply-cmvn $(cat cmvn_opts) --utt2spk=... cmvn.scp``
``norm_vars``, from ``cmvn.scp``)      (``cmvn_opts`` written only when CMVN is on)
deltas (``delta_order``,               ``add-deltas $(cat delta_opts)`` (``delta_opts``
``delta_window``)                      written only when deltas are on)
global normalisation (``global_norm``) ``<AddShift>`` (minus the mean) and ``<Rescale>``
                                       (1 / std) in ``final.feature_transform``, after the
                                       splice, on each spliced frame (the statistics tiled)
splicing (``splice``)                  ``<Splice> [ -s .. s ]`` in ``final.feature_transform``
label delay (``label_delay`` d)        the splice offsets moved by d (``[ d-s .. d+s ]``):
                                       output t is then the network's output for frame t,
                                       as our decoder's time shift makes it (exact for an MLP
                                       without deltas; with deltas it is refused)
the network                            ``final.nnet``: ``<AffineTransform>`` + activation per
                                       hidden layer, ``<AffineTransform>``, ``<Softmax>``
priors (``--class-frame-counts``)      ``nnet-forward --class-frame-counts=
                                       ali_train_pdf.counts`` (same file, same prior floor)
=====================================  =====================================================

Activations: sigmoid is ``<Sigmoid>``; relu is ``<ParametricRelu>`` with alpha 1, beta 0
(a component of Kaldi's nnet1 since June 2016; older builds cannot read it). Dropout is left
out (``nnet-forward`` disables it). ``nnet-forward --no-softmax`` (decode.sh's default)
subtracts the priors from the pre-softmax outputs where we use the log-softmax: one constant
per frame apart, so the lattices are the same.

Cannot be exported (``ConfigError`` names why): BLSTM and LSTM models (nnet1's
``<LstmProjected>``/``<BlstmProjected>`` always have a projection, peephole weights and a
clipped cell, so a ``torch.nn.LSTM`` is not one of them exactly), ``subsample`` > 1 (nnet1
emits one output per input frame), ``stack_frames`` > 1 (a splice of the stacked frames
replicates the last frames differently at the end of an utterance).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch

from hybridasr.errors import ConfigError
from hybridasr.kaldi import nnet1

NNET = "final.nnet"
FEATURE_TRANSFORM = "final.feature_transform"
CMVN_OPTS = "cmvn_opts"
DELTA_OPTS = "delta_opts"
COPIED = ("final.mdl", "ali_train_pdf.counts")  # what Kaldi's decode.sh takes from <srcdir>


def network_components(model: torch.nn.Module) -> List[nnet1.Component]:
    """The nnet1 components of an ``Mlp`` (its softmax last); ConfigError for any other
    model or a layer nnet1 has no exact component for."""
    from hybridasr.models.mlp import Mlp

    model = getattr(model, "module", model)
    if not isinstance(model, Mlp):
        raise ConfigError(
            f"cannot export a {type(model).__name__} to Kaldi nnet1: only --model=mlp can "
            f"leave PyTorch (nnet1's <LstmProjected>/<BlstmProjected> always have a "
            f"projection, peepholes and a clipped cell, so a torch LSTM does not map onto them "
            f"exactly)")
    out: List[nnet1.Component] = []
    for layer in list(model.hidden) + [model.output]:
        if isinstance(layer, torch.nn.Linear):
            out.append(nnet1.affine_transform(_np(layer.weight), _np(layer.bias)))
        elif isinstance(layer, torch.nn.Sigmoid):
            out.append(nnet1.sigmoid(out[-1].output_dim))
        elif isinstance(layer, torch.nn.Tanh):
            out.append(nnet1.tanh(out[-1].output_dim))
        elif isinstance(layer, torch.nn.ReLU):
            d = out[-1].output_dim
            out.append(nnet1.parametric_relu(np.ones(d), np.zeros(d)))
        elif isinstance(layer, torch.nn.Dropout):
            continue  # identity at test time; nnet-forward disables dropout anyway
        else:
            raise ConfigError(f"cannot export the MLP's {type(layer).__name__} layer: Kaldi "
                              f"nnet1 has no component that computes it exactly")
    out.append(nnet1.softmax(out[-1].output_dim))
    return out


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def check_transform(transform) -> None:
    """ConfigError when a ``FeatureTransform`` has a step nnet1's decoding cannot repeat."""
    if transform.subsample > 1:
        raise ConfigError(f"cannot export a model trained with --subsample={transform.subsample}: "
                          f"nnet1's nnet-forward emits one output per input frame")
    if transform.stack_frames > 1:
        raise ConfigError(f"cannot export a model trained with --stack-frames="
                          f"{transform.stack_frames}: no nnet1 feature transform stacks frames "
                          f"as ours does at the end of an utterance")
    if transform.label_delay and transform.delta_order:
        raise ConfigError(f"cannot export a model trained with --label-delay="
                          f"{transform.label_delay} and --delta-order={transform.delta_order}: "
                          f"our decoding computes the deltas of the frames it appends to undo "
                          f"the delay, which add-deltas and <Splice> cannot repeat")
    if transform.global_norm and transform.global_mean is None:
        raise ConfigError("the model's feature transform has --global-norm but no statistics")


def feature_transform_components(transform, network_input_dim: int) -> List[nnet1.Component]:
    """``<Splice>`` (the label delay folded into its offsets), then ``<AddShift>`` and
    ``<Rescale>`` for the global normalisation, for a network of input dim
    ``network_input_dim``."""
    check_transform(transform)
    width = 2 * transform.splice + 1
    if network_input_dim % width:
        raise ConfigError(f"network input dim {network_input_dim} is not a multiple of the "
                          f"{width} spliced frames of its feature transform")
    dim = network_input_dim // width  # after deltas
    d, s = transform.label_delay, transform.splice
    comps = [nnet1.splice(dim, range(d - s, d + s + 1))]
    if transform.global_norm:
        mean = np.asarray(transform.global_mean, np.float64)
        std = np.asarray(transform.global_std, np.float64)
        if mean.shape != (dim,) or std.shape != (dim,):
            raise ConfigError(f"global normalisation statistics have dim {mean.shape[0]}, the "
                              f"features {dim}")
        comps.append(nnet1.add_shift(np.tile(-mean, width)))
        comps.append(nnet1.rescale(np.tile(1.0 / std, width)))
    return comps


def kaldi_feature_opts(transform) -> Dict[str, Optional[str]]:
    """The contents of nnet1's ``cmvn_opts`` and ``delta_opts`` files (None: no such step, no
    file; Kaldi's decode.sh then leaves the step out)."""
    cmvn = None
    if transform.norm_means:
        cmvn = (f"--norm-means=true --norm-vars={'true' if transform.norm_vars else 'false'}")
    deltas = None
    if transform.delta_order:
        deltas = f"--delta-order={transform.delta_order} --delta-window={transform.delta_window}"
    return {CMVN_OPTS: cmvn, DELTA_OPTS: deltas}


@dataclass
class Export:
    """What ``export_nnet1`` wrote."""

    out_dir: str
    files: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)  # stale cmvn_opts/delta_opts
    missing: List[str] = field(default_factory=list)  # of COPIED, not beside the model

    def nnet_forward_command(self, data_dir: str = "data/test") -> str:
        """The Kaldi pipeline that decodes with the export (as steps/nnet/decode.sh runs it)."""
        d = self.out_dir
        feats = f"copy-feats scp:{data_dir}/feats.scp ark:- |"
        opts = {}
        for name in (CMVN_OPTS, DELTA_OPTS):
            p = os.path.join(d, name)
            if p in self.files:
                with open(p, encoding="utf-8") as f:
                    opts[name] = f.read().strip()
        if CMVN_OPTS in opts:
            feats += (f" apply-cmvn {opts[CMVN_OPTS]} --utt2spk=ark:{data_dir}/utt2spk "
                      f"scp:{data_dir}/cmvn.scp ark:- ark:- |")
        if DELTA_OPTS in opts:
            feats += f" add-deltas {opts[DELTA_OPTS]} ark:- ark:- |"
        return (f"nnet-forward --no-softmax=true --prior-scale=1.0 --feature-transform="
                f"{d}/{FEATURE_TRANSFORM} --class-frame-counts={d}/ali_train_pdf.counts "
                f"{d}/{NNET} \"ark,s,cs:{feats}\" ark:loglikes.ark")


def export_nnet1(model_path: str, out_dir: str, srcdir: Optional[str] = None) -> Export:
    """Writes ``<out_dir>/final.nnet`` (the network), ``final.feature_transform``,
    ``cmvn_opts`` and ``delta_opts`` (where the steps are used) and copies ``final.mdl`` and
    ``ali_train_pdf.counts`` from ``srcdir`` (default: the model's directory): a Kaldi nnet1
    model directory that Kaldi's ``steps/nnet/decode.sh --srcdir <out_dir>`` decodes with.

    ``out_dir`` must not be the training directory: its ``final.nnet`` is the PyTorch model,
    and a ``final.nnet`` that is not nnet1 text is never overwritten."""
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.models.io import load_model

    model, meta = load_model(model_path, "cpu")
    if "transform" not in meta:
        raise ConfigError(f"{model_path}: the model stores no feature transform")
    transform = FeatureTransform.from_dict(meta["transform"])
    network = network_components(model)
    feature_transform = feature_transform_components(transform, network[0].input_dim)
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, NNET)
    if os.path.lexists(target) and not _is_nnet1_text(target):
        raise ConfigError(f"{target} exists and is not a Kaldi nnet1 text file (the PyTorch "
                          f"model of a training directory?): export into another directory")
    ex = Export(out_dir)
    nnet1.write_nnet(os.path.join(out_dir, FEATURE_TRANSFORM), feature_transform)
    ex.files.append(os.path.join(out_dir, FEATURE_TRANSFORM))
    for name, text in kaldi_feature_opts(transform).items():
        path = os.path.join(out_dir, name)
        if text is None:
            if os.path.lexists(path):
                os.unlink(path)
                ex.removed.append(path)
            continue
        from hybridasr.utils.atomic import atomic_open

        with atomic_open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        ex.files.append(path)
    src = srcdir if srcdir is not None else os.path.dirname(os.path.abspath(model_path))
    for name in COPIED:
        have = os.path.join(src, name)
        if not os.path.isfile(have):
            ex.missing.append(have)
        elif os.path.abspath(have) != os.path.abspath(os.path.join(out_dir, name)):
            _copy(have, os.path.join(out_dir, name))
            ex.files.append(os.path.join(out_dir, name))
    # the network last: its presence says the directory is complete
    nnet1.write_nnet(target, network)
    ex.files.append(target)
    return ex


def _is_nnet1_text(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(6) == b"<Nnet>"
    except OSError:
        return False


def _copy(src: str, dst: str) -> None:
    from hybridasr.utils.atomic import atomic_path

    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)
