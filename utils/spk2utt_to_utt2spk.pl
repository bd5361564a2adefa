#!/usr/bin/env python3
# utils/spk2utt_to_utt2spk.pl (Kaldi's interface; Python, stdlib only): reads spk2utt lines
# "spk utt1 utt2 ..." from the files given or stdin and writes "utt spk" lines to stdout.
#  e.g.: utils/spk2utt_to_utt2spk.pl data/train/spk2utt > data/train/utt2spk
import fileinput
import sys


def main():
    out = sys.stdout
    for line in fileinput.input(sys.argv[1:], encoding="utf-8"):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            sys.exit(f"spk2utt_to_utt2spk.pl: {fileinput.filename()}:{fileinput.filelineno()}: "
                     f"speaker {fields[0]!r} has no utterances")
        for utt in fields[1:]:
            out.write(f"{utt} {fields[0]}\n")


if __name__ == "__main__":
    main()
