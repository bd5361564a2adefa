#!/usr/bin/env python3
"""Checks an existing Kaldi s5 dir before a recipe uses it (read only)."""
import json

from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.recipe.kaldi_dir import check_kaldi_dir


def get_parser():
    p = make_parser("check_kaldi_dir.py",
                    "Checks that a Kaldi s5 dir has what the recipe needs, and that its alignment "
                    "model and decoding graph agree on the number of pdfs. Prints facts as JSON.",
                    usage="check_kaldi_dir.py [options] <kaldi-dir>",
                    example="check_kaldi_dir.py --ali=exp/tri3_ali --graph=exp/tri3/graph "
                            "~/kaldi/egs/wsj/s5")
    p.add_argument("--train", default="data/train", help="training data dir, inside <kaldi-dir>")
    p.add_argument("--test", default="data/test", help="test data dir, inside <kaldi-dir>")
    p.add_argument("--lang", default="data/lang",
                   help="lang dir, inside <kaldi-dir>; or a dict dir (data/local/dict) the "
                        "recipe makes its lang dir from (utils/prepare_lang.sh): with a GMM "
                        "--ali, checked that the phones made from it are the alignment "
                        "model's")
    p.add_argument("--ali", default="exp/mono_ali",
                   help="GMM alignment dir, inside <kaldi-dir>; none: no GMM (flat start), "
                        "--lang may be a dict dir, no graph needed")
    p.add_argument("--graph", default="exp/mono/graph", help="graph dir, inside <kaldi-dir>")
    add_bool(p, "--use-kaldi-feats", False, "features will come from the Kaldi dir")
    add_bool(p, "--lm-given", False, "with --ali none: an LM is given (--lm-arpa/--lm-text), so "
                                     "the lang dir needs no G.fst")
    p.add_argument("kaldi_dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    facts = check_kaldi_dir(args.kaldi_dir, args.train, args.test, args.lang, args.ali,
                            args.graph, args.use_kaldi_feats, args.lm_given)
    print(json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    run_main(main)
