#!/usr/bin/env python3
"""Kaldi's copy-feats: copies a feature table, optionally compressing it (ark/scp out)."""


from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.features.copy_table import copy_feature_table


def get_parser():
    p = make_parser("copy_feats.py",
                    "Copies features (scp: or ark: input) to an ark/scp, compressed with "
                    "--compress=true as Kaldi's copy-feats.",
                    usage="copy_feats.py [options] <feats-rspecifier> <feats-wspecifier>",
                    example="copy_feats.py --compress=true scp:data/train/feats.scp "
                            "ark,scp:mfcc/c.ark,mfcc/c.scp")
    add_bool(p, "--compress", False, "write Kaldi compressed matrices")
    p.add_argument("--compression-method", type=int, default=1, choices=range(1, 8),
                   help="Kaldi's CompressionMethod (1 = automatic, as copy-feats) (default: 1)")
    p.add_argument("--write-num-frames", default="",
                   help="write frame counts, e.g. ark,t:utt2num_frames")
    p.add_argument("feats_rspecifier")
    p.add_argument("feats_wspecifier")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    copy_feature_table(args.feats_rspecifier, args.feats_wspecifier, compress=args.compress,
                       compression_method=args.compression_method,
                       num_frames=args.write_num_frames or None)
    return 0


if __name__ == "__main__":
    run_main(main)
