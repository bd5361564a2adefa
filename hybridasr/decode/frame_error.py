"""Frame error rate of a model against frame targets (pdf-ids of an alignment): a quick check
of a network without a decoding graph; the network's argmax over its outputs is the frame's
decision. Two views: as in training (output frames against the transform's subsampled and
delayed targets; frames whose target is the ignore index, the first ``label_delay`` ones, are
not counted), or ``at_input_rate``, what the decoder sees (the label delay undone and the
outputs brought to one row per input frame, as ``forward_dataset`` does, against the undelayed
alignment: every frame counted)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hybridasr.decode.forward import ChunkOptions, model_logits, to_input_rate
from hybridasr.errors import FormatError
from hybridasr.features.transform import IGNORE_INDEX


@dataclass
class FrameErrors:
    errors: int = 0
    frames: int = 0
    utts: int = 0

    @property
    def rate(self) -> float:
        return 100.0 * self.errors / self.frames if self.frames else float("nan")

    def add(self, logits: np.ndarray, targets: np.ndarray) -> None:
        keep = targets != IGNORE_INDEX
        self.errors += int((logits.argmax(axis=1)[keep] != targets[keep]).sum())
        self.frames += int(keep.sum())
        self.utts += 1

    def format(self) -> str:
        return (f"%FER {self.rate:.2f} [ {self.errors} / {self.frames} frames, "
                f"{self.utts} utterances ]")


def frame_errors(model: torch.nn.Module, dataset, device: torch.device,
                 chunks: ChunkOptions = ChunkOptions(),
                 at_input_rate: bool = False) -> FrameErrors:
    """``dataset``: a ``UtteranceDataset`` with targets and the model's transform."""
    out = FrameErrors()
    model.eval()
    for utt in dataset:
        x, y = dataset.load(utt)
        if len(x) == 0:
            continue
        logits = model_logits(model, x, device, chunks)
        y = np.asarray(y)
        if y.size and y.max() >= logits.shape[1]:
            raise FormatError(f"utterance {utt}: target pdf {int(y.max())} but the model has "
                              f"{logits.shape[1]} outputs (targets from another alignment "
                              f"model?)")
        if at_input_rate:
            y = np.asarray(dataset.raw_targets(utt), np.int64)  # undelayed, every input frame
            logits = to_input_rate(logits, dataset.transform, len(y))
        out.add(logits, y)
    return out
