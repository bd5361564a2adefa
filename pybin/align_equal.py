#!/usr/bin/env python3
"""Kaldi's compile-train-graphs | align-equal-compiled in one job: the flat-start alignment."""


from hybridasr.cli import add_options, make_parser, run_main


def get_parser():
    from hybridasr.align.equal_align import EqualAlignOptions
    from hybridasr.align.training_graphs import GraphOptions

    p = make_parser(
        "align_equal.py",
        "Builds each utterance's training graph from the tree, the transition model and the\n"
        "lang dir, draws one random path through it (seeded by the utterance id) and shares\n"
        "the utterance's frames equally over the HMM states of that path. An utterance too\n"
        "short for its transcript, or without one, is reported and skipped. Only the feature\n"
        "lengths are read. Writes transition-id alignments (binary int32 vectors unless ark,t).",
        usage="align_equal.py [options] <tree> <model> <lang-dir> <feats-rspecifier> "
              "<transcriptions-rspecifier> <alignments-wspecifier>",
        example="align_equal.py exp/flat/mono/tree exp/flat/mono/final.mdl data/lang "
                "scp:data/train/split2/1/feats.scp data/train/split2/1/text "
                "'ark:|gzip -c > exp/flat/ali0/ali.1.gz'")
    add_options(p, EqualAlignOptions, "flat start")
    add_options(p, GraphOptions, "training graphs")
    p.add_argument("--report", default="",
                   help="write the job's figures (aligned, too short, OOVs) here as JSON")
    p.add_argument("tree")
    p.add_argument("model")
    p.add_argument("lang_dir")
    p.add_argument("feats_rspecifier")
    p.add_argument("text_rspecifier")
    p.add_argument("alignments_wspecifier")
    return p


def main(argv=None):
    from hybridasr.align.equal_align import EqualAlignOptions, align_equal_compiled
    from hybridasr.align.training_graphs import GraphOptions
    from hybridasr.options import from_values
    from hybridasr.utils.atomic import write_json_report

    args = get_parser().parse_args(argv)
    rep = align_equal_compiled(args.tree, args.model, args.lang_dir, args.feats_rspecifier,
                               args.text_rspecifier, args.alignments_wspecifier,
                               from_values(EqualAlignOptions, args),
                               from_values(GraphOptions, args))
    if args.report:
        write_json_report(args.report, rep.to_dict())
    return 0


if __name__ == "__main__":
    run_main(main)
