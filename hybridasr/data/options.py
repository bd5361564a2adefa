"""Command-line options of the data pipeline, for any ``hybridasr.cli`` parser.

``add_data_options(parser)`` registers every feature-transform and batching option and
``--batching-config=conf/batching/<strategy>.conf`` (applied after ``--config``, before the
command line); ``data_config_from_args(args)`` turns the parsed namespace into a ``DataConfig``.
"""
from __future__ import annotations

from dataclasses import fields

from hybridasr.cli import add_bool
from hybridasr.data.config import DataConfig
from hybridasr.features.cmvn import parse_cmvn_opts

_D = DataConfig()


def add_data_options(parser) -> None:
    g = parser.add_argument_group("features (rebuilt at decode time from the model)")
    add_bool(g, "--norm-means", _D.norm_means, "per-speaker CMVN: subtract means (cmvn.scp)")
    add_bool(g, "--norm-vars", _D.norm_vars, "per-speaker CMVN: also normalise variances")
    g.add_argument("--cmvn-opts", default="",
                   help='Kaldi cmvn_opts string, e.g. "--norm-vars=true"; overrides '
                        '--norm-means/--norm-vars when given')
    add_bool(g, "--global-norm", _D.global_norm,
             "global mean/variance normalisation over the training set (computed once)")
    g.add_argument("--delta-order", type=int, default=_D.delta_order, help="add-deltas order")
    g.add_argument("--delta-window", type=int, default=_D.delta_window, help="add-deltas window")
    g.add_argument("--splice", type=int, default=_D.splice,
                   help="frames of context either side (5 gives 11 frames, as nnet1)")
    g.add_argument("--stack-frames", type=int, default=_D.stack_frames,
                   help="stack each frame with the next N-1")
    g.add_argument("--subsample", type=int, default=_D.subsample,
                   help="keep every N-th (stacked) frame; targets alike")
    g.add_argument("--label-delay", type=int, default=_D.label_delay,
                   help="output t is trained on the label of frame t-N")

    b = parser.add_argument_group("batching")
    parser.add_config_file_option(
        "--batching-config", "config file of batching options "
        "(e.g. conf/batching/laplace.conf); read after --config, the command line wins")
    b.add_argument("--seq-ordering", default=_D.seq_ordering,
                   help="random | sorted | sorted_reverse | bucketing | laplace:N | "
                        "laplace:.K | optimal_buckets:Q | frame_shuffle")
    b.add_argument("--bucket-boundaries", default=_D.bucket_boundaries,
                   help="bucketing: increasing lengths b1,b2,... (frames)")
    b.add_argument("--bucket-width", type=int, default=_D.bucket_width,
                   help="bucketing: buckets of this many frames (instead of boundaries)")
    b.add_argument("--bucket-order", default=_D.bucket_order, choices=["random", "curriculum"],
                   help="bucketing/optimal_buckets: batches in random order, or buckets "
                        "short to long")
    b.add_argument("--chunking", default=_D.chunking,
                   help="size:step: train on sub-utterances of size frames every step frames "
                        "(each utterance is read once per epoch; see --randomizer-size)")
    b.add_argument("--chunking-loss", default=_D.chunking_loss, choices=["all", "once"],
                   help="what the loss counts where chunks overlap: all: every chunk's every "
                        "frame (RETURNN), so overlapped frames count twice; once: each frame "
                        "once, in the chunk where it is nearer the middle")
    b.add_argument("--tbptt", default=_D.tbptt,
                   help="streams:window: truncated BPTT, state carried between windows")
    b.add_argument("--max-frames", type=int, default=_D.max_frames,
                   help="padded frames per batch (sequences x longest); an utterance (or "
                        "chunk) longer than this gets a batch of its own, nothing is refused "
                        "for its length; for frame_shuffle the minibatch size; 0 = no limit")
    b.add_argument("--max-seqs", type=int, default=_D.max_seqs,
                   help="sequences per batch; 0 = no limit")
    b.add_argument("--max-seq-length", type=int, default=_D.max_seq_length,
                   help="utterances longer than this (frames) are left out or split, see "
                        "--max-seq-length-mode; 0 = no limit (the default: every utterance "
                        "is trained on)")
    b.add_argument("--max-seq-length-mode", default=_D.max_seq_length_mode,
                   choices=["filter", "split"],
                   help="what happens to utterances over --max-seq-length: filter: left out "
                        "(the log counts them); split: cut into pieces of near-equal length, "
                        "each utterance read once")
    b.add_argument("--randomizer-size", type=int, default=_D.randomizer_size,
                   help="frame_shuffle: frames per randomizer buffer; --chunking (and split "
                        "utterances): chunk frames per group of utterances that one loader "
                        "worker reads once each and whose chunks are batched together")
    b.add_argument("--min-batches-per-epoch", type=int, default=_D.min_batches_per_epoch,
                   help="a training set too small for this many batches (updates) is gone "
                        "through several times per epoch, each pass in its own order "
                        "(0: one pass)")
    b.add_argument("--seed", type=int, default=_D.seed,
                   help="random seed of training: the model initialisation, and each "
                        "epoch's batch order and dropout, which depend on (seed, epoch) only")
    b.add_argument("--num-workers", type=int, default=_D.num_workers,
                   help="loader worker processes (0 = load in the training process)")
    b.add_argument("--prefetch", type=int, default=_D.prefetch,
                   help="batches each worker prepares ahead")


def data_config_from_args(args) -> DataConfig:
    d = {f.name: getattr(args, f.name) for f in fields(DataConfig) if hasattr(args, f.name)}
    cmvn_opts = getattr(args, "cmvn_opts", "") or ""
    if cmvn_opts.strip():
        d.update(parse_cmvn_opts(cmvn_opts, source="--cmvn-opts"))
    return DataConfig.from_dict(d)
