#!/usr/bin/env python3
"""Kaldi's train_mono.sh training loop in one process: a monophone GMM from an equal
alignment (gmm-acc-stats-ali, gmm-est --mix-up, gmm-align-compiled), written as Kaldi's
final.mdl, with the final model's alignment of the data."""


from hybridasr.cli import add_options, make_parser, run_main


def get_parser():
    from hybridasr.gmm.train_mono import MonoGmmOptions
    from hybridasr.align.training_graphs import GraphOptions

    p = make_parser(
        "train_mono_gmm.py",
        "Trains one diagonal GMM a pdf of the monophone model <model-in>/<tree> on the data\n"
        "dir's features (per-speaker mean normalisation from cmvn.scp, deltas), starting\n"
        "from the alignment dir <ali-dir> (align_equal.py's): --num-iters re-estimations,\n"
        "realigning at --realign-iters, mixing up to --tot-gauss Gaussians. Writes the model\n"
        "(Kaldi's binary GMM final.mdl) and the final model's alignment of every utterance.",
        usage="train_mono_gmm.py [options] <data-dir> <lang-dir> <model-in> <tree> <ali-dir> "
              "<model-out> <alignments-wspecifier>",
        example="train_mono_gmm.py --boost-silence=1.25 data/train data/lang exp/mono/0.mdl "
                "exp/mono/tree exp/mono/equal exp/mono/final.mdl 'ark:|gzip -c > "
                "exp/mono/ali.1.gz'")
    add_options(p, MonoGmmOptions, "training")
    add_options(p, GraphOptions, "training graphs")
    p.add_argument("--report", default="",
                   help="write the figures (utterances, Gaussians, log-likelihood an "
                        "iteration, seconds) here as JSON")
    p.add_argument("data_dir")
    p.add_argument("lang_dir")
    p.add_argument("model_in")
    p.add_argument("tree")
    p.add_argument("ali_dir")
    p.add_argument("model_out")
    p.add_argument("alignments_wspecifier")
    return p


def main(argv=None):
    from hybridasr.gmm.train_mono import MonoGmmOptions, train_mono_gmm
    from hybridasr.align.training_graphs import GraphOptions
    from hybridasr.options import from_values
    from hybridasr.utils.atomic import write_json_report

    args = get_parser().parse_args(argv)
    rep = train_mono_gmm(args.data_dir, args.lang_dir, args.model_in, args.tree, args.ali_dir,
                         args.model_out, args.alignments_wspecifier,
                         from_values(MonoGmmOptions, args), from_values(GraphOptions, args))
    if args.report:
        write_json_report(args.report, rep.to_dict())
    return 0


if __name__ == "__main__":
    run_main(main)
