"""A trained model dir as one TorchScript file that torch alone runs (``torch.jit.load``):
features in, the log-likelihoods decoding uses out, with what decoding needs beside it.

The module maps a recording's features [T, D] float32, *after CMVN*, to log-likelihoods:

- a frame model: the feature transform the network was trained with (deltas, global
  normalisation, splicing, frame stacking, subsampling, the label delay's copies of the last
  frame), the network, log-softmax, minus ``prior_scale`` times the log-priors of the pdf
  counts, the label delay undone and subsampled outputs repeated: [T, num_pdfs], one row per
  input frame (what ``forward.py`` writes and ``transcribe.py`` decodes);
- a chain model (trained with ``--objective=lfmmi``): the transform and the network, the
  outputs as they are (no log-softmax, no priors), one row per output frame:
  [ceil(T / frame_subsampling_factor), num_pdfs] (``forward.py``'s chain outputs).

CMVN stays outside: online CMVN (Kaldi's ``OnlineCmvn``) carries running statistics from
frame to frame of a recording, and the per-utterance or per-speaker kinds need statistics of
more than the frames at hand, so whoever calls the module applies it, as the transcriber does
(``hybridasr.features.online_cmvn``). The file carries the training set's global CMVN stats
and the setting (``norm_vars``) for that.

The network is traced (``torch.jit.trace``, one utterance of ``trace_frames`` frames; every
model runs the same operations at any length, which ``export_model`` checks on two other
lengths against the PyTorch model); the transform and the output arithmetic around it are
scripted, so their shapes follow the input's. Beside the code, ``extra_files``:

- ``hybridasr_export.json``: ``format``, ``num_pdfs``, ``feature_dim`` (the module's input),
  ``input_dim`` (the network's), ``chain``, ``frame_subsampling_factor``, ``output_rate``
  (``input`` or ``model`` frames), ``prior_scale`` (null without counts), ``feature_type`` and
  ``feature_options`` (every option of the training features, to compute features alike),
  ``feature_conf`` (its text), ``cmvn`` (``norm_means``, ``norm_vars``, ``global_stats``: the
  2 x (dim+1) matrix, or null), ``transform`` (the stored transform), ``model_config``,
  ``source`` (the model dir);
- ``final.mdl``: the transition model, byte for byte (the decoder's pdf map); with a graph
  dir the file decodes on its own.
"""

import contextlib
import json
import logging
import os
import tempfile
import warnings
from dataclasses import asdict
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from hybridasr.errors import ConfigError, FormatError

log = logging.getLogger(__name__)

EXPORT_FORMAT = "hybridasr-exported-1"
META_FILE = "hybridasr_export.json"
MDL_FILE = "final.mdl"
EXTRA_FILES = (META_FILE, MDL_FILE)


class ExportCheckError(FormatError):
    """The traced module does not reproduce the PyTorch model."""


