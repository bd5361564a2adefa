#!/usr/bin/env python3
"""Writes a model dir's acoustic model, with its feature transform, log-softmax and priors, as
one TorchScript file that torch alone runs (hybridasr.decode.export); transcribe.py decodes
with it in place of the model dir."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "export_model.py",
        "Exports the model dir that steps/nnet/train.sh wrote (final.nnet, final.mdl, "
        "ali_train_pdf.counts, conf/<mfcc|fbank>.conf, global_cmvn.stats) as a TorchScript "
        "file: features after CMVN in, the log-likelihoods decoding uses out (a chain model: "
        "its outputs as they are). The file also holds final.mdl, the feature options and "
        "the global CMVN stats (extra files hybridasr_export.json and final.mdl): "
        "transcribe.py <out.pt> <graph-dir> decodes with it.",
        usage="export_model.py [options] <model-dir> <out.pt>",
        example="export_model.py --prior-scale=1.0 exp/blstm exp/blstm/final.pt")
    p.add_argument("--prior-scale", type=float, default=1.0,
                   help="scale of the log-priors subtracted from the log-posteriors "
                        "(as forward.py's and transcribe.py's --prior-scale)")
    p.add_argument("--prior-floor", type=float, default=1e-10,
                   help="pdfs with a prior below this are disabled (as forward.py's)")
    p.add_argument("--feat-config", default="",
                   help="the feature conf of the training features (default: "
                        "<model-dir>/conf/mfcc.conf or conf/fbank.conf)")
    p.add_argument("--feat-type", default="", choices=("", "mfcc", "fbank"),
                   help="mfcc|fbank (default: from the conf file's name)")
    p.add_argument("--trace-frames", type=int, default=100,
                   help="frames of the example utterance the network is traced with (the "
                        "export is checked on two other lengths)")
    p.add_argument("model_dir")
    p.add_argument("out_file")
    return p


def main(argv=None):
    import logging

    from hybridasr.decode.export import build_exported, save_exported
    from hybridasr.errors import ConfigError

    args = get_parser().parse_args(argv)
    if args.trace_frames < 1:
        raise ConfigError(f"--trace-frames must be >= 1, got {args.trace_frames}")
    module, extra = build_exported(args.model_dir, args.prior_scale, args.feat_config,
                                   args.feat_type, args.prior_floor, args.trace_frames)
    save_exported(args.out_file, module, extra)
    logging.getLogger("export_model.py").info("wrote %s", args.out_file)
    return 0


if __name__ == "__main__":
    run_main(main)
