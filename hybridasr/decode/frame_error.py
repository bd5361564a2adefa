"""Frame error rate of a model against frame targets (pdf-ids of an alignment): a quick check
of a network without a decoding graph. Frames whose target is the ignore index (label delay)
are not counted; the network's argmax over its outputs is the frame's decision."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hybridasr.data.transform import IGNORE_INDEX
from hybridasr.decode.forward import ChunkOptions, model_logits
from hybridasr.errors import FormatError


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
                 chunks: ChunkOptions = ChunkOptions()) -> FrameErrors:
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
        out.add(logits, y)
    return out
