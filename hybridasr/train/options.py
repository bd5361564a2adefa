"""Options of the trainer itself (optimizer, device, parallelism, logging), declared once."""
from __future__ import annotations

from dataclasses import dataclass

from hybridasr.device import DeviceOptions
from hybridasr.train.objectives import ObjectiveOptions
from hybridasr.options import check, from_values, option
from hybridasr.train.schedules.dropout import dropout_schedule_value


@dataclass
class TrainConfig(ObjectiveOptions, DeviceOptions):
    """The trainer's settings (``--device`` is every model-running tool's; one ``--seed``, a
    data option, seeds the initialisation, batch order and dropout)."""
    optimizer: str = option("adam", "adam | sgd (with --momentum)", choices=("adam", "sgd"))
    momentum: float = option(0.9, "SGD momentum")
    weight_decay: float = option(0.0, "L2 weight decay")
    dropout_schedule: str = option("", "Kaldi's --trainer.dropout-schedule, e.g. "
                                       "0,0@0.20,0.5@0.50,0: the model's dropout proportion "
                                       "over the training (epoch e of --max-iters at "
                                       "(e - 0.5) / max-iters); empty: the model's own")
    clip_grad_norm: float = option(0.0, "clip the gradient norm to this (0: no clipping)",
                                   minimum=0)
    amp: str = option("none", "none | bf16 (mixed precision on the GPU)",
                      choices=("none", "bf16"))
    # measured (docs/performance.md, bench/two_jobs.py): torch's default, a thread per core in
    # every process, made two trainings on 2 cores each run at 0.175x of one alone
    num_threads: int = option(0, "torch CPU threads of this process (0: the cores it was "
                                 "given: the job's share of run.pl/slurm.pl --num-threads, "
                                 "else OMP_NUM_THREADS, else 1, as Kaldi's one slot per job; "
                                 "never more than its affinity and cgroup quota allow)",
                              minimum=0)
    parallel: str = option("none", "none | ddp (gradient all-reduce every step) | average "
                                   "(parameter averaging every --sync-every batches); needs "
                                   "torchrun", choices=("none", "ddp", "average"))
    sync_every: int = option(0, "--parallel=average: batches between averages (0: once per "
                                "epoch)", minimum=0)
    average_decay: float = option(0.0, "--parallel=average: Khomenko et al.'s decay beta "
                                       "(1e-6 there): V(t) = mean_i v_i(t) - beta * V(t-1)")
    progress_every: float = option(30.0, "seconds between progress lines (frames/s, ETA) in "
                                         "the log")
    # 30 minutes: an LVCSR epoch (hours) loses at most that to a kill, and a checkpoint of a
    # large BLSTM and its Adam state (a few hundred MB, fsynced) costs seconds: well under 1%
    checkpoint_every: float = option(30.0, "minutes between checkpoints inside an epoch, from "
                                           "which a killed training resumes at the batch "
                                           "(0: only at the end of each epoch)", minimum=0)
    checkpoint_every_batches: int = option(0, "batches between checkpoints inside an epoch "
                                              "(0: none by count; with --checkpoint-every, "
                                              "whichever comes first)", minimum=0)
    init_model: str = option("", "start from this model's weights instead of a new model "
                                 "(Kaldi nnet1's --nnet-init; e.g. the previous realignment "
                                 "round's final.nnet): same model config, input dim and "
                                 "number of pdfs")
    combine_models: int = option(0, "at the end, final.nnet is the average of the last n "
                                    "kept epochs' models for the n of 1..N with the best cv "
                                    "objective (Kaldi's final combination, nnet3-chain-combine; "
                                    "hybridasr.train.combine); 0 or 1: no averaging", minimum=0)
    keep_initial_model: bool = option(False, "with --init-model: when no epoch improves on "
                                             "it, it becomes final.nnet (a warning) instead of "
                                             "an error (a realignment round that goes on "
                                             "training: the aligning model is then the round's)")

    def __post_init__(self):
        check(self)  # ConfigError naming the option (choices, minimum)
        if self.dropout_schedule:
            dropout_schedule_value(self.dropout_schedule, 0.0)  # its format, before training


def train_config_from_args(args) -> TrainConfig:
    return from_values(TrainConfig, args)
