#!/usr/bin/env python3
"""Prints values out of a JSON file, one line each, for shell scripts (no grep of JSON)."""
from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("json_get.py",
                    "Prints the value of each <key> of <json-file>, one line each: a string as "
                    "it is, anything else as JSON (true, false, null, numbers, lists and objects "
                    "on one line). A key is names separated by dots; an integer indexes a list "
                    "(-1: the last element). A missing key is an error.",
                    usage="json_get.py [options] <json-file> <key> [<key> ...]",
                    example="json_get.py exp/blstm/train_state.json done")
    p.add_argument("json_file")
    p.add_argument("keys", nargs="+", metavar="key")
    return p


def main(argv=None):
    from hybridasr.utils.json_value import json_value, read_json, shell_word

    args = get_parser().parse_args(argv)
    doc = read_json(args.json_file)
    lines = [shell_word(json_value(doc, k, args.json_file)) for k in args.keys]
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    run_main(main, echo_command=False)  # (its output is read by scripts, its command line noise)
