#!/usr/bin/env python3
"""Kaldi's steps/nnet3/chain/gen_topo.py: the chain HMM topology (one state per phone, forward
pdf-class 0, self-loop pdf-class 1); with --lang-out, a copy of the lang dir using it."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("chain_gen_topo.py",
                    "Prints the chain topology for the colon-separated non-silence and "
                    "silence phones (silence phones first, as gen_topo.py). With "
                    "--lang-in/--lang-out instead, copies the lang dir and writes the chain "
                    "topology over its topo (Kaldi's data/lang_chain), the phones taken from "
                    "phones/{nonsilence,silence}.csl.",
                    usage="chain_gen_topo.py <nonsilence-phones> <silence-phones> | "
                          "chain_gen_topo.py --lang-in=<lang> --lang-out=<lang-chain>",
                    example="chain_gen_topo.py --lang-in=data/lang --lang-out=data/lang_chain")
    p.add_argument("--lang-in", default="", help="lang dir to copy")
    p.add_argument("--lang-out", default="", help="where to write the chain lang dir")
    p.add_argument("nonsilence_phones", nargs="?", default="")
    p.add_argument("silence_phones", nargs="?", default="")
    return p


def main(argv=None):
    import sys

    from hybridasr.errors import ConfigError

    args = get_parser().parse_args(argv)
    from hybridasr.chain.topo import chain_topo_text, make_chain_lang

    if args.lang_in or args.lang_out:
        if not (args.lang_in and args.lang_out) or args.nonsilence_phones:
            raise ConfigError("give both --lang-in and --lang-out, and no phone lists")
        make_chain_lang(args.lang_in, args.lang_out)
        return 0
    if not args.nonsilence_phones or not args.silence_phones:
        raise ConfigError("expected <nonsilence-phones> <silence-phones> (e.g. 4:5:6 1:2:3)")
    parse = lambda s: [int(x) for x in s.split(":")]  # noqa: E731
    try:
        text = chain_topo_text(parse(args.nonsilence_phones), parse(args.silence_phones))
    except ValueError:
        raise ConfigError("phone lists must be colon-separated integers") from None
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    run_main(main)
