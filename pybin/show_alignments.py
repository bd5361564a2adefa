#!/usr/bin/env python3
"""Kaldi's show-alignments: alignments in human-readable form, phone by phone."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("show_alignments.py",
                    "Prints each alignment as its transition-ids grouped by phone, with the "
                    "phone names under them (for debugging).",
                    usage="show_alignments.py [options] <phone-syms> <model> "
                          "<alignments-rspecifier>",
                    example="show_alignments.py data/lang/phones.txt exp/mono_ali/final.mdl "
                            "'ark:gunzip -c exp/mono_ali/ali.1.gz|'")
    p.add_argument("phone_syms")
    p.add_argument("model")
    p.add_argument("alignments_rspecifier")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.align.ali_tools import show_alignments

    show_alignments(args.phone_syms, args.model, args.alignments_rspecifier)
    return 0


if __name__ == "__main__":
    run_main(main)
