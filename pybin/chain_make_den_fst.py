#!/usr/bin/env python3
"""Kaldi's chain-make-den-fst: den.fst and normalization.fst from the chain tree, its
transition model and the phone LM."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("chain_make_den_fst.py",
                    "Composes the phone LM with the tree's context and HMMs into the "
                    "denominator graph (an epsilon-free acceptor of pdf-id + 1, minimised) and "
                    "its normalization FST (initial probabilities, every state final), both "
                    "written in OpenFst's binary format as Kaldi's chain binaries read them.",
                    usage="chain_make_den_fst.py [options] <tree> <transition-model> "
                          "<phone-lm-fst> <den-fst-out> <normalization-fst-out>",
                    example="chain_make_den_fst.py exp/chain/tree/tree "
                            "exp/chain/tree/final.mdl exp/chain/phone_lm.fst exp/chain/den.fst "
                            "exp/chain/normalization.fst")
    p.add_argument("tree")
    p.add_argument("transition_model")
    p.add_argument("phone_lm")
    p.add_argument("den_fst_out")
    p.add_argument("normalization_fst_out")
    return p


def main(argv=None):
    import logging

    args = get_parser().parse_args(argv)
    from hybridasr.chain.den_graph import make_den_fsts

    den, norm = make_den_fsts(args.tree, args.transition_model, args.phone_lm,
                              args.den_fst_out, args.normalization_fst_out)
    logging.getLogger("chain_make_den_fst.py").info(
        "den.fst: %d states, %d arcs; normalization.fst: %d states, %d arcs", den.num_states,
        den.num_arcs, norm.num_states, norm.num_arcs)
    return 0


if __name__ == "__main__":
    run_main(main)
