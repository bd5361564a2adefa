#!/usr/bin/env python3
"""Kaldi nnet1's utils/subset_data_dir_tr_cv.sh: a held-out (cv) set of whole speakers, or of
utterances where a speaker split would leave a side empty."""
import sys

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.datadir.tr_cv import TrCvOptions, split_tr_cv


def get_parser():
    p = make_parser("data_dir_tr_cv.py",
                    "Splits a data dir into a training and a cross-validation part: "
                    "--cv-spk-percent of the speakers (random, seeded) go to cv; with "
                    "--cv-utt-percent the split is by utterance instead, and it falls back to "
                    "an utterance split (saying so) when too few speakers leave a side "
                    "empty; held-out utterances keep their words covered in training.",
                    usage="data_dir_tr_cv.py [options] <src-data> <train-data> <cv-data>",
                    example="data_dir_tr_cv.py --cv-spk-percent 10 data/train "
                            "data/train_tr90 data/train_cv10")
    add_options(p, TrCvOptions)
    p.add_argument("src")
    p.add_argument("tr")
    p.add_argument("cv")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    split = split_tr_cv(args.src, args.tr, args.cv, args.cv_spk_percent, args.cv_utt_percent,
                        args.seed, args.train_all_if_words_lost, args.train_all)
    n_tr, n_cv = split.counts
    print(f"subset_data_dir_tr_cv.sh: split by {split.by}: {split.note}", file=sys.stderr)
    print(f"subset_data_dir_tr_cv.sh: {n_tr} utterances in {args.tr}, {n_cv} in {args.cv}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
