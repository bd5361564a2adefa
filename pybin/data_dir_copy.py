#!/usr/bin/env python3
"""Kaldi's utils/copy_data_dir.sh: copies a data dir, optionally renaming utterances/speakers."""
import sys

from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.datadir.files import has
from hybridasr.datadir.subset import copy_data_dir
from hybridasr.datadir.validate import validate_data_dir


def get_parser():
    p = make_parser("data_dir_copy.py",
                    "Copies a data dir (the files Kaldi's copy_data_dir.sh copies), adding "
                    "prefixes/suffixes to utterance and speaker ids, then validates the copy.",
                    usage="data_dir_copy.py [options] <srcdir> <destdir>",
                    example="data_dir_copy.py --utt-prefix=sp1.1- --spk-prefix=sp1.1- "
                            "data/train data/train_sp1.1")
    p.add_argument("--utt-prefix", default="")
    p.add_argument("--utt-suffix", default="")
    p.add_argument("--spk-prefix", default="")
    p.add_argument("--spk-suffix", default="")
    add_bool(p, "--validate", True, "validate the copy")
    p.add_argument("src")
    p.add_argument("dst")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    n = copy_data_dir(args.src, args.dst, args.utt_prefix, args.utt_suffix, args.spk_prefix,
                      args.spk_suffix)
    print(f"copy_data_dir.sh: copied data from {args.src} to {args.dst} ({n} utterances)",
          file=sys.stderr)
    if args.validate:
        validate_data_dir(args.dst, no_feats=not has(args.src, "feats.scp"),
                          no_text=not has(args.src, "text"),
                          no_wav=not has(args.src, "wav.scp"),
                          no_spk_sort=bool(args.utt_prefix or args.utt_suffix
                                           or args.spk_prefix or args.spk_suffix))
    return 0


if __name__ == "__main__":
    run_main(main)
