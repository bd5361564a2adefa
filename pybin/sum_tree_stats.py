#!/usr/bin/env python3
"""Kaldi's sum-tree-stats: adds tree statistics files (of acc_tree_stats.py) together."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("sum_tree_stats.py",
                    "Sums tree statistics (acc_tree_stats.py's files, e.g. one per job): the "
                    "statistics of the same phone window and pdf-class are added.",
                    usage="sum_tree_stats.py [options] <stats-out> <stats-in1> [<stats-in2> ...]",
                    example="sum_tree_stats.py exp/tree/treeacc.npz exp/tree/1.treeacc.npz "
                            "exp/tree/2.treeacc.npz")
    p.add_argument("stats_out")
    p.add_argument("stats_in", nargs="+")
    return p


def main(argv=None):
    import logging

    args = get_parser().parse_args(argv)
    from hybridasr.tree.stats import read_tree_stats, sum_tree_stats, write_tree_stats

    total = sum_tree_stats([read_tree_stats(p) for p in args.stats_in], name=args.stats_out)
    write_tree_stats(total, args.stats_out)
    logging.getLogger("sum_tree_stats.py").info(
        "wrote the sum of %d files (%d separate statistics, %.0f frames)", len(args.stats_in),
        total.num_events, total.total_count())
    return 0


if __name__ == "__main__":
    run_main(main)
