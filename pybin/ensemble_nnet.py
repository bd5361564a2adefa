#!/usr/bin/env python3
"""Combines trained networks into one model file whose output is the average of their
log-posteriors (Kaldi's steps/nnet3/decode_score_fusion.sh, inside the model)."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "ensemble_nnet.py",
        "Write one model (an ensemble) of two or more networks trained on the same targets and\n"
        "features; every tool that runs a model (forward.py, align, transcribe.py) then averages\n"
        "their log-posteriors frame by frame.",
        usage="ensemble_nnet.py [options] <nnet-in-1> <nnet-in-2> [<nnet-in-3> ...] <nnet-out>",
        example="ensemble_nnet.py exp/blstm/nnet/epoch4.nnet exp/blstm/member2/final.nnet "
                "exp/blstm/member3/final.nnet exp/blstm/ensemble.nnet")
    p.add_argument("nnets", nargs="+", help="the members, then the output")
    return p


def main(argv=None):
    import logging

    from hybridasr.errors import ConfigError
    from hybridasr.models.io import save_ensemble

    args = get_parser().parse_args(argv)
    if len(args.nnets) < 3:
        raise ConfigError("ensemble_nnet.py: give at least 2 networks and the output file")
    *members, out = args.nnets
    save_ensemble(out, members)
    logging.getLogger("ensemble_nnet.py").info("wrote %s: the average of %d networks' "
                                               "log-posteriors", out, len(members))
    return 0


if __name__ == "__main__":
    run_main(main)
