#!/usr/bin/env python3
"""Kaldi's utils/format_lm.sh: a lang dir with G.fst made from an ARPA language model."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("format_lm.py",
                    "Copies the lang dir (not its G.fst) to <out-lang-dir> and writes there "
                    "G.fst compiled from the ARPA file (plain or .gz) as Kaldi's "
                    "'arpa2fst --disambig-symbol=#0 --read-symbol-table=words.txt' does: "
                    "n-grams with words missing from words.txt are skipped and counted. The "
                    "lexicon is used for the check that G has no cycle of words without a "
                    "pronunciation.",
                    usage="format_lm.py <lang-dir> <arpa-file> <lexicon> <out-lang-dir>",
                    example="format_lm.py data/lang data/local/lm/lm.arpa.gz "
                            "data/local/dict/lexicon.txt data/lang_test")
    p.add_argument("lang_dir")
    p.add_argument("arpa")
    p.add_argument("lexicon")
    p.add_argument("out_dir")
    return p


def main(argv=None):
    from hybridasr.lang.arpa_to_fst import format_lm

    args = get_parser().parse_args(argv)
    format_lm(args.lang_dir, args.arpa, args.lexicon, args.out_dir)
    return 0


if __name__ == "__main__":
    run_main(main)
