#!/usr/bin/env python3
"""Kaldi's utils/data/get_utt2dur.sh: writes <data-dir>/utt2dur."""
import logging
import sys

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.features.utt2dur import Utt2durOptions, write_utt2dur


def get_parser():
    p = make_parser("data_dir_utt2dur.py",
                    "Writes <data-dir>/utt2dur: from segments, else from the audio of wav.scp "
                    "(headers of plain files; pipes are read), else from feats.scp.",
                    usage="data_dir_utt2dur.py [options] <data-dir>",
                    example="data_dir_utt2dur.py data/train")
    add_options(p, Utt2durOptions)
    p.add_argument("data")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    n = write_utt2dur(args.data, args.frame_shift,
                      warn=logging.getLogger("data_dir_utt2dur.py").warning)
    print(f"get_utt2dur.sh: computed {args.data}/utt2dur ({n} utterances)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
