#!/usr/bin/env python3
"""The recipe's feature conf at the audio's sample rate (hybridasr/features/sample_rate.py):
the Kaldi dir's conf where its rate fits the audio, else with the rate replaced."""
from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("make_feat_config.py",
                    "Reads the sample rates of the recordings of <data-dir>s' wav.scp (wav "
                    "headers of plain files; up to --max-decoded entries read by a command "
                    "decoded) and writes to <out-conf> the feature conf the features are "
                    "computed with: --kaldi-conf where its rate (or Kaldi's default 16000 when "
                    "it names none) is the audio's or its own --allow-* options resample it, "
                    "else --kaldi-conf (or, absent, --recipe-conf) with the audio's rate; "
                    "--allow-downsample/--allow-upsample=true added where the rates are mixed "
                    "(the most common one is taken). Prints the reason, one line. <out-conf> is "
                    "written (atomically) only when its contents change.",
                    usage="make_feat_config.py [options] <feat-type> <out-conf> <data-dir>...",
                    example="make_feat_config.py --kaldi-conf=/k/s5/conf/fbank.conf "
                            "--recipe-conf=conf/fbank.conf fbank data/fbank.conf data/train "
                            "data/test")
    p.add_argument("--kaldi-conf", default="",
                   help="the Kaldi dir's conf/<feat-type>.conf (need not exist)")
    p.add_argument("--recipe-conf", default="",
                   help="the conf used where --kaldi-conf does not exist (default: "
                        "conf/<feat-type>.conf)")
    p.add_argument("--max-decoded", type=int, default=20,
                   help="entries read by a command (or ark:offset) decoded to read their rate; "
                        "the others are counted as not checked")
    p.add_argument("feat_type", choices=["mfcc", "fbank"])
    p.add_argument("out_conf")
    p.add_argument("data_dirs", nargs="+")
    return p


def main(argv=None):
    import os

    from hybridasr.features.sample_rate import choose_feature_conf, survey_rates
    from hybridasr.utils.atomic import atomic_open

    args = get_parser().parse_args(argv)
    recipe_conf = args.recipe_conf or f"conf/{args.feat_type}.conf"
    audio = survey_rates([os.path.join(d, "wav.scp") for d in args.data_dirs],
                         max_decoded=args.max_decoded)
    chosen = choose_feature_conf(args.feat_type, audio, args.kaldi_conf or None, recipe_conf)
    try:
        with open(args.out_conf, encoding="utf-8") as f:
            same = f.read() == chosen.text
    except OSError:
        same = False
    if not same:
        with atomic_open(args.out_conf, "w") as f:
            f.write(chosen.text)
    print(f"make_feat_config.py: {args.out_conf}: {chosen.reason}", flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
