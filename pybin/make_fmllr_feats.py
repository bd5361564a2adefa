#!/usr/bin/env python3
"""fMLLR features of a SAT Kaldi GMM (nnet1's make_fmllr_feats.sh pipeline, one job):
apply-cmvn | splice-feats | transform-feats final.mat | transform-feats --utt2spk trans.*."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("make_fmllr_feats.py",
                    "Applies a Kaldi GMM dir's feature pipeline (cmvn_opts, splice_opts, "
                    "final.mat; add-deltas without final.mat) and, with --transform-dir, the "
                    "per-speaker fMLLR transforms of its trans.* to a feature table. An "
                    "utterance whose speaker has no stats or transform is skipped and counted, "
                    "as Kaldi's apply-cmvn and transform-feats do.",
                    usage="make_fmllr_feats.py [options] <gmm-dir> <utt2spk> <cmvn-scp> "
                          "<feats-scp> <feats-wspecifier>",
                    example="make_fmllr_feats.py --transform-dir=exp/tri3b_ali exp/tri3b_ali "
                            "data/train/utt2spk data/train/cmvn.scp data/train/feats.scp "
                            "ark,scp:fmllr/feats_fmllr_train.1.ark,fmllr/feats_fmllr_train.1.scp")
    p.add_argument("--transform-dir", default="",
                   help="the dir whose trans.* (per-speaker fMLLR) to apply; empty: none")
    p.add_argument("gmm_dir")
    p.add_argument("utt2spk")
    p.add_argument("cmvn_scp")
    p.add_argument("feats_scp")
    p.add_argument("feats_wspecifier")
    return p


def main(argv=None):
    import logging

    from hybridasr.features.fmllr import FmllrPipeline, describe, make_fmllr_table

    args = get_parser().parse_args(argv)
    pipeline = FmllrPipeline.from_gmm_dir(args.gmm_dir, args.transform_dir or None)
    logging.getLogger("hybridasr.features").info("pipeline: %s", describe(pipeline))
    make_fmllr_table(pipeline, args.feats_scp, args.cmvn_scp, args.utt2spk,
                     args.feats_wspecifier)
    return 0


if __name__ == "__main__":
    run_main(main)
