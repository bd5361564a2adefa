#!/usr/bin/env python3
"""Kaldi's arpa2fst with a symbol table: G.fst from an ARPA language model."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("arpa_to_fst.py",
                    "Compiles an ARPA language model (plain or .gz) into G.fst as Kaldi's "
                    "'arpa2fst --disambig-symbol=#0 --read-symbol-table=words.txt' does "
                    "(n-grams with words missing from the symbol table are skipped and "
                    "counted), with utils/format_lm.sh's checks.",
                    usage="arpa_to_fst.py --read-symbol-table=<words.txt> [options] "
                          "<arpa-file> <G.fst>",
                    example="arpa_to_fst.py --disambig-symbol=#0 "
                            "--read-symbol-table=data/lang/words.txt lm.arpa.gz G.fst")
    p.add_argument("--read-symbol-table", required=True,
                   help="the lang dir's words.txt (required here)")
    p.add_argument("--disambig-symbol", default="#0",
                   help="symbol on the back-off arcs (default: #0)")
    p.add_argument("--lexicon", default="",
                   help="lexicon for the check that no cycle of words without a "
                        "pronunciation is reachable (default: only #0 is checked)")
    p.add_argument("arpa")
    p.add_argument("fst")
    return p


def main(argv=None):
    from hybridasr.lang.arpa_to_fst import arpa_to_fst

    args = get_parser().parse_args(argv)
    arpa_to_fst(args.arpa, args.read_symbol_table, args.fst, args.lexicon or None,
                args.disambig_symbol)
    return 0


if __name__ == "__main__":
    run_main(main)
