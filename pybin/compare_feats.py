#!/usr/bin/env python3
"""Whether two feature tables hold the same features (Kaldi's compare-feats asks the same):
the relative rms difference of the utterances they share, per-utterance means removed; one
JSON object on stdout (run.sh: are the features made here the GMM's own?)."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    from hybridasr.features.compare import SAME_FEATURES_MAX_REL_RMS

    p = make_parser("compare_feats.py",
                    "Compares the utterances two feats.scp share (at most --max-utts, in the "
                    "first's order): each cut to the shorter, its mean removed; prints "
                    '{"utterances", "frames_differ", "rel_rms", "same", "threshold"} (and '
                    '"why" where none is shared or the dims differ). The exit status is 0 '
                    "either way; only unreadable input is an error.",
                    usage="compare_feats.py [options] <feats-scp1> <feats-scp2>",
                    example="compare_feats.py --base2=/kaldi/egs/x/s5 data/test/feats.scp "
                            "/kaldi/egs/x/s5/data/test/feats.scp")
    p.add_argument("--base1", default="", help="the dir relative entries of the first are in")
    p.add_argument("--base2", default="", help="the dir relative entries of the second are in "
                                               "(a Kaldi dir's feats.scp: its s5 dir)")
    p.add_argument("--max-utts", type=int, default=20, help="utterances compared at most")
    p.add_argument("--threshold", type=float, default=SAME_FEATURES_MAX_REL_RMS,
                   help="the largest relative rms difference of the same features")
    p.add_argument("scp1")
    p.add_argument("scp2")
    return p


def main(argv=None):
    import json

    from hybridasr.errors import ConfigError
    from hybridasr.features.compare import compare_feature_tables

    args = get_parser().parse_args(argv)
    if args.max_utts < 1:
        raise ConfigError(f"--max-utts={args.max_utts}: at least 1")
    print(json.dumps(compare_feature_tables(args.scp1, args.scp2, args.base1, args.base2,
                                            args.max_utts, args.threshold), sort_keys=True))
    return 0


if __name__ == "__main__":
    run_main(main)
