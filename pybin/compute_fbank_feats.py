#!/usr/bin/env python3
"""Kaldi's compute-fbank-feats: fbank features from wav.scp into an ark/scp (see --help)."""


from hybridasr.cli import run_main
from hybridasr.features.program import make_feature_parser, run_feature_program


def get_parser():
    return make_feature_parser("fbank")


def main(argv=None):
    return run_feature_program("fbank", argv)


if __name__ == "__main__":
    run_main(main)
