"""torch.distributed for training: one process per GPU (or CPU process, gloo), as started by
``torchrun``. ``DistInfo`` says who this process is; the helpers do nothing with one process."""
from __future__ import annotations

import contextlib
import datetime
import logging
import os
from dataclasses import dataclass
from typing import Iterator, Optional

import torch
import torch.distributed as dist

from hybridasr.errors import ConfigError, FormatError, HybridAsrError
from hybridasr.device import resolve_device

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


class PeerLostError(HybridAsrError):
    """Another rank of the process group died, or its node went away."""


# what gloo says when a peer is gone (a plain RuntimeError); NCCL raises DistBackendError
_PEER_LOST = ("connection closed by peer", "connection reset by peer", "broken pipe",
              "timed out", "timeout")


@contextlib.contextmanager
def stop_on_lost_peer(info: DistInfo) -> Iterator[None]:
    """Turns a failed collective operation into a clear error naming this rank: a rank that
    dies closes its connections, and the others fail at their next collective (an all-reduce
    of DDP's backward pass, a barrier) at once; a node that vanishes without closing them is
    noticed when the process group's timeout (``init_distributed``, 30 minutes) runs out."""
    try:
        yield
    except RuntimeError as e:  # torch.distributed.DistError is a RuntimeError
        text = str(e).strip()
        if not info.active or not (isinstance(e, getattr(dist, "DistError", ())) or
                                   any(w in text.lower() for w in _PEER_LOST)):
            raise
        first = text.splitlines()[0] if text else type(e).__name__
        raise PeerLostError(
            f"rank {info.rank} of {info.world_size}: lost contact with another rank ({first}); "
            f"a process died or its node went away, so every rank stops. Run the same command "
            f"again to resume after the last finished epoch") from e


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
    """``--parallel=average`` (Khomenko et al., 2016): at every sync point t (every
    ``sync_every`` batches, and at the end of the epoch; only there with ``sync_every`` 0) the
    parameters v_i(t) of every rank i are replaced by

        V(t) = mean_i v_i(t) - decay * V(t-1)

    t counts sync points over the whole training, across epochs: V(t-1) is the previous sync's
    result, in the same epoch or, at the first sync of an epoch, the last sync of the epoch
    whose model the epoch starts from. An averager lives for one epoch; it starts from
    ``previous``, the ``state_dict()`` of the averager that made that model, which the trainer
    saves beside it (``checkpoint.save_average``, ``epoch<N>.avg``) and reads back with the
    model, so a resumed training applies the same updates as an uninterrupted one. The first
    sync of a training has no V(t-1) (the initial model was never averaged): it is the plain
    mean.

    After an epoch that newbob rejects, the next epoch restarts from the best model and its
    optimizer state, and V(t-1) is the one saved with that model (the last sync of the best
    epoch), not the rejected epoch's last sync: everything the rejected epoch did, its syncs
    included, is discarded, and its retry (with a smaller learning rate) is the same step t of
    the training as the rejected epoch was. V(t-1) and the parameters it is subtracted from
    then belong to the same trajectory.

    Without a decay nothing is kept (V(t-1) is not needed)."""

    def __init__(self, model: torch.nn.Module, info: DistInfo, sync_every: int,
                 decay: float = 0.0, previous: Optional[dict] = None):
        self.model, self.info, self.sync_every, self.decay = model, info, sync_every, decay
        self.previous: Optional[torch.Tensor] = None  # V(t-1), flat float32 on the device
        self.syncs = 0      # sync points so far in the training (this epoch's included)
        self.steps = 0      # batches this epoch
        self.since_sync = 0  # batches since the last sync point
        if previous is not None:
            self.load_state_dict(previous)

    def state_dict(self) -> dict:
        """What the next epoch's averager starts from (``previous``)."""
        return {"previous": None if self.previous is None else self.previous.detach().cpu(),
                "syncs": self.syncs, "decay": float(self.decay)}

    def load_state_dict(self, state: dict) -> None:
        prev = state.get("previous")
        self.syncs = int(state.get("syncs", 0))
        if prev is None or not self.decay:
            self.previous = None
            return
        n = sum(p.numel() for p in self.model.parameters())
        if prev.numel() != n:
            raise FormatError(f"the saved parameter average has {prev.numel()} values, the "
                              f"model {n} parameters")
        self.previous = prev.to(self.info.device, torch.float32).reshape(-1).clone()

    def step(self, diverged: bool) -> bool:
        """After each batch; returns True when some rank diverged (known at a sync point)."""
        self.steps += 1
        self.since_sync += 1
        if self.sync_every and self.steps % self.sync_every == 0:
            return self.average(diverged)
        return False

    def finish(self, diverged: bool) -> bool:
        """The end of the epoch's sync point (every rank leaves with the same parameters);
        none when the last batch was one already (the ranks are equal, and averaging them
        again would apply the decay twice to the same parameters)."""
        if self.since_sync == 0:
            return False
        return self.average(diverged)

    @torch.no_grad()
    def average(self, diverged: bool) -> bool:
        """A sync point now; returns whether any rank reported divergence (then nothing is
        averaged)."""
        flag = torch.tensor([1.0 if diverged else 0.0], device=self.info.device)
        all_reduce_sum(flag, self.info)
        if flag.item() > 0:
            return True
        params = [p for p in self.model.parameters()]
        flat = torch.cat([p.detach().reshape(-1).float() for p in params])
        all_reduce_sum(flat, self.info)
        flat /= self.info.world_size
        if self.decay:
            if self.previous is not None:
                flat -= self.decay * self.previous
            self.previous = flat.clone()
        offset = 0
        for p in params:
            n = p.numel()
            p.copy_(flat[offset:offset + n].view_as(p).to(p.dtype))
            offset += n
        self.syncs += 1
        self.since_sync = 0
        return False
