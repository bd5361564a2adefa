#!/usr/bin/env python3
"""Kaldi's acc-tree-stats: Gaussian statistics of each phone-in-context and pdf-class of an
alignment, for building a decision tree (build_tree.py)."""


from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.tree.stats import TreeFeatureOptions, TreeStatsOptions


def get_parser():
    p = make_parser("acc_tree_stats.py",
                    "Accumulates tree statistics: for every phone window (--context-width, "
                    "--central-position) and pdf-class of the alignments, the count, sum and "
                    "sum of squares of the features aligned to it. The features are "
                    "<data-dir>'s feats.scp with per-speaker CMVN (cmvn.scp, utt2spk) and "
                    "deltas, as Kaldi's train_deltas.sh gives acc-tree-stats. Utterances "
                    "without an alignment, or of another length, are skipped. Writes the "
                    "toolkit's own statistics file (numpy .npz), not Kaldi's treeacc.",
                    usage="acc_tree_stats.py [options] <model> <data-dir> "
                          "<alignments-rspecifier> <stats-out>",
                    example="acc_tree_stats.py --ci-phones=1:2:3:4:5 exp/mono_ali/final.mdl "
                            "data/train/split4/1 'ark:gunzip -c exp/mono_ali/ali.1.gz|' "
                            "exp/tree/1.treeacc.npz")
    add_options(p, TreeStatsOptions, "tree statistics")
    add_options(p, TreeFeatureOptions, "features")
    p.add_argument("model")
    p.add_argument("data_dir")
    p.add_argument("alignments_rspecifier")
    p.add_argument("stats_out")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.errors import FormatError
    from hybridasr.kaldi.io.intvec import read_int_vectors
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.options import from_values
    from hybridasr.tree.accumulate import accumulate_tree_stats
    from hybridasr.tree.stats import write_tree_stats

    opts = from_values(TreeStatsOptions, args)
    opts.check()
    feat_opts = from_values(TreeFeatureOptions, args)
    tm = read_transition_model(args.model)
    stats, report = accumulate_tree_stats(tm, args.data_dir,
                                          read_int_vectors(args.alignments_rspecifier),
                                          opts, feat_opts, name=args.stats_out)
    if report.done == 0:
        raise FormatError(f"no utterance of {args.data_dir} had a usable alignment in "
                          f"{args.alignments_rspecifier}")
    write_tree_stats(stats, args.stats_out)
    return 0


if __name__ == "__main__":
    run_main(main)
