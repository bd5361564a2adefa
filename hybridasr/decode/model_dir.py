"""What transcribing needs from a model dir that ``steps/nnet/train.sh`` wrote, found and checked
once: the network (``final.nnet``) with its feature transform, the transition model
(``final.mdl``), the pdf counts (``ali_train_pdf.counts``), the feature settings the training
features were computed with (``conf/mfcc.conf`` or ``conf/fbank.conf``, Kaldi's online model
dirs' names), the training set's global CMVN stats (``global_cmvn.stats``) and, for a network
of a SAT GMM's fMLLR features, that GMM's dir (``fmllr_gmm``).

A model dir from before ``global_cmvn.stats`` was written there: the stats are summed from the
training data's ``cmvn.scp``, found through the model dir's own record of the training command
(the first line of ``train.conf``, else of ``log/train.log``: ``train.py ... <data-tr> <data-cv>
<ali-tr> <ali-cv> <exp-dir>``, relative to the dir that command ran in, which the exp-dir
argument locates); without them, CMVN is per utterance, with a note.
"""
from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.features.options import FeatureOptions
from hybridasr.features.online_cmvn import global_cmvn_stats, read_stats
from hybridasr.kaldi.conf import read_config_file
from hybridasr.options import from_values

log = logging.getLogger(__name__)

FEATURE_KINDS = ("mfcc", "fbank")
CMVN_MODES = ("auto", "online", "utterance", "none")


@dataclass
class ModelDir:
    path: str
    nnet: str
    mdl: str
    counts: Optional[str]
    features: FeatureOptions
    feature_conf: str
    cmvn: str                      # online | utterance | none: what transcribing does
    global_stats: Optional[np.ndarray]
    cmvn_source: str               # where the global stats came from (or why there are none)
    fmllr_gmm: Optional[str] = None  # trained on this GMM dir's fMLLR features (fmllr_gmm)


def read_feature_conf(path: str, kind: str = "") -> FeatureOptions:
    """The options of a Kaldi feature conf (``--sample-frequency=16000`` ...): ``kind`` mfcc or
    fbank, or (empty) from the file name (``mfcc.conf``, ``fbank_hires.conf``)."""
    if not kind:
        name = os.path.basename(path)
        kinds = [k for k in FEATURE_KINDS if k in name]
        if len(kinds) != 1:
            raise ConfigError(f"{path}: cannot tell the feature type from the file name: give "
                              f"--feat-type ({'|'.join(FEATURE_KINDS)})")
        kind = kinds[0]
    values = {}
    for e in read_config_file(path):
        values[e.name.replace("-", "_")] = "true" if e.value is None else e.value
    try:
        return FeatureOptions.kaldi_defaults(kind, **values)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def training_command_dirs(model_dir: str):
    """(data-tr, base dir) from the model dir's record of its train.py command, or None."""
    for rec in (os.path.join(model_dir, "train.conf"), os.path.join(model_dir, "log", "train.log")):
        if not os.path.isfile(rec):
            continue
        with open(rec, encoding="utf-8", errors="replace") as f:
            first = f.readline()
        line = first.lstrip("#").strip()
        if line.startswith("resolved configuration of:"):
            line = line.split(":", 1)[1]
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        args = [w for w in words if not w.startswith("--")]
        if len(args) < 6 or not os.path.basename(args[0]).startswith("train.py"):
            continue
        data_tr, exp_arg = args[-5], args[-1]
        if os.path.isabs(data_tr):
            return data_tr, os.path.dirname(data_tr)
        # the dir the command ran in: model_dir with exp_arg's trailing parts taken off
        base = os.path.abspath(model_dir)
        parts = [p for p in os.path.normpath(exp_arg).split(os.sep) if p not in ("", ".")]
        for p in reversed(parts):
            if os.path.basename(base) != p:
                break
            base = os.path.dirname(base)
        else:
            return os.path.join(base, data_tr), base
    return None


def _stats_from_training_data(model_dir: str):
    found = training_command_dirs(model_dir)
    if found is None:
        return None, f"{model_dir} has no global_cmvn.stats and no record of its training data"
    data_tr, base = found
    scp = os.path.join(data_tr, "cmvn.scp")
    if not os.path.isfile(scp):
        return None, f"{model_dir} has no global_cmvn.stats and its training data has no {scp}"
    # cmvn.scp paths are relative to the dir training ran in (Kaldi's s5)
    try:
        return global_cmvn_stats(f"scp:{scp}", base), f"summed from {scp}"
    except FormatError as e:
        return None, f"cannot sum the training data's CMVN stats: {e}"


def find_feature_conf(model_dir: str) -> str:
    found = [os.path.join(model_dir, "conf", f"{k}.conf") for k in FEATURE_KINDS
             if os.path.isfile(os.path.join(model_dir, "conf", f"{k}.conf"))]
    if len(found) != 1:
        raise ConfigError(f"{model_dir} has {'no' if not found else 'more than one'} feature "
                          f"conf (conf/mfcc.conf or conf/fbank.conf): give --feat-config, the "
                          f"conf the training features were computed with (e.g. "
                          f"data/mfcc.conf of the recipe)")
    return found[0]


def load_model_dir(path: str, feat_config: str = "", feat_type: str = "",
                   cmvn: str = "auto", norm_means: bool = True) -> ModelDir:
    """The model dir's files, checked; ``cmvn``: auto (online CMVN from the global stats where
    there are any, else per utterance with a note), online (the stats are required),
    utterance, none. ``norm_means``: whether the network's transform normalises at all."""
    if not os.path.isdir(path):
        raise FormatError(f"no such model dir: {path}")
    if cmvn not in CMVN_MODES:
        raise ConfigError(f"--cmvn={cmvn}: expected one of {', '.join(CMVN_MODES)}")
    nnet, mdl = os.path.join(path, "final.nnet"), os.path.join(path, "final.mdl")
    for f in (nnet, mdl):
        if not os.path.isfile(f):
            raise FormatError(f"model dir {path} has no {os.path.basename(f)} ({f})")
    counts = os.path.join(path, "ali_train_pdf.counts")
    conf = feat_config or find_feature_conf(path)
    features = read_feature_conf(conf, feat_type)
    stats, source = None, "not used"
    if not norm_means or cmvn == "none":
        cmvn = "none"
    elif cmvn in ("auto", "online"):
        stats_file = os.path.join(path, "global_cmvn.stats")
        if os.path.isfile(stats_file):
            stats, source = read_stats(stats_file), stats_file
        else:
            stats, source = _stats_from_training_data(path)
        if stats is None:
            if cmvn == "online":
                raise FormatError(f"--cmvn=online: {source}")
            log.warning("note: %s: CMVN per recording (each recording's own means)", source)
            cmvn = "utterance"
        else:
            cmvn = "online"
    return ModelDir(path, nnet, mdl, counts if os.path.isfile(counts) else None, features,
                    conf, cmvn, stats, source, read_fmllr_gmm(path))


def read_fmllr_gmm(path: str) -> Optional[str]:
    """The GMM dir named by ``<path>/fmllr_gmm`` (a network trained on that SAT GMM's fMLLR
    features: ``steps/nnet/train.sh`` copies the recipe's record), or None."""
    rec = os.path.join(path, "fmllr_gmm")
    if not os.path.isfile(rec):
        return None
    with open(rec, encoding="utf-8") as f:
        gmm = f.read().strip()
    if not gmm:
        raise FormatError(f"{rec} is empty (it names the GMM dir of the fMLLR features)")
    return gmm
