#!/usr/bin/env python3
"""The CTC decoding graph TLG (EESEN's tokens, lexicon and grammar) of a units dir and a lang
dir with G.fst, written as a graph dir the toolkit's decoders read (hybridasr.ctc.graph)."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("make_ctc_graph.py",
                    "Builds TLG = T o min(det(L o G)): T the CTC token transducer of the units "
                    "(blank 0; input label unit+1), L every word of <lang-dir>/words.txt "
                    "spelled with the units (words they cannot spell are named and left out), "
                    "G the lang dir's grammar. Writes <graph-dir>/TLG.fst (and HCLG.fst, a "
                    "link to it), words.txt, units.txt, num_pdfs, tlg.json and final.mdl: a "
                    "transition model mapping transition-id u+1 to column u, with which "
                    "decode_faster_mapped.py and latgen_faster_mapped.py (and Kaldi's "
                    "decoders) search TLG with the network's CTC log-posteriors.",
                    usage="make_ctc_graph.py [options] <units-dir> <lang-dir> <graph-dir>",
                    example="make_ctc_graph.py exp/units data/lang_test exp/blstm_ctc/graph")
    p.add_argument("units_dir", help="made by steps/nnet/train_units.sh")
    p.add_argument("lang_dir", help="a lang dir with words.txt and G.fst")
    p.add_argument("graph_dir")
    return p


def main(argv=None):
    from hybridasr.ctc.graph import make_ctc_graph

    args = get_parser().parse_args(argv)
    make_ctc_graph(args.units_dir, args.lang_dir, args.graph_dir)
    return 0


if __name__ == "__main__":
    run_main(main)
