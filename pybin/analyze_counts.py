#!/usr/bin/env python3
"""Kaldi's analyze-counts: frame counts of each class in an archive of integer vectors."""


from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser("analyze_counts.py",
                    "Counts how many frames each class (e.g. pdf-id) has over an archive of "
                    "integer vectors, and writes the counts as a Kaldi vector '[ c0 c1 ... ]' "
                    "(nnet1's ali_train_pdf.counts).",
                    usage="analyze_counts.py [options] <alignments-rspecifier> <counts-wxfilename>",
                    example="analyze_counts.py --binary=false --counts-dim=70 "
                            "'ark:ali_to_pdf.py exp/mono_ali/final.mdl \"ark:gunzip -c "
                            "exp/mono_ali/ali.*.gz|\" ark:- |' exp/dnn/ali_train_pdf.counts")
    add_bool(p, "--binary", True, "write in binary mode (Kaldi's default)")
    p.add_argument("--counts-dim", type=int, default=0,
                   help="number of classes (0: the largest label + 1)")
    add_bool(p, "--rescale-to-probs", False, "divide the counts by their sum")
    p.add_argument("rspecifier")
    p.add_argument("counts_wxfilename")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.align.ali_tools import analyze_counts

    analyze_counts(args.rspecifier, args.counts_wxfilename, binary=args.binary,
                   counts_dim=args.counts_dim, rescale_to_probs=args.rescale_to_probs)
    return 0


if __name__ == "__main__":
    run_main(main)
