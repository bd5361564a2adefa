#!/usr/bin/env python3
"""Kaldi's compute-mfcc-feats and compute-fbank-feats: features from wav.scp into an ark/scp
(see --help). ``compute_fbank_feats.py`` is a link to this file: the name it is called by
chooses the feature type (``FEATURE_TYPES``)."""
import os

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.features.make_feats import FeatureTableOptions, compute_feature_table
from hybridasr.features.types import FEATURE_TYPES

KIND = os.path.basename(__file__).split("_")[1]  # compute_<kind>_feats.py
OPTIONS = FEATURE_TYPES.options_class(KIND)


def get_parser():
    prog = f"compute_{KIND}_feats.py"
    p = make_parser(
        prog, f"Computes Kaldi-compatible {KIND.upper()} features (same options, defaults and "
              f"numbers as Kaldi's compute-{KIND}-feats) into an ark/scp; --segments, "
              f"--compress and --write-num-frames do what extract-segments and copy-feats "
              f"add in Kaldi's make_{KIND}.sh.",
        usage=f"{prog} [options] <wav-rspecifier> <feats-wspecifier>",
        example=f"{prog} --config=conf/{KIND}.conf --compress=true scp:data/train/wav.scp "
                f"ark,scp:{KIND}/raw_{KIND}_train.1.ark,{KIND}/raw_{KIND}_train.1.scp")
    add_options(p, OPTIONS, f"{KIND} options (Kaldi's)")
    add_options(p, FeatureTableOptions, "the job")
    p.add_argument("wav_rspecifier")
    p.add_argument("feats_wspecifier")
    return p


def main(argv=None):
    from hybridasr.kaldi.io.specifier import scp_rxfilename
    from hybridasr.options import from_values

    args = get_parser().parse_args(argv)
    table = from_values(FeatureTableOptions, args)
    compute_feature_table(scp_rxfilename(args.wav_rspecifier), args.feats_wspecifier,
                          from_values(OPTIONS, args), table)
    return 0


if __name__ == "__main__":
    run_main(main)
