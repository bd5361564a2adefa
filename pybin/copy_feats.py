#!/usr/bin/env python3
"""Kaldi's copy-feats: copies a feature table, optionally compressing it (ark/scp out)."""


from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.features.copy_table import copy_feature_table
from hybridasr.features.make_feats import FeatureWriteOptions


def get_parser():
    p = make_parser("copy_feats.py",
                    "Copies features (scp: or ark: input) to an ark/scp, compressed with "
                    "--compress=true as Kaldi's copy-feats.",
                    usage="copy_feats.py [options] <feats-rspecifier> <feats-wspecifier>",
                    example="copy_feats.py --compress=true scp:data/train/feats.scp "
                            "ark,scp:mfcc/c.ark,mfcc/c.scp")
    add_options(p, FeatureWriteOptions)
    p.add_argument("feats_rspecifier")
    p.add_argument("feats_wspecifier")
    return p


def main(argv=None):
    from hybridasr.options import from_values

    args = get_parser().parse_args(argv)
    o = from_values(FeatureWriteOptions, args)
    copy_feature_table(args.feats_rspecifier, args.feats_wspecifier, compress=o.compress,
                       compression_method=o.compression_method,
                       num_frames=o.write_num_frames or None)
    return 0


if __name__ == "__main__":
    run_main(main)
