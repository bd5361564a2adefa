#!/usr/bin/env python3
"""Draws utterance lengths in batch order for each batching strategy to a PNG."""
import os

import json

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.kaldi.io.matrix_lengths import read_lengths
from hybridasr.data.options import BATCHING_CONFIG, data_config_from_args, data_option_sets
from hybridasr.data.plot import plot_batch_orders
from hybridasr.kaldi.io.table import read_int_map


def get_parser():
    p = make_parser(
        "plot_batches.py",
        "Draws the utterance lengths of one epoch in batch order, one panel per strategy\n"
        "(like Fig. 1 of Doetsch, Golik, Ney), and prints each strategy's padding figures.\n"
        "Lengths come from a data dir (utt2num_frames, else feats.scp headers) or a lengths "
        "file.\nThe other batching options (--max-frames, --bucket-width, ...) apply to all.",
        usage="plot_batches.py [options] <data-dir|lengths-file> <out.png>",
        example="plot_batches.py --strategies=random,sorted,bucketing,laplace:8 "
                "--bucket-width=250 data/train exp/batches.png")
    for title, declared in data_option_sets():
        add_options(p, declared, title)
    p.add_config_file_option(*BATCHING_CONFIG)
    p.add_argument("--strategies", default="random,sorted,bucketing,laplace:8,laplace:64,"
                                            "optimal_buckets:6",
                   help="comma-separated --seq-ordering values, one panel each")
    p.add_argument("--epoch", type=int, default=1, help="which epoch to draw")
    p.add_argument("source", help="Kaldi data dir, or a file of 'utt num_frames' lines")
    p.add_argument("png", help="output PNG")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    if os.path.isdir(args.source):
        u2n = os.path.join(args.source, "utt2num_frames")
        lengths = read_lengths(os.path.join(args.source, "feats.scp"),
                               u2n if os.path.exists(u2n) else None)
    else:
        lengths = read_int_map(args.source)
    configs, labels = [], []
    for name in [s for s in args.strategies.split(",") if s]:
        args.seq_ordering = name
        configs.append(data_config_from_args(args))  # each strategy checks its options
        labels.append(name)
    stats = plot_batch_orders(lengths, configs, labels, args.png, args.epoch)
    for label, s in zip(labels, stats):
        print(json.dumps({"strategy": label, **s}))


if __name__ == "__main__":
    run_main(main)
