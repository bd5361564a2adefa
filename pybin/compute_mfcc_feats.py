#!/usr/bin/env python3
"""Kaldi's compute-mfcc-feats: mfcc features from wav.scp into an ark/scp (see --help)."""


from hybridasr.cli import run_main
from hybridasr.features.program import make_feature_parser, run_feature_program


def get_parser():
    return make_feature_parser("mfcc")


def main(argv=None):
    return run_feature_program("mfcc", argv)


if __name__ == "__main__":
    run_main(main)
