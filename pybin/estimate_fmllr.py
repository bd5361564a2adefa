#!/usr/bin/env python3
"""fMLLR transforms of a data dir's speakers from a SAT Kaldi GMM, as Kaldi's
steps/decode_fmllr.sh estimates them (gmm-est-fmllr after its speaker-independent pass)."""


from hybridasr.cli import make_parser, run_main
from hybridasr.features.fmllr_estimate import MIN_COUNT, UPDATE_TYPES


def get_parser():
    p = make_parser("estimate_fmllr.py",
                    "Estimates one fMLLR transform per speaker of <data-dir> (raw feats.scp, "
                    "cmvn.scp, utt2spk) from the SAT GMM dir <gmm-dir> (cmvn_opts, splice_opts, "
                    "final.mat, final.alimdl, final.mdl), as decode_fmllr.sh: a pass of the "
                    "speaker-independent model on <graph-dir>, a full-update transform of "
                    "final.mdl from its lattice posteriors (silence weighted 0.01) with the "
                    "speaker-independent model's Gaussian posteriors (gmm-est-fmllr-gpost), a "
                    "second pass and transform on the adapted features, composed. Writes "
                    "Kaldi's trans.* format: one matrix per speaker.",
                    usage="estimate_fmllr.py [options] <gmm-dir> <graph-dir> <data-dir> "
                          "<trans-wspecifier>",
                    example="estimate_fmllr.py exp/tri3b_ali exp/tri3b/graph data/test "
                            "ark:exp/tri3b/decode_test/trans.1")
    p.add_argument("--beam", type=float, default=13.0, help="the passes' decoding beam")
    p.add_argument("--max-active", type=int, default=7000, help="most active states")
    p.add_argument("--fmllr-update-type", default=UPDATE_TYPES[0], choices=UPDATE_TYPES,
                   help="the transform's kind, as Kaldi's")
    p.add_argument("--fmllr-min-count", type=float, default=MIN_COUNT,
                   help="fewest frames of a speaker (silence weighted 0.01) for a transform, "
                        "else the identity (Kaldi's default: 500)")
    p.add_argument("gmm_dir")
    p.add_argument("graph_dir")
    p.add_argument("data_dir")
    p.add_argument("trans_wspecifier")
    return p


def main(argv=None):
    import logging

    import numpy as np

    from hybridasr.decode.speaker_adapt import estimate_data_dir
    from hybridasr.kaldi.io.table_writer import MatrixWriter

    args = get_parser().parse_args(argv)
    transforms = estimate_data_dir(args.gmm_dir, args.graph_dir, args.data_dir, args.beam,
                                   args.max_active, args.fmllr_update_type,
                                   args.fmllr_min_count)
    with MatrixWriter(args.trans_wspecifier) as w:
        for spk in sorted(transforms):
            w.write(spk, np.asarray(transforms[spk], dtype=np.float32))
    logging.getLogger("estimate_fmllr.py").info("wrote the fMLLR transforms of %d speakers",
                                                len(transforms))
    return 0


if __name__ == "__main__":
    run_main(main)
