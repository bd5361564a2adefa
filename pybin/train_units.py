#!/usr/bin/env python3
"""CTC output units: a sentencepiece model trained on a data dir's transcripts, and each
utterance's unit ids as a Kaldi int-vector table (hybridasr.ctc.units)."""

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.ctc.units import UnitOptions


def get_parser():
    p = make_parser("train_units.py",
                    "Trains a sentencepiece model (unigram or BPE, --vocab-size units, blank "
                    "and <unk> included) on the transcripts of <data>/text and writes into "
                    "<dir>: units.model, units.txt (<blk> 0, <unk> 1, then the pieces), "
                    "targets.ark/targets.scp (each utterance's unit ids, Kaldi int32 vectors), "
                    "num_outputs (the network's output dim) and units_report.json (counts; "
                    "the words the units cannot spell, with their utterances). With "
                    "--model-in an existing units.model encodes <data> (only the targets and "
                    "the report are written).",
                    usage="train_units.py [options] <data-dir> <dir>",
                    example="train_units.py --config=conf/ctc/units.conf "
                            "--vocab=data/lang/words.txt data/train exp/units")
    add_options(p, UnitOptions, "units")
    p.add_argument("--model-in", default="",
                   help="encode <data> with this units.model instead of training one "
                        "(default: \"\", train)")
    p.add_argument("data_dir")
    p.add_argument("dir")
    return p


def main(argv=None):
    import os

    from hybridasr.ctc.units import make_units_dir
    from hybridasr.errors import FormatError
    from hybridasr.options import from_values

    args = get_parser().parse_args(argv)
    text = os.path.join(args.data_dir, "text")
    if not os.path.isfile(text):
        raise FormatError(f"{args.data_dir} has no text (the transcripts to train units on)")
    make_units_dir(text, args.dir, from_values(UnitOptions, args), args.model_in)
    return 0


if __name__ == "__main__":
    run_main(main)
