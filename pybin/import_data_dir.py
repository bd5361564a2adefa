#!/usr/bin/env python3
"""Copies a Kaldi data dir into the recipe, making Kaldi-dir-relative paths absolute."""


from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.recipe.kaldi_dir import import_data_dir


def get_parser():
    p = make_parser("import_data_dir.py",
                    "Copies a Kaldi data dir to <dst-dir>. Paths in wav.scp (and feats.scp, "
                    "cmvn.scp with --keep-feats) that were relative to <base-dir> become absolute; "
                    "nothing is written under <base-dir>.",
                    usage="import_data_dir.py [options] <base-dir> <src-data-dir> <dst-data-dir>",
                    example="import_data_dir.py --keep-feats=false ~/kaldi/egs/wsj/s5 "
                            "~/kaldi/egs/wsj/s5/data/train_si284 data/train_si284")
    add_bool(p, "--keep-feats", False, "keep feats.scp and cmvn.scp")
    p.add_argument("base_dir")
    p.add_argument("src_dir")
    p.add_argument("dst_dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    import_data_dir(args.src_dir, args.dst_dir, args.base_dir, args.keep_feats)


if __name__ == "__main__":
    run_main(main)
