#!/usr/bin/env python3
"""Exports a trained MLP to a Kaldi nnet1 model directory (text nnet1 files), so that Kaldi's
own nnet-forward and steps/nnet/decode.sh can decode with it."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "nnet_to_kaldi.py",
        "Write a trained --model=mlp network as a Kaldi nnet1 model directory:\n"
        "  <dir>/final.nnet                <AffineTransform>, <Sigmoid> or <ParametricRelu>\n"
        "                                  (relu), ..., <Softmax>\n"
        "  <dir>/final.feature_transform   <Splice> (and <AddShift>, <Rescale> for --global-norm)\n"
        "  <dir>/cmvn_opts, delta_opts     apply-cmvn / add-deltas options (when used)\n"
        "  <dir>/final.mdl, ali_train_pdf.counts  copied from --srcdir\n"
        "Then Kaldi's steps/nnet/decode.sh --srcdir <dir> decodes with it. BLSTM/LSTM models,\n"
        "--subsample and --stack-frames cannot be exported (the error says why).",
        usage="nnet_to_kaldi.py [options] <model-in> <dir>",
        example="nnet_to_kaldi.py exp/mlp/final.nnet exp/mlp_nnet1")
    p.add_argument("--srcdir", default="",
                   help="where final.mdl and ali_train_pdf.counts are (default: the directory "
                        "of <model-in>)")
    p.add_argument("model_in")
    p.add_argument("dir")
    return p


def main(argv=None):
    import logging

    from hybridasr.models.nnet1_export import export_nnet1

    args = get_parser().parse_args(argv)
    ex = export_nnet1(args.model_in, args.dir, args.srcdir or None)
    log = logging.getLogger("nnet_to_kaldi.py")
    for path in ex.removed:
        log.info("removed stale %s (the model does not use that step)", path)
    for path in ex.missing:
        log.warning("no %s: copy it into %s before decoding with Kaldi", path, args.dir)
    log.info("wrote %s", ", ".join(ex.files))
    log.info("Kaldi decodes it with: steps/nnet/decode.sh --srcdir %s <graph> <data> <decode-dir>"
             "; its forward pass is: %s", args.dir, ex.nnet_forward_command())
    return 0


if __name__ == "__main__":
    run_main(main)
