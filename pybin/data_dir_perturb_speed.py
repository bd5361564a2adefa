#!/usr/bin/env python3
"""Kaldi's utils/data/perturb_data_dir_speed.sh and perturb_data_dir_speed_3way.sh: speed-perturbed
copies of a data dir (sp<factor>- ids, wav.scp through a speed change, durations scaled)."""
import logging
import shutil
import sys

from hybridasr.cli import add_bool, make_parser, run_main
from hybridasr.datadir.files import has
from hybridasr.datadir.speed_perturb import perturb_data_dir_speed
from hybridasr.datadir.validate import validate_data_dir
from hybridasr.errors import ConfigError
from hybridasr.features.utt2dur import write_reco2dur, write_utt2dur


def get_parser():
    p = make_parser("data_dir_perturb_speed.py",
                    "Writes <destdir>: a copy of <srcdir> at each speed factor, combined. A copy "
                    "at factor F has utterance and speaker ids prefixed sp<F>- (the 1.0 copy "
                    "keeps its ids), wav.scp entries piped through a speed change (sox's "
                    "'speed F' when sox is on PATH, else wav_speed_perturb.py), segments, "
                    "utt2dur and reco2dur divided by F; text, utt2spk, spk2utt, spk2gender are "
                    "carried, features are not. utt2dur and reco2dur are first made in "
                    "<srcdir> when missing, as Kaldi's scripts do.",
                    usage="data_dir_perturb_speed.py [options] <factor>[,<factor>...] <srcdir> "
                          "<destdir>",
                    example="data_dir_perturb_speed.py 0.9,1.0,1.1 data/train data/train_sp")
    p.add_argument("--use-sox", default="auto", choices=["auto", "true", "false"],
                   help="pipe through sox (Kaldi's lines) or through wav_speed_perturb.py; "
                        "auto: sox when it is on PATH (default: auto)")
    add_bool(p, "--always-include-prefix", False,
             "prefix the 1.0 copy's ids with sp1.0- too")
    add_bool(p, "--validate", True, "validate the result (utils/validate_data_dir.sh "
                                    "--no-feats --no-text)")
    p.add_argument("factors")
    p.add_argument("src")
    p.add_argument("dst")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    log = logging.getLogger("data_dir_perturb_speed.py")
    factors = [f for f in args.factors.split(",") if f]
    if not factors:
        raise ConfigError("no speed factor given")
    use_sox = shutil.which("sox") is not None if args.use_sox == "auto" else \
        args.use_sox == "true"
    if not has(args.src, "utt2dur"):
        log.info("making %s/utt2dur (obtaining it after perturbing would be slow)", args.src)
        write_utt2dur(args.src, warn=log.warning)
    if not has(args.src, "reco2dur"):
        write_reco2dur(args.src)
    n = perturb_data_dir_speed(args.src, args.dst, factors, use_sox=use_sox,
                               always_include_prefix=args.always_include_prefix)
    how = "sox" if use_sox else "wav_speed_perturb.py"
    print(f"perturb_data_dir_speed: {args.dst}: {n} utterances, speeds {' '.join(factors)} of "
          f"{args.src} (wav.scp through {how})", file=sys.stderr)
    if args.validate:
        validate_data_dir(args.dst, no_feats=True, no_text=True)
    return 0


if __name__ == "__main__":
    run_main(main)
