#!/usr/bin/env python3
"""What a recipe stage was made from, and whether it finished (hybridasr.recipe.stage_record)."""
from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "stage_record.py",
        "begin: prints the stage's status against its record <record-json>: done (finished "
        "with these options and inputs), new (no record), partial (started with them, never "
        "finished), changed (made from others; each difference is logged); unless done, writes "
        "the started record. finish: marks the record complete (a stage's last write). "
        "Items: name=value (an option that matters) or a file or dir (an input: sizes and "
        "modification times of its files). Both writes are atomic.",
        usage="stage_record.py [options] begin <record-json> [<name=value>|<input>]...\n"
              "       stage_record.py finish <record-json>",
        example="stage_record.py begin data/stage1.json feat_type=mfcc conf/mfcc.conf "
                "data/train/wav.scp")
    p.add_argument("--stage", default="", help="the stage's name or number, recorded")
    p.add_argument("--note", action="append", default=[], metavar="NAME=VALUE",
                   help="recorded but not compared (repeatable): an option the stage applies "
                        "by itself on a rerun")
    p.add_argument("command", choices=["begin", "finish"])
    p.add_argument("record")
    p.add_argument("items", nargs="*", metavar="item")
    return p


def main(argv=None):
    import logging

    from hybridasr.errors import ConfigError
    from hybridasr.recipe import stage_record as sr

    args = get_parser().parse_args(argv)
    if args.command == "finish":
        if args.items:
            raise ConfigError(f"stage_record.py finish takes only the record, not {args.items}")
        sr.finish(args.record)
        return 0
    options, inputs = sr.parse_items(args.items)
    notes, bad = sr.parse_items(args.note)
    if bad:
        raise ConfigError(f"--note takes name=value, not {bad[0]!r}")
    status, why = sr.begin(args.record, args.stage, options, inputs, notes)
    for line in why:
        logging.getLogger("stage_record.py").info("%s", line)
    print(status, flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
