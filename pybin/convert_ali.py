#!/usr/bin/env python3
"""Kaldi's convert-ali: alignments of one model and tree converted to another tree and model
(same phones, HMM states and lengths; new pdfs from the new tree's phone windows)."""


from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser("convert_ali.py",
                    "Converts alignments from one decision tree/model to another: each "
                    "phone's frames keep their HMM states and transitions and get the new "
                    "tree's pdfs for the phone's context window. The HMM topologies must be "
                    "equal unless the length changes (--frame-subsampling-factor) or the "
                    "topology does: those phones get a path through the new topology (Kaldi "
                    "makes up a random one; the chain topology has just one).",
                    usage="convert_ali.py [options] <old-model> <new-model> <new-tree> "
                          "<old-alignments-rspecifier> <new-alignments-wspecifier>",
                    example="convert_ali.py exp/mono_ali/final.mdl exp/tri1/final.mdl "
                            "exp/tri1/tree 'ark:gunzip -c exp/mono_ali/ali.1.gz|' "
                            "'ark:|gzip -c > exp/tri1/ali.1.gz'")
    p.add_argument("--frame-subsampling-factor", type=int, default=1,
                   help="convert to a model whose frame rate is this many times lower (chain "
                        "models: 3); each phone's length is subsampled and, where it or the "
                        "topology changed, gets a path through the new topology")
    add_bool(p, "--reorder", True, "write the alignments reordered (self-loops after the "
                                   "forward transition), as Kaldi's graphs are compiled")
    p.add_argument("old_model")
    p.add_argument("new_model")
    p.add_argument("new_tree")
    p.add_argument("old_alignments_rspecifier")
    p.add_argument("new_alignments_wspecifier")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.tree.convert import convert_alignments

    convert_alignments(args.old_model, args.new_model, args.new_tree,
                       args.old_alignments_rspecifier, args.new_alignments_wspecifier,
                       reorder=args.reorder,
                       frame_subsampling_factor=args.frame_subsampling_factor)
    return 0


if __name__ == "__main__":
    run_main(main)
