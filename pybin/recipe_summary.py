#!/usr/bin/env python3
"""Prints a recipe's summary: best WER next to the GMM system's, training speed, paths."""
import json
import os

from hybridasr.cli import make_parser, run_main
from hybridasr.recipe.summary import format_summary, summarize
from hybridasr.utils.atomic import atomic_open


def get_parser():
    p = make_parser("recipe_summary.py",
                    "Prints the best WER of <decode-dir> next to the GMM system's (and the best "
                    "WER of each further decode dir, e.g. of a dev set), the training "
                    "time, frames/s and padding ratio of <exp-dir>, and where the curves and logs "
                    "are. Also writes <exp-dir>/summary.json.",
                    usage="recipe_summary.py [options] <exp-dir> <decode-dir> [<decode-dir> ...]",
                    example="recipe_summary.py --gmm-decode-dir=~/kaldi/egs/wsj/s5/exp/tri4b/"
                            "decode_tgpr_dev93 exp/blstm exp/blstm/decode_test")
    p.add_argument("--gmm-decode-dir", default=None, help="the GMM system's decode dir")
    p.add_argument("--model-name", default="",
                   help="what the model is, printed first (e.g. 'flat-start monophone network')")
    p.add_argument("--label", default="hybrid model",
                   help="what the first WER line calls the model (e.g. 'CTC model')")
    p.add_argument("exp_dir")
    p.add_argument("decode_dir")
    p.add_argument("more_decode_dirs", nargs="*", help="further decode dirs (other data sets)")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    s = summarize(args.exp_dir, args.decode_dir, args.gmm_decode_dir, args.more_decode_dirs,
                  args.model_name)
    s["label"] = args.label
    with atomic_open(os.path.join(args.exp_dir, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, sort_keys=True)
    print(format_summary(s))
    return 0 if "wer" in s else 1


if __name__ == "__main__":
    run_main(main)
