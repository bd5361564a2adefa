"""torch.distributed for training: one process per GPU (or CPU process, gloo), as started by
``torchrun``. ``DistInfo`` says who this process is; the helpers do nothing with one process."""
from __future__ import annotations

import datetime
import logging
import os
from dataclasses import dataclass
from typing import Optional

import torch
import torch.distributed as dist

from hybridasr.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    group: bool = False  # in a torch.distributed process group (torchrun), even of one


    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1 or self.group


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("--device=cuda but torch sees no CUDA device")
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def init_distributed(device: str, parallel: str) -> DistInfo:
    """Joins the process group when started by torchrun (WORLD_SIZE > 1): NCCL on GPUs, gloo
    on CPUs."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device, local_rank)
    launched = "TORCHELASTIC_RUN_ID" in os.environ or "MASTER_ADDR" in os.environ
    group = world > 1 or (launched and parallel != "none")
    if group:
        if parallel == "none":
            raise ConfigError(f"started with WORLD_SIZE={world} but --parallel=none; "
                              f"use --parallel=ddp or --parallel=average")
        if not dist.is_initialized():
            backend = "nccl" if dev.type == "cuda" else "gloo"
            dist.init_process_group(backend, timeout=datetime.timedelta(minutes=30),
                                    **({"device_id": dev} if dev.type == "cuda" else {}))
        log.info("rank %d of %d (local rank %d) on %s, backend %s", rank, world, local_rank,
                 dev, dist.get_backend())
    return DistInfo(rank, world, local_rank, dev, group)


def shutdown(info: DistInfo) -> None:
    if info.active and dist.is_initialized():
        dist.destroy_process_group()


def all_reduce_sum(t: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if info.active:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def barrier(info: DistInfo) -> None:
    if info.active:
        dist.barrier()


def broadcast_parameters(model: torch.nn.Module, info: DistInfo) -> None:
    """Every rank starts from rank 0's parameters."""
    if info.active:
        for p in model.state_dict().values():
            dist.broadcast(p, src=0)


class ParameterAverager:
    """``--parallel=average``: every ``sync_every`` batches the ranks' parameters are replaced
    by their mean, minus ``decay`` times the previous average (Khomenko et al.)."""

    def __init__(self, model: torch.nn.Module, info: DistInfo, sync_every: int,
                 decay: float = 0.0):
        self.model, self.info, self.sync_every, self.decay = model, info, sync_every, decay
        self.previous: Optional[list] = None
        self.steps = 0

    def step(self, diverged: bool) -> bool:
        """After each batch; returns True when some rank diverged (known at a sync point)."""
        self.steps += 1
        if self.sync_every and self.steps % self.sync_every == 0:
            return self.average(diverged)
        return False

    @torch.no_grad()
    def average(self, diverged: bool) -> bool:
        """Averages now; returns whether any rank reported divergence."""
        flag = torch.tensor([1.0 if diverged else 0.0], device=self.info.device)
        all_reduce_sum(flag, self.info)
        if flag.item() > 0:
            return True
        params = [p for p in self.model.parameters()]
        if self.info.active:
            flat = torch.cat([p.detach().reshape(-1).float() for p in params])
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            flat /= self.info.world_size
            if self.decay and self.previous is not None:
                flat -= self.decay * self.previous
            if self.decay:
                self.previous = flat.clone()
            offset = 0
            for p in params:
                n = p.numel()
                p.copy_(flat[offset:offset + n].view_as(p).to(p.dtype))
                offset += n
        return False
