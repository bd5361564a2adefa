#!/usr/bin/env python3
"""Kaldi's utils/subset_data_dir.sh: a data dir with some of the utterances of another."""
import sys

from hybridasr.cli import make_parser, run_main
from hybridasr.errors import ConfigError
from hybridasr.datadir.subset import subset_data_dir

MODES = ("first", "last", "shortest", "per-spk", "speakers")


def get_parser():
    p = make_parser("data_dir_subset.py",
                    "Without a mode flag selects <num-utt> utterances spread evenly over the "
                    "data; --first/--last the first/last ones; --shortest the shortest; "
                    "--per-spk <num-utt> per speaker; --speakers random whole speakers up to "
                    "<num-utt> utterances; --utt-list/--spk-list the listed ones.",
                    usage="data_dir_subset.py [--first|--last|--shortest|--per-spk|--speakers] "
                          "<srcdir> <num-utt> <destdir>\n"
                          "       data_dir_subset.py --utt-list <list> <srcdir> <destdir>\n"
                          "       data_dir_subset.py --spk-list <list> <srcdir> <destdir>",
                    example="data_dir_subset.py --first data/train 100 data/train_100")
    for m in MODES:
        p.add_argument(f"--{m}", action="store_true")
    p.add_argument("--utt-list", default=None, help="file of utterance ids to keep")
    p.add_argument("--spk-list", default=None, help="file of speaker ids to keep")
    p.add_argument("--seed", type=int, default=0, help="random seed for --speakers")
    p.add_argument("args", nargs="+", metavar="<srcdir> [<num-utt>] <destdir>")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    modes = [m for m in MODES if getattr(args, m.replace("-", "_"))]
    lists = [m for m in ("utt-list", "spk-list") if getattr(args, m.replace("-", "_"))]
    if len(modes) + len(lists) > 1:
        raise ConfigError("give at most one of --" + ", --".join(MODES + ("utt-list", "spk-list")))
    if lists:
        if len(args.args) != 2:
            raise ConfigError(f"--{lists[0]} takes <srcdir> <destdir>, got {args.args}")
        src, dst = args.args
        n, mode = 0, lists[0]
        list_file = args.utt_list or args.spk_list
    else:
        if len(args.args) != 3:
            raise ConfigError(f"expected <srcdir> <num-utt> <destdir>, got {args.args}")
        src, num, dst = args.args
        try:
            n = int(num)
        except ValueError:
            raise ConfigError(f"<num-utt> must be an integer, got {num!r}") from None
        mode, list_file = (modes[0] if modes else "evenly"), None
    before, after = subset_data_dir(src, dst, mode, n, list_file, seed=args.seed)
    print(f"subset_data_dir.sh: reducing #utt from {before} to {after}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)
