"""Command-line options of the trainer itself (optimizer, device, parallelism, logging)."""
from __future__ import annotations

from dataclasses import dataclass, fields

from hybridasr.cli import add_bool, add_renamed_option
from hybridasr.errors import ConfigError


@dataclass
class TrainConfig:
    optimizer: str = "adam"          # adam | sgd
    momentum: float = 0.9            # sgd
    weight_decay: float = 0.0
    clip_grad_norm: float = 0.0      # 0: no clipping
    device: str = "cpu"              # cpu | cuda | auto
    amp: str = "none"                # none | bf16 (autocast on the GPU)
    num_threads: int = 0             # torch intra-op threads (0: torch's default)
    parallel: str = "none"           # none | ddp | average
    sync_every: int = 0              # average: batches between parameter averages (0: per epoch)
    average_decay: float = 0.0       # average: V(t) = mean_i v_i(t) - decay * V(t-1) (Khomenko)
    progress_every: float = 30.0     # seconds between progress lines in the log

    def validate(self) -> None:
        if self.optimizer not in ("adam", "sgd"):
            raise ConfigError(f"--optimizer must be adam or sgd, got {self.optimizer!r}")
        if self.device not in ("cpu", "cuda", "auto"):
            raise ConfigError(f"--device must be cpu, cuda or auto, got {self.device!r}")
        if self.amp not in ("none", "bf16"):
            raise ConfigError(f"--amp must be none or bf16, got {self.amp!r}")
        if self.parallel not in ("none", "ddp", "average"):
            raise ConfigError(f"--parallel must be none, ddp or average, got {self.parallel!r}")
        if self.sync_every < 0 or self.clip_grad_norm < 0:
            raise ConfigError("--sync-every and --clip-grad-norm must be >= 0")


_C = TrainConfig()


def add_train_options(parser) -> None:
    g = parser.add_argument_group("training")
    g.add_argument("--optimizer", default=_C.optimizer, help="adam | sgd (with --momentum)")
    g.add_argument("--momentum", type=float, default=_C.momentum, help="SGD momentum")
    g.add_argument("--weight-decay", type=float, default=_C.weight_decay, help="L2 weight decay")
    g.add_argument("--clip-grad-norm", type=float, default=_C.clip_grad_norm,
                   help="clip the gradient norm to this (0: no clipping)")
    g.add_argument("--device", default=_C.device, help="cpu | cuda | auto")
    g.add_argument("--amp", default=_C.amp, help="none | bf16 (mixed precision on the GPU)")
    g.add_argument("--num-threads", type=int, default=_C.num_threads,
                   help="torch CPU threads per process (0: torch's default)")
    g.add_argument("--parallel", default=_C.parallel,
                   help="none | ddp (gradient all-reduce every step) | average (parameter "
                        "averaging every --sync-every batches); needs torchrun")
    g.add_argument("--sync-every", type=int, default=_C.sync_every,
                   help="--parallel=average: batches between averages (0: once per epoch)")
    g.add_argument("--average-decay", type=float, default=_C.average_decay,
                   help="--parallel=average: Khomenko et al.'s decay beta (1e-6 there)")
    g.add_argument("--progress-every", type=float, default=_C.progress_every,
                   help="seconds between progress lines (frames/s, ETA) in the log")
    # one seed for all of training (--seed: model initialisation, batch order, dropout)
    add_renamed_option(parser, "--init-seed", "--seed",
                       note="one --seed now seeds the initialisation, batch order and dropout")


def train_config_from_args(args) -> TrainConfig:
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)
                         if hasattr(args, f.name)})
    cfg.validate()
    return cfg
