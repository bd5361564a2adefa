#!/usr/bin/env python3
# utils/filter_scp.pl (Kaldi's interface; Python, stdlib only):
#   utils/filter_scp.pl [--exclude] [-f <field>] <id-list> [<in-scp>...]  > out
# prints the lines of <in-scp> (or stdin) whose field <field> (default 1) is (with --exclude:
# is not) the first field of a line of <id-list>; input order is kept.
#  e.g.: utils/filter_scp.pl data/train/split4/1/utt2spk data/train/feats.scp
import sys


def main(argv):
    exclude, field = False, 1
    while argv and argv[0].startswith("-") and argv[0] != "-":
        opt = argv.pop(0)
        if opt == "--exclude":
            exclude = True
        elif opt == "-f" and argv:
            field = int(argv.pop(0))
        elif opt.startswith("-f") and opt[2:].isdigit():
            field = int(opt[2:])
        else:
            sys.exit(f"filter_scp.pl: unknown option {opt}\n"
                     "Usage: utils/filter_scp.pl [--exclude] [-f <field>] <id-list> [<in-scp>...]")
    if not argv:
        sys.exit("Usage: utils/filter_scp.pl [--exclude] [-f <field>] <id-list> [<in-scp>...]")
    ids = set()
    with open(argv[0], encoding="utf-8") as f:
        for line in f:
            parts = line.split(None, 1)
            if parts:
                ids.add(parts[0])
    inputs = argv[1:] or ["-"]
    out = sys.stdout
    for name in inputs:
        f = sys.stdin if name == "-" else open(name, encoding="utf-8")
        with f:
            for lineno, line in enumerate(f, start=1):
                fields = line.split()
                if len(fields) < field:
                    sys.exit(f"filter_scp.pl: {name}:{lineno}: line has no field {field}")
                if (fields[field - 1] in ids) != exclude:
                    out.write(line if line.endswith("\n") else line + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
