#!/usr/bin/env python3
"""Imports a Kaldi GMM alignment dir as hybrid training targets (what steps/import_ali.sh runs)."""
import json
import sys

from hybridasr.align.importer import ImportOptions
from hybridasr.cli import add_options, make_parser, run_main


def get_parser():
    p = make_parser("import_alignments.py",
                    "Reads <ali-dir>/final.mdl and ali.*.gz, maps transition-ids to pdf-ids, "
                    "matches each alignment to the feature frame count of <data-dir> "
                    "(utt2num_frames or feats.scp), and writes targets.ark/scp, "
                    "target_lengths, pdf_counts, num_pdfs, copies of "
                    "final.mdl/tree/phones.txt and import_report.json into <dir>. Nothing is "
                    "left in <dir> on failure.",
                    usage="import_alignments.py [options] <ali-dir> <data-dir> <dir>",
                    example="import_alignments.py exp/tri3_ali data/train exp/tri3_ali_import")
    add_options(p, ImportOptions)
    p.add_argument("ali_dir")
    p.add_argument("data_dir")
    p.add_argument("dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.align.importer import import_alignments
    from hybridasr.errors import ConfigError

    if args.label_delay != 0:
        raise ConfigError(f"--label-delay={args.label_delay}: labels are no longer delayed at "
                          f"import (decoding could not undo it); import without it and train "
                          f"with --label-delay={args.label_delay} (train.py, or "
                          f"steps/nnet/train.sh --train-opts), which the model stores and "
                          f"decoding undoes")
    report = import_alignments(args.ali_dir, args.data_dir, args.dir,
                               length_tolerance=args.length_tolerance, lang_dir=args.lang)
    summary = {k: v for k, v in vars(report).items() if k != "examples"}
    print(json.dumps(summary), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
