#!/usr/bin/env python3
"""Kaldi's gmm-init-mono without the GMM: a monophone tree and a model file holding its
transition model, from a lang dir's topology (the start of a GMM-free system)."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "init_mono.py",
        "Writes the monophone tree (one pdf per phone set and pdf-class; the phones of a line\n"
        "of --shared-phones share their pdfs, as Kaldi's train_mono.sh with phones/sets.int)\n"
        "and a model file holding the TransitionModel alone (the topology's probabilities),\n"
        "which Kaldi's decoders, mkgraph.sh and the toolkit read as a GMM's final.mdl.",
        usage="init_mono.py [options] <topology-in> <model-out> <tree-out>",
        example="init_mono.py --shared-phones=data/lang/phones/sets.int data/lang/topo "
                "exp/flat/mono/final.mdl exp/flat/mono/tree")
    p.add_argument("--shared-phones", default="",
                   help="phone sets sharing pdfs, one set per line (phones/sets.int); "
                        "default: one set per phone")
    p.add_argument("--binary", default="true", choices=["true", "false"],
                   help="write binary (Kaldi's default) or text")
    p.add_argument("topology")
    p.add_argument("model_out")
    p.add_argument("tree_out")
    return p


def main(argv=None):
    from hybridasr.tree.model import init_mono

    args = get_parser().parse_args(argv)
    tm = init_mono(args.topology, args.model_out, args.tree_out,
                   shared_phones=args.shared_phones or None, binary=args.binary == "true")
    print(f"init_mono.py: {tm.num_pdfs} pdfs, {tm.num_transition_ids} transition-ids "
          f"-> {args.model_out}, {args.tree_out}")
    return 0


if __name__ == "__main__":
    run_main(main)