class _Logits(nn.Module):
    """The network on one utterance [1, T, D], its first output (the chain one) [1, T', P]."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.net(x)
        return y[0] if isinstance(y, (tuple, list)) else y


class ExportedAcousticModel(nn.Module):
    """Features after CMVN [T, feature_dim] -> log-likelihoods (see the module's doc). Written
    for ``torch.jit.script``; ``net`` is the traced ``_Logits``."""

    delta_scales: List[torch.Tensor]  # the filters of the delta orders (none: no deltas)

    def __init__(self, net: nn.Module, transform, feature_dim: int, num_pdfs: int,
                 scaled_log_priors: Optional[np.ndarray], chain: bool):
        super().__init__()
        from hybridasr.features.context import _delta_scales

        self.net = net
        self.feature_dim = int(feature_dim)
        self.num_pdfs = int(num_pdfs)
        self.chain = bool(chain)
        self.label_delay = int(transform.label_delay)
        self.subsample = int(transform.subsample)
        self.splice = int(transform.splice)
        self.stack_frames = int(transform.stack_frames)
        self.context = int(transform.context)
        scales = (_delta_scales(transform.delta_order, transform.delta_window)[1:]
                  if transform.delta_order else ())
        self.delta_scales: List[torch.Tensor] = [
            torch.from_numpy(np.asarray(s, np.float32)) for s in scales]
        self.global_norm = bool(transform.global_norm)
        dim = feature_dim * (transform.delta_order + 1)
        self.register_buffer("global_mean", torch.tensor(
            transform.global_mean if self.global_norm else [0.0] * dim, dtype=torch.float32))
        self.register_buffer("global_std", torch.tensor(
            transform.global_std if self.global_norm else [1.0] * dim, dtype=torch.float32))
        self.has_priors = scaled_log_priors is not None
        self.register_buffer("scaled_log_priors", torch.from_numpy(np.asarray(
            scaled_log_priors if self.has_priors else np.zeros(num_pdfs), np.float32)))

    def _transform(self, feats: torch.Tensor) -> torch.Tensor:
        """``FeatureTransform.__call__(feats, None)``: every output frame of the utterance."""
        t = feats.size(0)
        sub = self.subsample
        padded = t + self.label_delay * sub
        n_out = (t + sub - 1) // sub + self.label_delay
        hi = min(padded, (n_out - 1) * sub + 1 + self.context)
        x = feats[torch.clamp(torch.arange(hi, device=feats.device), max=t - 1)]
        if len(self.delta_scales) > 0:
            parts = [x]
            n = x.size(0)
            for s in self.delta_scales:
                half = (s.size(0) - 1) // 2
                idx = torch.clamp(torch.arange(n).unsqueeze(1) + torch.arange(-half, half + 1)
                                  .unsqueeze(0), 0, n - 1)
                parts.append(torch.einsum("tjd,j->td", x[idx], s.to(x.device)))
            x = torch.cat(parts, dim=1)
        if self.global_norm:
            x = (x - self.global_mean) / self.global_std
        n = x.size(0)
        if self.splice > 0:
            idx = torch.clamp(torch.arange(n).unsqueeze(1) + torch.arange(
                -self.splice, self.splice + 1).unsqueeze(0), 0, n - 1)
            x = x[idx.to(x.device)].reshape(n, -1)
        rows = torch.arange(0, n_out * sub, sub, device=x.device)
        if self.stack_frames > 1:
            idx = torch.clamp(rows.unsqueeze(1) + torch.arange(
                self.stack_frames, device=x.device).unsqueeze(0), max=n - 1)
            return x[idx].reshape(rows.size(0), -1)
        return x[rows]

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if feats.dim() != 2 or feats.size(1) != self.feature_dim:
            raise ValueError(f"expected features [frames, {self.feature_dim}], got shape "
                             f"{list(feats.shape)}")
        t = feats.size(0)
        if t == 0:
            return torch.zeros(0, self.num_pdfs, dtype=torch.float32, device=feats.device)
        logits = self.net(self._transform(feats.float()).unsqueeze(0))[0].float()
        if self.chain:
            return logits
        ll = torch.log_softmax(logits, dim=-1)
        if self.has_priors:
            ll = ll - self.scaled_log_priors
        ll = ll[self.label_delay:]
        if self.subsample > 1:
            ll = torch.repeat_interleave(ll, self.subsample, dim=0)[:t]
        return ll


# -- building and writing ----------------------------------------------------------------
def chain_of(model_dir: str, meta: dict, model: nn.Module) -> Tuple[bool, int]:
    """(chain, frame subsampling factor): a model trained with the lfmmi objective, or a model
    dir with a ``frame_subsampling_factor`` file (Kaldi's chain dirs), is a chain model."""
    factor_file = os.path.join(model_dir, "frame_subsampling_factor")
    chain = meta.get("objective") == "lfmmi" or os.path.isfile(factor_file)
    factor = int(getattr(model, "frame_subsampling_factor", 1))
    if os.path.isfile(factor_file):
        with open(factor_file, encoding="utf-8") as f:
            text = f.read().strip()
        if not text.isdigit() or int(text) != factor:
            raise FormatError(f"{factor_file} says {text!r}; the network "
                              f"({os.path.join(model_dir, 'final.nnet')}) subsamples by "
                              f"{factor}")
    return chain, factor


def build_exported(model_dir: str, prior_scale: float = 1.0, feat_config: str = "",
                   feat_type: str = "", prior_floor: float = 1e-10,
                   trace_frames: int = 100) -> Tuple[torch.jit.ScriptModule, Dict[str, bytes]]:
    """(scripted module, extra files) of a model dir (its final.nnet, final.mdl, pdf counts,
    feature conf and global CMVN stats), checked on two lengths against the PyTorch model."""
    from hybridasr.align.counts import load_log_priors
    from hybridasr.decode.model_dir import load_model_dir
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.models import load_model

    if not os.path.isdir(model_dir):
        raise FormatError(f"no such model dir: {model_dir}")
    nnet = os.path.join(model_dir, "final.nnet")
    if not os.path.isfile(nnet):
        raise FormatError(f"model dir {model_dir} has no final.nnet ({nnet})")
    model, meta = load_model(nnet, "cpu")
    transform = FeatureTransform.from_dict(meta["transform"])
    md = load_model_dir(model_dir, feat_config, feat_type, "auto", transform.norm_means)
    if md.fmllr_gmm is not None:
        raise ConfigError(f"{model_dir} was trained on the fMLLR features of {md.fmllr_gmm}: "
                          f"the exported module takes MFCCs after CMVN, not that GMM's "
                          f"pipeline; transcribe.py with the model dir gives new audio its "
                          f"speaker-independent features")
    num_pdfs = int(meta["num_pdfs"])
    tm = read_transition_model(md.mdl)
    if tm.num_pdfs != num_pdfs:
        raise FormatError(f"{nnet} has {num_pdfs} outputs but {md.mdl} has {tm.num_pdfs} pdfs")
    feat_dim = md.features.feature_dim
    if transform.output_dim(feat_dim) != int(meta["input_dim"]):
        raise ConfigError(f"{md.feature_conf} gives {feat_dim}-dim features, "
                          f"{transform.output_dim(feat_dim)} network inputs; {nnet} expects "
                          f"{meta['input_dim']}: not the conf the model was trained with "
                          f"(--feat-config)")
    chain, factor = chain_of(model_dir, meta, model)
    scaled = None
    if not chain and md.counts:
        scaled = np.float32(prior_scale) * load_log_priors(md.counts, num_pdfs, prior_floor)
    elif not chain:
        log.warning("note: %s has no ali_train_pdf.counts: the exported model gives "
                    "log-posteriors (no priors)", model_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # trace's deprecation and constant-shape notes
        example = torch.randn(1, transform.output_length(trace_frames), int(meta["input_dim"]),
                              generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            traced = torch.jit.trace(_Logits(model), example, check_trace=False)
        module = torch.jit.script(ExportedAcousticModel(traced, transform, feat_dim, num_pdfs,
                                                        scaled, chain))
    module.eval()
    for p in module.parameters():  # its outputs need no gradient
        p.requires_grad_(False)
    reference = PytorchLoglikes(model, transform, scaled, chain, num_pdfs)
    for frames in (trace_frames // 2 + 7, 2 * trace_frames + 1):  # other lengths than traced
        x = np.random.default_rng(frames).standard_normal((frames, feat_dim)).astype(np.float32)
        want, got = reference(x), run_exported(module, x)
        if want.shape != got.shape or not np.allclose(got, want, rtol=0, atol=1e-4):
            raise ExportCheckError(f"{nnet}: the traced model differs from the PyTorch "
                                  f"model at {frames} frames (shapes {got.shape}, "
                                  f"{want.shape}): this model cannot be exported by tracing")
    with open(md.mdl, "rb") as f:
        mdl_bytes = f.read()
    with open(md.feature_conf, encoding="utf-8") as f:
        conf_text = f.read()
    info = {
        "format": EXPORT_FORMAT, "num_pdfs": num_pdfs, "feature_dim": feat_dim,
        "input_dim": int(meta["input_dim"]), "chain": chain,
        "frame_subsampling_factor": factor, "output_rate": "model" if chain else "input",
        "prior_scale": float(prior_scale) if scaled is not None else None,
        "feature_type": md.features.kind, "feature_options": asdict(md.features),
        "feature_conf": conf_text,
        "cmvn": {"norm_means": transform.norm_means, "norm_vars": transform.norm_vars,
                 "global_stats": (md.global_stats.tolist() if md.global_stats is not None
                                  else None),
                 "global_stats_source": md.cmvn_source},
        "transform": transform.to_dict(), "model_config": meta.get("model_config"),
        "objective": meta.get("objective"), "source": os.path.abspath(model_dir)}
    return module, {META_FILE: json.dumps(info, indent=1).encode("utf-8"), MDL_FILE: mdl_bytes}


class PytorchLoglikes:
    """The PyTorch path's log-likelihoods of features after CMVN, as ``forward.py`` and the
    transcriber compute them (the reference the exported module must equal)."""

    def __init__(self, model, transform, scaled_log_priors, chain: bool, num_pdfs: int):
        self.model, self.transform, self.chain = model, transform, chain
        self.scaled, self.num_pdfs = scaled_log_priors, num_pdfs

    def __call__(self, feats: np.ndarray) -> np.ndarray:
        from hybridasr.decode.forward import model_logits, to_input_rate
        from hybridasr.decode.loglikes import scaled_loglikes

        if len(feats) == 0:
            return np.zeros((0, self.num_pdfs), np.float32)
        logits = model_logits(self.model, self.transform(feats, None), torch.device("cpu"))
        if self.chain:
            return logits.astype(np.float32, copy=False)
        # scaled_loglikes subtracts prior_scale * log_priors: here already scaled (scale 1)
        ll = scaled_loglikes(logits, self.scaled, 1.0)
        return to_input_rate(ll, self.transform, len(feats))


def save_exported(path: str, module: torch.jit.ScriptModule, extra: Dict[str, bytes]) -> None:
    """Writes the module and its extra files to ``path`` atomically."""
    from hybridasr.utils.atomic import atomic_path

    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise FormatError(f"cannot write {path}: no such directory {d}")
    with atomic_path(path) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.11: use torch.export
        torch.jit.save(module, tmp, _extra_files=extra)


# -- reading (torch and the standard library only) -----------------------------------------
def load_exported(path: str, device: str = "cpu") -> Tuple[torch.jit.ScriptModule, dict, bytes]:
    """(module in eval mode, the metadata, final.mdl's bytes) of an exported file; FormatError
    naming the file when it is not one."""
    if not os.path.isfile(path):
        raise FormatError(f"{path}: no such exported model file")
    extra = {name: "" for name in EXTRA_FILES}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.11: use torch.export
            module = torch.jit.load(path, map_location=device, _extra_files=extra)
    except Exception as e:  # not a TorchScript archive
        raise FormatError(f"{path}: not an exported model (TorchScript): "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    raw = extra[META_FILE]
    try:
        meta = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
        raise FormatError(f"{path}: a TorchScript file without hybridasr's {META_FILE} "
                          f"(format {EXPORT_FORMAT}): not written by export_model.py")
    mdl = extra[MDL_FILE]
    if not mdl:
        raise FormatError(f"{path}: holds no {MDL_FILE}")
    module.eval()
    return module, meta, mdl if isinstance(mdl, bytes) else mdl.encode("latin-1")


@torch.inference_mode()
def run_exported(module, feats: np.ndarray, device=None) -> np.ndarray:
    """The exported module (on ``device``, default the CPU) on one recording's features after
    CMVN, float32 numpy."""
    x = torch.from_numpy(np.ascontiguousarray(feats, np.float32))
    return module(x if device is None else x.to(device)).cpu().numpy()


@contextlib.contextmanager
def exported_model_dir(path: str, feat_config: str = "", feat_type: str = "",
                       cmvn: str = "auto", device="cpu"):
    """(ModelDir, module, metadata) of an exported file, for the transcriber: its final.mdl
    in a temporary dir while the ``with`` block runs, its feature options (or ``feat_config``)
    and global CMVN stats. ``cmvn`` as ``load_model_dir``'s."""
    from hybridasr.decode.model_dir import CMVN_MODES, ModelDir, read_feature_conf
    from hybridasr.features.online_cmvn import check_stats
    from hybridasr.features.options import FeatureOptions

    module, meta, mdl = load_exported(path, device)
    if cmvn not in CMVN_MODES:
        raise ConfigError(f"--cmvn={cmvn}: expected one of {', '.join(CMVN_MODES)}")
    if feat_config:
        features, conf = read_feature_conf(feat_config, feat_type), feat_config
    else:
        try:
            features = FeatureOptions.kaldi_defaults(meta["feature_type"],
                                                     **meta["feature_options"])
        except (KeyError, TypeError, ConfigError) as e:
            raise FormatError(f"{path}: bad feature options in {META_FILE}: {e}") from None
        conf = f"{path} (the feature options of {meta.get('source', 'the model dir')})"
    c = meta.get("cmvn") or {}
    stats = c.get("global_stats")
    stats = None if stats is None else check_stats(np.asarray(stats), f"{path}: global stats")
    if not c.get("norm_means", True) or cmvn == "none":
        cmvn = "none"
    elif cmvn in ("auto", "online"):
        if stats is None and cmvn == "online":
            raise FormatError(f"--cmvn=online: {path} holds no global CMVN stats")
        if stats is None:
            log.warning("note: %s holds no global CMVN stats: CMVN per recording", path)
        cmvn = "online" if stats is not None else "utterance"
    with tempfile.TemporaryDirectory(prefix="hybridasr-export-") as tmp:
        mdl_path = os.path.join(tmp, MDL_FILE)
        with open(mdl_path, "wb") as f:
            f.write(mdl)
        yield (ModelDir(path, path, mdl_path, None, features, conf, cmvn,
                        stats if cmvn == "online" else None,
                        f"{path}: {c.get('global_stats_source', '')}"), module, meta)
