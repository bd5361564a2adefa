#!/usr/bin/env python3
"""Kaldi's utils/fix_data_dir.sh: sorts a data dir and keeps what all its files agree on."""
import sys

from hybridasr.cli import make_parser, run_main
from hybridasr.datadir.fix import fix_data_dir


def get_parser():
    p = make_parser("data_dir_fix.py",
                    "Sorts the files of a data dir, removes the utterances (speakers, "
                    "recordings) not in all of them, rebuilds spk2utt; old files go to "
                    "<data-dir>/.backup/.",
                    usage="data_dir_fix.py [options] <data-dir>",
                    example="data_dir_fix.py data/train")
    p.add_argument("--utt-extra-files", default="",
                   help="more utterance-keyed files to filter (space separated)")
    p.add_argument("--spk-extra-files", default="",
                   help="more speaker-keyed files to filter (space separated)")
    p.add_argument("data")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    fix_data_dir(args.data, args.utt_extra_files.split(), args.spk_extra_files.split(),
                 log=lambda m: print(m, file=sys.stderr))
    return 0


if __name__ == "__main__":
    run_main(main)
