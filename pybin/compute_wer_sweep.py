#!/usr/bin/env python3
"""compute_wer.py for every (LM weight, penalty) of a scoring sweep in one process: one
hypothesis stream whose keys are <set>|<utterance>, one compute-wer output file per set."""
import shlex
import sys

from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "compute_wer_sweep.py",
        "Compute WER of several hypothesis sets against one reference, as compute_wer.py\n"
        "does for each: the hypothesis keys are <set>|<utterance>, and each set's three\n"
        "lines (%WER, %SER, Scored) go to the output pattern with SET replaced by its name.",
        usage="compute_wer_sweep.py [options] --sets=<a,b,...> <ref-rspecifier> "
              "<hyp-rspecifier> <output-pattern>",
        example="compute_wer_sweep.py --text --mode=present --sets=4_0.0,5_0.0 "
                "ark:exp/dnn/decode/scoring/test_filt.txt ark,p:- exp/dnn/decode/wer_SET")
    p.add_argument("--mode", default="strict", choices=["present", "all", "strict"],
                   help='as compute_wer.py\'s: "present": score those with a hypothesis; '
                        '"all": a missing hypothesis is empty; "strict": fail on a missing one')
    add_bool(p, "--text", False, "expect symbols (words), not integers")
    p.add_argument("--sets", required=True,
                   help="comma-separated set names: every one gets an output file")
    p.add_argument("ref_rspecifier")
    p.add_argument("hyp_rspecifier")
    p.add_argument("output_pattern", help="a file name containing SET")
    return p


def main(argv=None):
    from hybridasr.decode.wer import check_integer_tables, compute_wer_sets
    from hybridasr.errors import ConfigError
    from hybridasr.utils.atomic import atomic_open
    from hybridasr.kaldi.io.table import read_text_rspecifier

    argv = list(sys.argv[1:] if argv is None else argv)
    argv = ["--text=true" if a == "--text" else a for a in argv]  # as compute_wer.py
    args = get_parser().parse_args(argv)
    if "SET" not in args.output_pattern:
        raise ConfigError(f"the output pattern {args.output_pattern!r} has no SET")
    sets = [x for x in args.sets.split(",") if x]
    refs = read_text_rspecifier(args.ref_rspecifier)
    hyps = read_text_rspecifier(args.hyp_rspecifier)
    if not args.text:
        check_integer_tables(refs, hyps)
    # each file as compute_wer.py's stdout and stderr on that set would be (scoring's
    # ">&"): its command line (run_main's echo, as Kaldi's binaries), then its three lines
    echo = " ".join(shlex.quote(a) for a in [
        "compute_wer.py", *(["--text"] if args.text else []), f"--mode={args.mode}",
        args.ref_rspecifier, args.hyp_rspecifier])
    for name, stats in compute_wer_sets(refs, hyps, sets, args.mode).items():
        with atomic_open(args.output_pattern.replace("SET", name), "w", encoding="utf-8",
                         newline="\n") as f:
            f.write(echo + "\n" + stats.format())
    return 0


if __name__ == "__main__":
    run_main(main)
