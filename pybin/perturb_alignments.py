#!/usr/bin/env python3
"""Targets for a speed-perturbed data dir (what steps/perturb_ali.sh runs): each sp<F>-<utt>
copy gets <utt>'s imported alignment resampled to its own feature frames."""
import json
import sys

from hybridasr.align.speed_perturb import PerturbAliOptions, perturb_alignments
from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.options import from_values


def get_parser():
    p = make_parser("perturb_alignments.py",
                    "Reads the import dir <src-ali-dir> (steps/import_ali.sh of the unperturbed "
                    "data) and writes the import dir <dir> for <data-dir>, a speed-perturbed "
                    "data dir (utils/data/perturb_data_dir_speed_3way.sh) with features: the "
                    "originals keep their targets, each sp<F>-<utt> gets <utt>'s resampled to "
                    "its feature frame count (utt2num_frames or feats.scp). A copy whose frames "
                    "are more than --max-mismatch off the original's / F is an error naming it.",
                    usage="perturb_alignments.py [options] <src-ali-dir> <data-dir> <dir>",
                    example="perturb_alignments.py exp/ali_train data/train_sp exp/ali_train_sp")
    add_options(p, PerturbAliOptions)
    p.add_argument("src_ali")
    p.add_argument("data_dir")
    p.add_argument("dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    report = perturb_alignments(args.src_ali, args.data_dir, args.dir,
                                from_values(PerturbAliOptions, args))
    summary = {k: v for k, v in vars(report).items() if k != "examples"}
    print(json.dumps(summary), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
