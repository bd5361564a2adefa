#!/usr/bin/env python3
"""Word error rate like Kaldi's compute-wer (same counts, same three output lines)."""
import sys

from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "compute_wer.py",
        "Compute WER by comparing two transcriptions (Kaldi text archives, integer or, with\n"
        "--text, symbols) and print %WER, %SER and the number of scored sentences as Kaldi's\n"
        "compute-wer does. Optional third argument: per-word alignment statistics.",
        usage="compute_wer.py [options] <ref-rspecifier> <hyp-rspecifier> [<stats-out>]",
        example="compute_wer.py --text --mode=present ark:data/test/text ark:hyp.txt")
    p.add_argument("--mode", default="strict", choices=["present", "all", "strict"],
                   help='"present": score those with a hypothesis; "all": a missing '
                        'hypothesis is empty; "strict": fail on a missing one')
    add_bool(p, "--text", False, "expect symbols (words), not integers")
    p.add_argument("ref_rspecifier")
    p.add_argument("hyp_rspecifier")
    p.add_argument("stats_out", nargs="?")
    return p


def main(argv=None):
    from hybridasr.kaldi.io.table import read_text_rspecifier
    from hybridasr.decode.wer import check_integer_tables, compute_wer, write_alignment_stats
    from hybridasr.errors import FormatError

    argv = list(sys.argv[1:] if argv is None else argv)
    # a bare --text must not swallow the next (positional) argument, as in Kaldi
    argv = ["--text=true" if a == "--text" else a for a in argv]
    args = get_parser().parse_args(argv)
    if args.ref_rspecifier.endswith("-") and args.hyp_rspecifier.endswith("-"):
        raise FormatError("reference and hypothesis cannot both be read from stdin")
    refs = read_text_rspecifier(args.ref_rspecifier)
    hyps = read_text_rspecifier(args.hyp_rspecifier)
    if not args.text:
        check_integer_tables(refs, hyps)
    stats = compute_wer(refs, hyps, args.mode)
    sys.stdout.write(stats.format())
    sys.stdout.flush()
    if args.stats_out:
        write_alignment_stats(refs, hyps, args.stats_out)
    return 0


if __name__ == "__main__":
    run_main(main)
