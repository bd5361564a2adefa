#!/usr/bin/env python3
"""Kaldi's utils/mkgraph.sh: the decoding graph HCLG.fst of a lang dir and a model dir."""

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.graph.mkgraph import GraphBuildOptions


def get_parser():
    p = make_parser("mkgraph.py",
                    "Builds <graph-dir>/HCLG.fst (a const FST) from <lang-dir> (L_disambig.fst, "
                    "G.fst, phones/) and <model-dir> (tree, final.mdl), with words.txt, "
                    "phones.txt, phones/, num_pdfs and disambig_tid.int beside it, as Kaldi's "
                    "utils/mkgraph.sh; nothing is written into the lang dir.",
                    usage="mkgraph.py [options] <lang-dir> <model-dir> <graph-dir>",
                    example="mkgraph.py data/lang_test exp/tri1 exp/tri1/graph")
    add_options(p, GraphBuildOptions)
    p.add_argument("lang_dir")
    p.add_argument("model_dir")
    p.add_argument("graph_dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.graph.mkgraph import make_graph

    from hybridasr.options import from_values

    make_graph(args.lang_dir, args.model_dir, args.graph_dir,
               from_values(GraphBuildOptions, args))
    return 0


if __name__ == "__main__":
    run_main(main)
