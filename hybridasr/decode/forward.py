"""Running a trained acoustic model over a data dir, utterance by utterance.

Features go through the model's own feature transform (stored with the model), exactly as in
training. A recurrent model sees each utterance whole, or, when ``chunk_size`` is set (to
bound memory), in chunks of ``chunk_size`` output frames with ``chunk_overlap`` extra frames
of context on each side whose outputs are dropped. The result has one row per *input* frame,
as the decoding graph expects: the label delay is undone (the transform gives the input its
time shift, copies of the last frame, as in training; the first ``label_delay`` outputs are
dropped, as Kaldi's ``nnet-forward --time-shift`` does) and subsampled outputs are repeated.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Tuple

import numpy as np
import torch

from hybridasr.data.chunking import parse_chunking
from hybridasr.decode.loglikes import PriorOptions, scaled_loglikes
from hybridasr.errors import ConfigError, FormatError
from hybridasr.device import DeviceOptions, resolve_device
from hybridasr.options import option

log = logging.getLogger(__name__)


@dataclass
class ChunkOptions:
    chunk_size: int = 0  # 0: whole utterances
    chunk_overlap: int = 0

    def windows(self, n: int) -> Iterator[Tuple[int, int, int, int]]:
        """(lo, hi, keep_from, keep_to): run rows [lo, hi), keep [keep_from, keep_to)."""
        if self.chunk_size <= 0:
            yield 0, n, 0, n
            return
        for start in range(0, n, self.chunk_size):
            end = min(n, start + self.chunk_size)
            yield max(0, start - self.chunk_overlap), min(n, end + self.chunk_overlap), start, end


def device_for(device: str) -> torch.device:
    """``--device`` as train.py has it: cpu, cuda (fails without a GPU) or auto (cuda when
    there is one)."""
    return resolve_device(device)


@dataclass
class ForwardOptions(DeviceOptions):
    """The options every tool that forwards a model shares, spelled as train.py spells them
    (``--device`` is train.py's; ``chunk_options`` reads the chunking from parsed options)."""
    chunking: str = option("", "size:step, as train.py's: forward windows of size frames "
                               "every step frames; each keeps its middle step outputs, the "
                               "(size-step)/2 frames either side are context (empty: whole "
                               "utterances)")


@dataclass
class OutputRateOptions:
    """forward.py's frame rate of what it writes."""
    output_rate: str = option("input", "input: one row per input frame (subsampled outputs "
                                       "repeated: what a decoding graph of input frames "
                                       "expects) | model: the network's own rows (the label "
                                       "delay undone, no repetition: CTC decoding without a "
                                       "graph, where a repeated row could be read twice)",
                              choices=("input", "model"))


@dataclass
class ChainOutputOptions:
    """What forward.py writes for a chain model (``--objective=lfmmi``)."""
    chain: str = option("auto", "auto: the outputs of a model trained with --objective=lfmmi "
                                "(its stored objective) are chain outputs | true | false. A "
                                "chain model's outputs are written as they are, as "
                                "log-likelihoods (no log-softmax, no priors), one row per "
                                "output frame (1/3 of the input frames), whole utterances",
                        choices=("auto", "true", "false"))
    loglike_scale: float = option(1.0, "multiply what is written by this (chain decoding: "
                                       "--post-decode-acwt, the decoder's acoustic scale then "
                                       "divided by it: the lattices hold the acoustic costs "
                                       "Kaldi's lattice-scale --acoustic-scale leaves)",
                                  above=0.0)


def is_chain_model(meta: dict, chain: str = "auto") -> bool:
    """Whether a model's outputs are chain outputs (``--chain``; auto: its stored objective)."""
    if chain == "auto":
        return meta.get("objective") == "lfmmi"
    return chain == "true"


@torch.inference_mode()
def model_logits(model: torch.nn.Module, feats: np.ndarray, device: torch.device,
                 chunks: ChunkOptions = ChunkOptions()) -> np.ndarray:
    """[T, D] transformed features -> [T, P] logits (float32, on the CPU)."""
    parts = []
    for lo, hi, keep_from, keep_to in chunks.windows(len(feats)):
        x = torch.from_numpy(np.ascontiguousarray(feats[lo:hi])).to(device).unsqueeze(0)
        lengths = torch.tensor([hi - lo], dtype=torch.long)
        y = model(x, lengths)
        if isinstance(y, (tuple, list)):
            y = y[0]
        parts.append(y[0, keep_from - lo:keep_to - lo].float().cpu().numpy())
    return np.concatenate(parts, axis=0)


def to_input_rate(outputs: np.ndarray, transform, num_input_frames: int) -> np.ndarray:
    """Undo the label delay, then repeat each output ``subsample`` times (one row per input
    frame)."""
    out = transform.undo_label_delay(outputs)
    if transform.subsample > 1:
        out = np.repeat(out, transform.subsample, axis=0)[:num_input_frames]
    if len(out) != num_input_frames:
        raise FormatError(f"model gave {len(out)} frames for {num_input_frames} input frames")
    return out


@dataclass
class ForwardSummary:
    num_utts: int = 0
    num_frames: int = 0
    elapsed: float = 0.0


def forward_dataset(model: torch.nn.Module, dataset, device: torch.device,
                    write: Callable[[str, np.ndarray], None],
                    num_outputs: int, log_priors: Optional[np.ndarray] = None,
                    prior_scale: float = PriorOptions.prior_scale,
                    chunks: ChunkOptions = ChunkOptions(),
                    model_rate: bool = False, chain: bool = False,
                    loglike_scale: float = 1.0) -> ForwardSummary:
    """For each utterance of ``dataset`` (a ``UtteranceDataset`` carrying the model's
    transform): scaled log-likelihoods [frames, num_outputs], passed to ``write(key, m)``;
    ``model_rate``: [the network's output frames, num_outputs] (``--output-rate=model``);
    ``chain``: the chain outputs as they are (no softmax, no priors), one row per output frame
    (``ceil(frames / frame_subsampling_factor)``), whole utterances; all times
    ``loglike_scale``."""
    factor = int(getattr(model, "frame_subsampling_factor", 1))
    if chain and (log_priors is not None or chunks.chunk_size > 0):
        raise ConfigError("a chain model's outputs are log-likelihoods of whole utterances: "
                          "no --class-frame-counts and no --chunking")
    summary = ForwardSummary()
    start = time.perf_counter()
    model.eval()
    for utt in dataset:
        feats, _ = dataset.load(utt)
        n_in = dataset.lengths[utt]
        if len(feats) == 0:
            log.warning("utterance %s has no frames: written as an empty matrix", utt)
            ll = np.zeros((0, num_outputs), np.float32)
        else:
            logits = model_logits(model, feats, device, chunks)
            if logits.shape[1] != num_outputs:
                raise FormatError(f"utterance {utt}: the model gave {logits.shape[1]} outputs, "
                                  f"expected {num_outputs}")
            if chain:
                ll = logits.astype(np.float32, copy=False)
                if len(ll) != -(-n_in // factor):
                    raise FormatError(f"utterance {utt}: the chain model gave {len(ll)} frames "
                                      f"for {n_in} input frames (frame subsampling factor "
                                      f"{factor})")
            else:
                ll = scaled_loglikes(logits, log_priors, prior_scale)
                ll = (dataset.transform.undo_label_delay(ll) if model_rate
                      else to_input_rate(ll, dataset.transform, n_in))
            if loglike_scale != 1.0:
                ll = ll * np.float32(loglike_scale)
        write(utt, ll)
        summary.num_utts += 1
        summary.num_frames += n_in
    summary.elapsed = time.perf_counter() - start
    return summary


def chunk_options(args) -> ChunkOptions:
    """``--chunking=size:step`` as ``ChunkOptions``: ``step`` frames kept per window,
    ``(size - step) / 2`` of context."""
    pair = parse_chunking(getattr(args, "chunking", "") or "", even_context=True)
    if pair is None:
        return ChunkOptions()
    size, step = pair
    return ChunkOptions(step, (size - step) // 2)


def load_model_and_data(model_path: str, data_dir: str, device: torch.device,
                        targets_scp: Optional[str] = None):
    """(model, meta, dataset): a saved model and a data dir read through the model's own
    feature transform (per-speaker CMVN when the transform normalises means); with targets,
    the import's ``target_lengths`` beside ``targets_scp`` where there is one."""
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.models import load_model

    model, meta = load_model(model_path, device)
    transform = FeatureTransform.from_dict(meta["transform"])
    from hybridasr.align.ali_dir import ImportedAlignments

    lengths = ImportedAlignments.beside(targets_scp).target_lengths if targets_scp else None
    dataset = UtteranceDataset.from_data_dir(data_dir, targets_scp=targets_scp,
                                             transform=transform, use_cmvn=transform.norm_means,
                                             target_lengths=lengths)
    if len(dataset) and "input_dim" in meta:
        dim = transform.output_dim(dataset.feature_dim())
        if dim != int(meta["input_dim"]):
            raise FormatError(f"{data_dir}: its features give network input dim {dim}, "
                              f"{model_path} expects {meta['input_dim']}")
    return model, meta, dataset
