#!/usr/bin/env python3
"""Writes the scoring reference of steps/score.sh and counts its words outside the graph's
vocabulary (hybridasr/decode/reference.py)."""
from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "score_reference.py",
        "Copies a reference text archive for scoring and counts its words that are not in the "
        "word symbol table: those only by case or punctuation, punctuation-only tokens, and "
        "out-of-vocabulary words. With --normalize=true the first become their normalised "
        "form and the second are dropped, as alignment reads transcripts. Prints the counts "
        "to stderr.",
        usage="score_reference.py [options] <words.txt> <text-in|-> <text-out>",
        example="score_reference.py --normalize=true exp/tri1/graph/words.txt "
                "data/test/text exp/blstm/decode_test/scoring/test_filt.txt")
    add_bool(p, "--normalize", False, "write the normalised reference (default: as given)")
    p.add_argument("--report-json", default="", help="the counts as JSON here too")
    p.add_argument("words")
    p.add_argument("text_in")
    p.add_argument("text_out")
    return p


def main(argv=None):
    import json
    import sys

    from hybridasr.decode.reference import read_reference
    from hybridasr.kaldi.io.table import read_text_archive, write_lines
    from hybridasr.kaldi.symbol_table import read_symbol_ids
    from hybridasr.utils.atomic import atomic_open

    args = get_parser().parse_args(argv)
    ref, rep = read_reference(read_text_archive(args.text_in), read_symbol_ids(args.words),
                              normalize=args.normalize)
    write_lines(args.text_out, (" ".join([k] + w) for k, w in ref.items()))
    if args.report_json:
        with atomic_open(args.report_json) as f:
            json.dump(rep.as_dict(), f, indent=1, ensure_ascii=False)
            f.write("\n")
    print(f"score_reference.py: {args.text_in}: {rep.summary()}"
          + ("; normalised" if args.normalize else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
