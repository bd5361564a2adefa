#!/usr/bin/env python3
"""Kaldi's chain-est-phone-lm: the phone language model of the chain denominator graph,
from phone sequences (the alignments of a model, as ali-to-phones gives them)."""


from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.chain.phone_lm import PhoneLmOptions


def get_parser():
    p = make_parser("chain_est_phone_lm.py",
                    "Estimates an un-smoothed phone n-gram (no backoff arcs; states of order "
                    ">= --no-prune-ngram-order pruned to --num-extra-lm-states) from the phone "
                    "sequences of <model>'s alignments and writes it as an OpenFst acceptor "
                    "(Kaldi's binary format, as chain-est-phone-lm's phone_lm.fst).",
                    usage="chain_est_phone_lm.py [options] <model> "
                          "<alignments-rspecifier> <phone-lm-fst-out>",
                    example="chain_est_phone_lm.py --num-extra-lm-states=2000 "
                            "exp/tri1_ali/final.mdl 'ark:gunzip -c exp/tri1_ali/ali.*.gz|' "
                            "exp/chain/phone_lm.fst")
    add_options(p, PhoneLmOptions, "phone LM")
    p.add_argument("model")
    p.add_argument("alignments_rspecifier")
    p.add_argument("phone_lm_out")
    return p


def main(argv=None):
    import logging

    args = get_parser().parse_args(argv)
    from hybridasr.chain.den_graph import write_fst
    from hybridasr.chain.phone_lm import alignment_phone_sequences, estimate_phone_lm
    from hybridasr.errors import FormatError
    from hybridasr.options import from_values

    opts = from_values(PhoneLmOptions, args)
    seqs = [s for _, s in alignment_phone_sequences(args.model, args.alignments_rspecifier)]
    if not seqs:
        raise FormatError(f"{args.alignments_rspecifier}: no alignments")
    lm = estimate_phone_lm(seqs, opts)
    write_fst(lm, args.phone_lm_out)
    logging.getLogger("chain_est_phone_lm.py").info(
        "phone LM from %d sequences: %d states, %d arcs -> %s", len(seqs), lm.num_states,
        lm.num_arcs, args.phone_lm_out)
    return 0


if __name__ == "__main__":
    run_main(main)
