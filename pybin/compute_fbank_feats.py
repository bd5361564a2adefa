#!/usr/bin/env python3
"""Kaldi's compute-fbank-feats: fbank features from wav.scp into an ark/scp (see --help)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hybridasr.cli import run_main  # noqa: E402
from hybridasr.features.program import make_feature_parser, run_feature_program  # noqa: E402


def get_parser():
    return make_feature_parser("fbank")


def main(argv=None):
    return run_feature_program("fbank", argv)


if __name__ == "__main__":
    run_main(main)
