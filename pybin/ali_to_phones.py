#!/usr/bin/env python3
"""Kaldi's ali-to-phones: phone sequences (or per-frame phones, or phone lengths) of alignments."""


from hybridasr.align.ali_tools import CtmOptions
from hybridasr.cli import add_bool, add_options, make_parser, run_main


def get_parser():
    p = make_parser("ali_to_phones.py",
                    "Converts alignments to phone sequences (integer phone ids), splitting them "
                    "into phones as Kaldi's SplitToPhones does.",
                    usage="ali_to_phones.py [options] <model> <alignments-rspecifier> "
                          "<phone-transcript-wspecifier|ctm-wxfilename>",
                    example="ali_to_phones.py --per-frame=true exp/mono_ali/final.mdl "
                            "'ark:gunzip -c exp/mono_ali/ali.1.gz|' ark,t:-")
    add_bool(p, "--per-frame", False, "write the phone of every frame (else the phone sequence)")
    add_bool(p, "--write-lengths", False,
             "write (phone, number of frames) pairs: 'utt 1 5 ; 23 7 ' in text mode")
    add_bool(p, "--ctm-output", False,
             "write a CTM ('utt 1 <start> <duration> <phone>') to the third argument, "
             "a wxfilename")
    add_options(p, CtmOptions)
    p.add_argument("model")
    p.add_argument("alignments_rspecifier")
    p.add_argument("output")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.align.ali_tools import ali_to_phones

    if args.ctm_output:
        ali_to_phones(args.model, args.alignments_rspecifier, None,
                      ctm_output=args.output, frame_shift=args.frame_shift)
    else:
        ali_to_phones(args.model, args.alignments_rspecifier, args.output,
                      per_frame=args.per_frame, write_lengths=args.write_lengths)
    return 0


if __name__ == "__main__":
    run_main(main)
