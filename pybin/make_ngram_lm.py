#!/usr/bin/env python3
"""An n-gram language model (ARPA) estimated from training text, for a lang dir without an LM."""

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.lang.ngram import NgramOptions


def get_parser():
    p = make_parser("make_ngram_lm.py",
                    "Estimates an interpolated n-gram LM (modified Kneser-Ney by default, as "
                    "SRILM's ngram-count -kndiscount -interpolate) from text with one sentence "
                    "a line and writes it as ARPA (gzipped when the name ends in .gz). With "
                    "--vocab (a lang dir's words.txt) words outside it become --oov-symbol, so "
                    "that the LM fits that lang dir (utils/format_lm.sh).",
                    usage="make_ngram_lm.py [options] <text> <arpa-out>",
                    example="make_ngram_lm.py --order=3 --vocab=data/lang/words.txt "
                            "--has-utt-ids=true data/train/text data/local/lm/lm.arpa.gz")
    add_options(p, NgramOptions, "n-gram estimation")
    p.add_argument("text")
    p.add_argument("arpa")
    return p


def main(argv=None):
    from hybridasr.lang.ngram import make_ngram_lm
    from hybridasr.options import from_values

    args = get_parser().parse_args(argv)
    make_ngram_lm(args.text, args.arpa, from_values(NgramOptions, args))
    return 0


if __name__ == "__main__":
    run_main(main)
