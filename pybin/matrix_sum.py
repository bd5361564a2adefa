#!/usr/bin/env python3
"""Kaldi's matrix-sum (table mode): the weighted sum of matrix tables, utterance by utterance
(steps/nnet/decode.sh --gmm-dir: a network's and a GMM's log-likelihoods)."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("matrix_sum.py",
                    "Writes, for each utterance of the first table, scale1 x its matrix + "
                    "scale2 x the second table's (+ each further table's) matrix of that "
                    "utterance. An utterance missing from another table is skipped with a "
                    "warning (counted); matrices of different shapes are an error.",
                    usage="matrix_sum.py [options] <matrix-rspecifier1> <matrix-rspecifier2> "
                          "[<matrix-rspecifier3> ...] <matrix-wspecifier>",
                    example="matrix_sum.py --scale1=0.5 --scale2=0.5 ark:net.ark "
                            "scp:gmm_loglikes.scp ark,scp:loglikes.ark,loglikes.scp")
    p.add_argument("--scale1", type=float, default=1.0, help="scale of the first table")
    p.add_argument("--scale2", type=float, default=1.0, help="scale of the second table "
                                                              "(further tables: 1.0)")
    p.add_argument("tables", nargs="+", metavar="specifier",
                   help="two or more rspecifiers, then the wspecifier")
    return p


def main(argv=None):
    from hybridasr.decode.score_fusion import sum_matrix_tables

    parser = get_parser()
    args = parser.parse_args(argv)
    if len(args.tables) < 3:
        parser.error("give at least two tables to sum and the output")
    ins, out = args.tables[:-1], args.tables[-1]
    scales = [args.scale1, args.scale2] + [1.0] * (len(ins) - 2)
    sum_matrix_tables(ins, scales, out)
    return 0


if __name__ == "__main__":
    run_main(main)
