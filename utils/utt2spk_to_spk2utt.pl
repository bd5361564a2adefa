#!/usr/bin/env python3
# utils/utt2spk_to_spk2utt.pl (Kaldi's interface; Python, stdlib only): reads utt2spk lines
# "utt spk" from the files given or stdin and writes spk2utt lines "spk utt1 utt2 ..." to stdout,
# speakers in order of first appearance, utterances in input order.
#  e.g.: utils/utt2spk_to_spk2utt.pl data/train/utt2spk > data/train/spk2utt
import fileinput
import sys


def main():
    spk2utt = {}
    for line in fileinput.input(sys.argv[1:], encoding="utf-8"):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            sys.exit(f"utt2spk_to_spk2utt.pl: {fileinput.filename()}:{fileinput.filelineno()}: "
                     f"expected 'utt spk', got {line.rstrip()!r}")
        spk2utt.setdefault(fields[1], []).append(fields[0])
    out = sys.stdout
    for spk, utts in spk2utt.items():
        out.write(spk + " " + " ".join(utts) + "\n")


if __name__ == "__main__":
    main()
