#!/usr/bin/env python3
"""Prints the first of the given dirs whose trans.* (fMLLR transforms) cover every speaker of a
data dir (nothing, and a note per dir, when none does)."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("choose_transform_dir.py",
                    "Prints the first <dir> whose trans.* hold an fMLLR transform for every "
                    "speaker of <data-dir>/spk2utt; with none, prints nothing and notes on "
                    "stderr why each dir was not taken (exit status 0 either way).",
                    usage="choose_transform_dir.py <data-dir> <dir> [<dir> ...]",
                    example="choose_transform_dir.py data/test exp/tri3b/decode exp/tri3b/decode_test")
    p.add_argument("data_dir")
    p.add_argument("dirs", nargs="+")
    return p


def main(argv=None):
    import os
    import sys

    from hybridasr.features.fmllr import choose_transform_dir
    from hybridasr.kaldi.io.table import read_map

    args = get_parser().parse_args(argv)
    speakers = list(read_map(os.path.join(args.data_dir, "spk2utt")))
    chosen, notes = choose_transform_dir(speakers, args.dirs)
    for n in notes:
        print(f"choose_transform_dir.py: {n}", file=sys.stderr)
    if chosen:
        print(chosen)
    return 0


if __name__ == "__main__":
    run_main(main)
