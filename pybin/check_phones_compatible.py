#!/usr/bin/env python3
"""Kaldi's utils/lang/check_phones_compatible.sh: whether two phone symbol tables give every
phone the same id, their disambiguation symbols aside."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "check_phones_compatible.py",
        "Exit 0 when two phones.txt give every phone the same id (disambiguation symbols #0,\n"
        "#1, ... aside: a lang dir of a larger lexicon has more of them); else name both and\n"
        "the first phone that differs, exit 1. One of the two missing (a model dir written\n"
        "without phones.txt) passes, as in Kaldi; both missing is an error.",
        usage="check_phones_compatible.py [options] <phones-txt-1> <phones-txt-2>",
        example="check_phones_compatible.py data/lang/phones.txt exp/tri3b_ali/phones.txt")
    p.add_argument("first")
    p.add_argument("second")
    return p


def main(argv=None):
    import os

    from hybridasr.errors import FormatError
    from hybridasr.kaldi.symbol_table import check_phones_compatible

    args = get_parser().parse_args(argv)
    have = [os.path.isfile(f) for f in (args.first, args.second)]
    if not any(have):
        raise FormatError(f"neither {args.first} nor {args.second} exists")
    if all(have):
        check_phones_compatible(args.first, args.second)
    return 0


if __name__ == "__main__":
    run_main(main, echo_command=False)
