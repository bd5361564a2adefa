"""Where a model runs: ``--device``, one option for training and for every tool that
forwards a model (``cpu``, ``cuda``, or ``auto``: cuda when torch sees a GPU)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from hybridasr.errors import ConfigError
from hybridasr.options import option

DEVICES = ("cpu", "cuda", "auto")


@dataclass
class DeviceOptions:
    device: str = option("cpu", "cpu | cuda | auto (cuda when there is a GPU)",
                         choices=DEVICES)


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """The torch device of ``--device=name``; with cuda, GPU ``local_rank`` (modulo the GPUs
    there are) becomes the current one."""
    if name not in DEVICES:
        raise ConfigError(f"--device must be {'|'.join(DEVICES)}, got {name!r}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("--device=cuda but torch sees no CUDA device")
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")
