#!/usr/bin/env python3
"""Kaldi's utils/split_data.sh: splits a data dir into <data>/split<N>/<n>/ for N jobs."""


from hybridasr.cli import make_parser, run_main
from hybridasr.datadir.split import split_data_dir


def get_parser():
    p = make_parser("data_dir_split.py",
                    "Splits a data dir per speaker (each speaker in one part, utterance counts "
                    "balanced) or, with --per-utt, per utterance into <data>/split<N>utt/. "
                    "Does nothing when the split is newer than the data dir.",
                    usage="data_dir_split.py [--per-utt] <data-dir> <num-to-split>",
                    example="data_dir_split.py data/train 4")
    p.add_argument("--per-utt", action="store_true", help="split by utterance, not speaker")
    p.add_argument("data")
    p.add_argument("num_parts", type=int)
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    split_data_dir(args.data, args.num_parts, per_utt=args.per_utt)
    return 0


if __name__ == "__main__":
    run_main(main)
