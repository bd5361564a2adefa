#!/usr/bin/env python3
"""Kaldi's compile-train-graphs | align-compiled-mapped in one job: align per-pdf
log-likelihoods (forward.py's output) to the utterances' transcripts."""


from hybridasr.cli import add_options, make_parser, run_main


def get_parser():
    from hybridasr.align.training_graphs import GraphOptions
    from hybridasr.align.viterbi import AlignOptions

    p = make_parser(
        "align_mapped.py",
        "Builds each utterance's training graph from the tree, the transition model and the\n"
        "lang dir (L.fst, phones/disambig.int, words.txt, oov.int) and Viterbi-aligns its\n"
        "log-likelihoods on it (beam, then retry-beam; an utterance failing both is reported\n"
        "and skipped). Writes transition-id alignments (binary int32 vectors unless ark,t).",
        usage="align_mapped.py [options] <tree> <model> <lang-dir> <loglikes-rspecifier> "
              "<transcriptions-rspecifier> <alignments-wspecifier>",
        example="align_mapped.py exp/dnn/tree exp/dnn/final.mdl data/lang "
                "scp:loglikes.1.scp data/train/split1/1/text 'ark:|gzip -c > ali.1.gz'")
    add_options(p, AlignOptions, "alignment")
    add_options(p, GraphOptions, "training graphs")
    p.add_argument("--report", default="",
                   help="write the job's figures (aligned, failed, OOVs, seconds) here as JSON")
    p.add_argument("tree")
    p.add_argument("model")
    p.add_argument("lang_dir")
    p.add_argument("loglikes_rspecifier")
    p.add_argument("text_rspecifier")
    p.add_argument("alignments_wspecifier")
    return p


def main(argv=None):
    from hybridasr.align.align_mapped import align_mapped
    from hybridasr.align.training_graphs import GraphOptions
    from hybridasr.align.viterbi import AlignOptions
    from hybridasr.options import from_values
    from hybridasr.utils.atomic import write_json_report

    args = get_parser().parse_args(argv)
    rep = align_mapped(args.tree, args.model, args.lang_dir, args.loglikes_rspecifier,
                       args.text_rspecifier, args.alignments_wspecifier,
                       from_values(GraphOptions, args), from_values(AlignOptions, args))
    if args.report:
        write_json_report(args.report, rep.to_dict())
    return 0


if __name__ == "__main__":
    run_main(main)
