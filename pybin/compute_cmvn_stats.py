#!/usr/bin/env python3
"""Kaldi's compute-cmvn-stats: per-speaker (or per-utterance) CMVN stats of a feature table."""


from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.errors import ConfigError
from hybridasr.features.cmvn_table import compute_cmvn_table
from hybridasr.kaldi.io.specifier import scp_rxfilename, text_table_path


def get_parser():
    p = make_parser("compute_cmvn_stats.py",
                    "Computes CMVN stats in Kaldi's format (a 2 x (dim+1) double matrix: sums "
                    "and count, sums of squares), per speaker with --spk2utt, else per "
                    "utterance.",
                    usage="compute_cmvn_stats.py [options] <feats-rspecifier> <stats-wspecifier>",
                    example="compute_cmvn_stats.py --spk2utt=ark:data/train/spk2utt "
                            "scp:data/train/feats.scp "
                            "ark,scp:mfcc/cmvn_train.ark,mfcc/cmvn_train.scp")
    p.add_argument("--spk2utt", default="", help="accumulate per speaker: ark:<spk2utt>")
    add_bool(p, "--fake", False, "write fake stats (mean 0, variance 1): no normalization")
    p.add_argument("--fake-dims", default="",
                   help="colon-separated dimensions that get fake stats, e.g. 13:14")
    add_bool(p, "--binary", True, "binary output (text is not supported)")
    p.add_argument("feats_rspecifier")
    p.add_argument("stats_wspecifier")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    if not args.binary:
        raise ConfigError("--binary=false is not supported")
    try:
        dims = [int(d) for d in args.fake_dims.split(":") if d]
    except ValueError:
        raise ConfigError(f"--fake-dims={args.fake_dims}: expected e.g. 13:14") from None
    compute_cmvn_table(scp_rxfilename(args.feats_rspecifier), args.stats_wspecifier,
                       spk2utt=text_table_path(args.spk2utt) if args.spk2utt else None,
                       fake=args.fake, fake_dims_list=dims)
    return 0


if __name__ == "__main__":
    run_main(main)
