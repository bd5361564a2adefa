#!/usr/bin/env python3
"""Runs a trained acoustic model over a data dir and writes scaled log-likelihoods (Kaldi
nnet1 ``nnet-forward --no-softmax --class-frame-counts`` semantics) as a Kaldi matrix archive."""


from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.decode.forward import ChainOutputOptions, ForwardOptions, OutputRateOptions
from hybridasr.decode.loglikes import PriorOptions


def get_parser():
    p = make_parser(
        "forward.py",
        "Forward a data dir's features (feats.scp, with per-speaker CMVN from cmvn.scp and\n"
        "utt2spk as the model's stored feature transform asks) through a model; write per\n"
        "utterance log-posteriors minus prior-scale * log-priors, one row per input frame.",
        usage="forward.py [options] <model-in> <data-dir> <loglikes-wspecifier>",
        example="forward.py --class-frame-counts=exp/dnn/ali_train_pdf.counts "
                "exp/dnn/final.nnet data/test ark,scp:loglikes.1.ark,loglikes.1.scp")
    add_options(p, PriorOptions, "priors")
    p.add_argument("--transition-model", default="",
                   help="Kaldi model (final.mdl) to check the number of pdfs against")
    add_options(p, ForwardOptions)
    add_options(p, OutputRateOptions, "output")
    add_options(p, ChainOutputOptions, "chain models")
    p.add_argument("model_in")
    p.add_argument("data_dir")
    p.add_argument("loglikes_wspecifier")
    return p


def main(argv=None):
    import logging

    from hybridasr.decode.forward import (chunk_options, device_for, forward_dataset,
                                          is_chain_model, load_model_and_data)
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.kaldi.io.table_writer import MatrixWriter
    from hybridasr.errors import FormatError

    args = get_parser().parse_args(argv)
    chunks = chunk_options(args)
    device = device_for(args.device)
    model, meta, dataset = load_model_and_data(args.model_in, args.data_dir, device)
    num_pdfs = int(meta["num_pdfs"])
    if args.transition_model:
        from hybridasr.kaldi.transition_model import read_transition_model

        tm = read_transition_model(args.transition_model)
        if tm.num_pdfs != num_pdfs:
            raise FormatError(f"{args.model_in} has {num_pdfs} outputs but "
                              f"{args.transition_model} has {tm.num_pdfs} pdfs: the network "
                              f"was not trained on this model's alignments")
    log_priors = (load_log_priors(args.class_frame_counts, num_pdfs, args.prior_floor)
                  if args.class_frame_counts else None)
    with MatrixWriter(args.loglikes_wspecifier) as writer:
        summary = forward_dataset(model, dataset, device, writer.write, num_pdfs, log_priors,
                                  args.prior_scale, chunks,
                                  model_rate=args.output_rate == "model",
                                  chain=is_chain_model(meta, args.chain),
                                  loglike_scale=args.loglike_scale)
    logging.getLogger("forward.py").info(
        "forwarded %d utterances, %d frames in %.2fs", summary.num_utts, summary.num_frames,
        summary.elapsed)
    return 0


if __name__ == "__main__":
    run_main(main)
