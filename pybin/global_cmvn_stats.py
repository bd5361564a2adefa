#!/usr/bin/env python3
"""The training set's global CMVN stats: the sum of its per-speaker stats (Kaldi's
``matrix-sum --binary=false scp:data/train/cmvn.scp global_cmvn.stats``), what online CMVN of
a lone recording starts from (transcribe.py)."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("global_cmvn_stats.py",
                    "Sums a table of CMVN stats (2 x (dim+1) matrices) into one matrix, "
                    "written in Kaldi's text format.",
                    usage="global_cmvn_stats.py <stats-rspecifier> <stats-wxfilename>",
                    example="global_cmvn_stats.py scp:data/train/cmvn.scp "
                            "exp/blstm/global_cmvn.stats")
    p.add_argument("stats_rspecifier")
    p.add_argument("stats_wxfilename")
    return p


def main(argv=None):
    from hybridasr.features.online_cmvn import global_cmvn_stats, write_stats

    args = get_parser().parse_args(argv)
    write_stats(args.stats_wxfilename, global_cmvn_stats(args.stats_rspecifier))
    return 0


if __name__ == "__main__":
    run_main(main)
