#!/usr/bin/env python3
"""Frame agreement of two Kaldi alignment dirs at the pdf and the phone level (JSON)."""


from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "compare_alignments.py",
        "Compares the alignments (ali.*.gz, each dir read with its own final.mdl) of the\n"
        "utterances in both dirs: the percentage of frames on the same pdf and on the same\n"
        "phone, overall and per utterance; lists utterances aligned in only one of them.",
        usage="compare_alignments.py [options] <ali-dir-1> <ali-dir-2> [<json-out>]",
        example="compare_alignments.py exp/tri1_ali exp/dnn_ali exp/dnn_ali/compare.json")
    p.add_argument("--data-dir", default="",
                   help="compare only the utterances of this data dir (its utt2spk)")
    add_bool(p, "--per-utterance", True, "include the per-utterance figures in the JSON")
    p.add_argument("ali_dir_1")
    p.add_argument("ali_dir_2")
    p.add_argument("json_out", nargs="?", default="-")
    return p


def main(argv=None):
    import json
    import os
    import sys

    from hybridasr.align.compare import compare_alignment_dirs
    from hybridasr.kaldi.io.table import read_map
    from hybridasr.utils.atomic import atomic_open

    args = get_parser().parse_args(argv)
    utts = list(read_map(os.path.join(args.data_dir, "utt2spk"))) if args.data_dir else None
    res = compare_alignment_dirs(args.ali_dir_1, args.ali_dir_2, utts)
    out = {"first": args.ali_dir_1, "second": args.ali_dir_2, **res.summary()}
    if args.per_utterance:
        out["per_utterance"] = res.per_utterance
    text = json.dumps(out, indent=1) + "\n"
    if args.json_out == "-":
        sys.stdout.write(text)
    else:
        with atomic_open(args.json_out) as f:
            f.write(text)
        print(json.dumps({k: out[k] for k in ("utterances", "frames", "pdf_agreement",
                                              "phone_agreement", "num_only_in_first",
                                              "num_only_in_second")}))
    return 0


if __name__ == "__main__":
    run_main(main)
