#!/usr/bin/env python3
"""Kaldi's utils/validate_data_dir.sh: checks a data dir; the first problem names file and line."""
import sys

from hybridasr.cli import make_parser, run_main
from hybridasr.datadir.validate import validate_data_dir


def add_validate_flags(p):
    p.add_argument("--no-feats", action="store_true", help="do not require feats.scp")
    p.add_argument("--no-text", action="store_true", help="do not require text")
    p.add_argument("--no-wav", action="store_true", help="do not require wav.scp")
    p.add_argument("--no-spk-sort", action="store_true",
                   help="do not require utt2spk to stay sorted when sorted on the speaker")
    p.add_argument("--non-print", action="store_true",
                   help="allow non-printable characters in text")


def get_parser():
    p = make_parser("data_dir_validate.py",
                    "Checks that a Kaldi data dir is sorted (LC_ALL=C), has unique keys, and that "
                    "its files agree on utterances, speakers and recordings.",
                    usage="data_dir_validate.py [--no-feats] [--no-text] [--no-wav] "
                          "[--no-spk-sort] [--non-print] <data-dir>",
                    example="data_dir_validate.py --no-feats data/train")
    add_validate_flags(p)
    p.add_argument("data")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    validate_data_dir(args.data, no_feats=args.no_feats, no_text=args.no_text,
                      no_wav=args.no_wav, no_spk_sort=args.no_spk_sort,
                      non_print=args.non_print)
    print(f"validate_data_dir.sh: Successfully validated data-directory {args.data}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
