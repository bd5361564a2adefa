#!/usr/bin/env python3
"""The default leaf count of a chain tree from the size of its tree statistics."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("chain_num_leaves.py",
                    "Prints the number of leaves for a chain tree built from <tree-stats> "
                    "(accumulated at the subsampled frame rate): Kaldi's 3500 for 5 hours "
                    "(mini_librispeech) scaled by the square root of the data's hours, within "
                    "[50, 7000].",
                    usage="chain_num_leaves.py [options] <tree-stats>",
                    example="chain_num_leaves.py --frame-subsampling-factor=3 "
                            "exp/chain/tree/treeacc.npz")
    p.add_argument("--frame-subsampling-factor", type=int, default=3,
                   help="the factor the statistics' frames were subsampled by")
    p.add_argument("--frame-shift", type=float, default=0.01,
                   help="frame shift of the features in seconds")
    p.add_argument("tree_stats")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.chain.tree_size import chain_num_leaves
    from hybridasr.tree.stats import read_tree_stats

    frames = read_tree_stats(args.tree_stats).total_count()
    print(chain_num_leaves(frames, args.frame_shift, args.frame_subsampling_factor))
    return 0


if __name__ == "__main__":
    run_main(main)
