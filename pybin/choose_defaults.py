#!/usr/bin/env python3
"""The recipe's defaults chosen from the training data's size (hybridasr/recipe/data_defaults.py):
--feat-type, --speed-perturb, --model-config, --batching-config, --flat-model-config,
--schedule-config and --chain-model-config, each with its reason."""
import sys

from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser("choose_defaults.py",
                    "Measures the training data dir (hours of audio from utt2dur, segments or "
                    "the wav headers; utterances; speakers; whether stage 2 can hold out a cv "
                    "set whose words training has) and writes the recipe's defaults chosen "
                    "from it, each with its reason, to <defaults-json>; prints them. A "
                    "<defaults-json> newer than the data dir's files is printed as it is.",
                    usage="choose_defaults.py [options] <data-dir> <defaults-json>",
                    example="choose_defaults.py data/train data/defaults.json")
    add_bool(p, "--use-kaldi-feats", False, "the features are the Kaldi dir's own, not made "
                                            "from the audio (no speed perturbation)")
    add_bool(p, "--flat-start", False, "the targets will be the flat start's alignment "
                                       "(run.sh --ali none), not a GMM's")
    p.add_argument("--get", default="", metavar="CHOICE",
                   help="print only this choice's value (e.g. chain_model_config), its reason "
                        "to stderr; <defaults-json> is read where it is current, never written")
    p.add_argument("data")
    p.add_argument("out")
    return p


def main(argv=None):
    from hybridasr.recipe.data_defaults import (CHOICES, choose_for, describe, is_current,
                                                read_defaults, write_defaults)

    parser = get_parser()
    args = parser.parse_args(argv)
    if args.get:
        if args.get not in CHOICES:
            parser.error(f"--get={args.get}: not a choice ({', '.join(CHOICES)})")
        doc = (read_defaults(args.out) if is_current(args.out, args.data, args.use_kaldi_feats,
                                                     args.flat_start)
               else choose_for(args.data, args.use_kaldi_feats, flat_start=args.flat_start))
        chosen = doc["chosen"][args.get]
        print(f"choose_defaults.py: {args.data}: --{args.get.replace('_', '-')} "
              f"{chosen['value']} ({chosen['why']})", file=sys.stderr)
        print(chosen["value"])
        return 0
    if is_current(args.out, args.data, args.use_kaldi_feats, args.flat_start):
        doc = read_defaults(args.out)
    else:
        doc = choose_for(args.data, args.use_kaldi_feats, flat_start=args.flat_start)
        write_defaults(doc, args.out)
    print(f"choose_defaults.py: the defaults chosen from the data's size ({args.out}):")
    print("\n".join(describe(doc)), flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
