#!/usr/bin/env python3
"""Log-likelihoods of a Kaldi GMM model (final.mdl) over a data dir, like Kaldi's
gmm-compute-likes on apply-cmvn + add-deltas features (or, with --feature-pipeline, the GMM
dir's own pipeline: its cmvn_opts, then splice + final.mat or deltas; with --transform-dir, a
SAT GMM's per-speaker fMLLR transforms after it): a network-free input for
decode_faster_mapped.py and steps/score.sh (checks a graph and the decoder against Kaldi), and
the GMM's half of steps/nnet/decode.sh --gmm-dir."""


from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "gmm_compute_likes.py",
        "Score a data dir's features (feats.scp; per-speaker CMVN from cmvn.scp and utt2spk,\n"
        "then deltas, as Kaldi's train_mono.sh/train_deltas.sh do) with every pdf of a binary\n"
        "Kaldi GMM model; write one [frames x pdfs] log-likelihood matrix per utterance.",
        usage="gmm_compute_likes.py [options] <model-in> <data-dir> <loglikes-wspecifier>",
        example="gmm_compute_likes.py exp/mono_ali/final.mdl data/test "
                "ark,scp:exp/mono/decode_py/loglikes.1.ark,exp/mono/decode_py/loglikes.1.scp")
    p.add_argument("--delta-order", type=int, default=2,
                   help="add-deltas order (0 for LDA/splice systems is not supported)")
    add_bool(p, "--norm-means", True, "apply per-speaker mean normalisation (cmvn.scp)")
    add_bool(p, "--norm-vars", False, "also normalise variances")
    p.add_argument("--boost-silence", type=float, default=1.0,
                   help="factor of the likelihoods of the pdfs of --silence-phones (Kaldi's "
                        "gmm-boost-silence, as align_si.sh uses it)")
    p.add_argument("--feature-pipeline", default="", metavar="GMM-DIR",
                   help="instead of --delta-order/--norm-means/--norm-vars: the features of "
                        "GMM-DIR's own pipeline (its cmvn_opts, then splice_opts + final.mat "
                        "where it has final.mat, else deltas), as Kaldi's decode.sh builds "
                        "them")
    p.add_argument("--transform-dir", default="", metavar="DIR",
                   help="with --feature-pipeline: then each speaker's fMLLR transform of DIR's "
                        "trans.* (a SAT GMM's features, as Kaldi's align_si.sh --transform-dir "
                        "and align_fmllr_lats.sh: e.g. the GMM's own alignment dir); an "
                        "utterance whose speaker has none is skipped with a warning")
    add_bool(p, "--check-only", False,
             "score the first utterance only, to check that the features fit the model (an "
             "error naming both dims where they do not); nothing is written")
    p.add_argument("--silence-phones", default="",
                   help="colon-separated phone ids whose pdfs --boost-silence scales, e.g. "
                        "$(cat data/lang/phones/optional_silence.csl)")
    p.add_argument("model_in")
    p.add_argument("data_dir")
    p.add_argument("loglikes_wspecifier")
    return p


def main(argv=None):
    import itertools
    import logging

    import numpy as np

    from hybridasr.kaldi.gmm_model import read_gmm_model
    from hybridasr.kaldi.io.table import parse_csl
    from hybridasr.kaldi.io.table_writer import MatrixWriter
    from hybridasr.errors import ConfigError, FormatError

    args = get_parser().parse_args(argv)
    if args.delta_order < 0:
        raise ConfigError("--delta-order must be >= 0")
    if args.boost_silence <= 0:
        raise ConfigError(f"--boost-silence must be > 0, got {args.boost_silence}")
    tm, gmm = read_gmm_model(args.model_in)
    boosted = (tm.pdfs_of_phones(parse_csl(args.silence_phones, "--silence-phones"))
               if args.boost_silence != 1.0 else [])
    if args.boost_silence != 1.0 and not len(boosted):
        raise ConfigError(f"--boost-silence={args.boost_silence}: --silence-phones "
                          f"{args.silence_phones!r} names no phone of {args.model_in}")
    if args.transform_dir and not args.feature_pipeline:
        raise ConfigError("--transform-dir needs --feature-pipeline (the GMM dir whose pipeline "
                          "the transforms apply after)")
    if args.feature_pipeline:
        feats = _pipeline_features(args.feature_pipeline, args.data_dir, args.transform_dir)
    else:
        feats = _delta_features(args.data_dir, args.delta_order, args.norm_means,
                                args.norm_vars)
    feats = iter(feats)
    first = next(feats, None)  # (its dim checked before the output is opened)
    if first is not None and first[1].shape[1] != gmm.dim:
        how = (f"{args.feature_pipeline}'s pipeline" if args.feature_pipeline else
               f"deltas of order {args.delta_order}")
        raise FormatError(f"{args.data_dir}: features of {how} have dim {first[1].shape[1]}, "
                          f"{args.model_in} expects {gmm.dim} (wrong --delta-order, an LDA "
                          f"system without --feature-pipeline, or features of another kind?)")
    if args.check_only:
        if first is None:
            raise FormatError(f"{args.data_dir}: no utterance to score (see the warnings)")
        gmm.log_likelihoods(first[1][:10])
        print(f"{args.data_dir}: features of dim {gmm.dim} fit {args.model_in}")
        return 0
    frames = utts = 0
    with MatrixWriter(args.loglikes_wspecifier) as w:
        for utt, x in itertools.chain([first] if first is not None else [], feats):
            ll = gmm.log_likelihoods(x)
            if len(boosted):
                ll[:, boosted] += np.log(args.boost_silence)
            w.write(utt, ll)
            frames += len(ll)
            utts += 1
    logging.getLogger("gmm_compute_likes.py").info(
        "scored %d utterances, %d frames with %d pdfs", utts, frames, gmm.num_pdfs)
    return 0


def _delta_features(data_dir: str, delta_order: int, norm_means: bool, norm_vars: bool):
    """(utt, features) of per-speaker CMVN + deltas, as train_mono.sh/train_deltas.sh."""
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.features.transform import FeatureTransform

    transform = FeatureTransform(norm_means=norm_means, norm_vars=norm_vars,
                                 delta_order=delta_order)
    ds = UtteranceDataset.from_data_dir(data_dir, transform=transform, use_cmvn=norm_means)
    for utt in ds:
        yield utt, ds.load(utt)[0]


def _pipeline_features(gmm_dir: str, data_dir: str, transform_dir: str = ""):
    """(utt, features) of ``gmm_dir``'s pipeline, then ``transform_dir``'s fMLLR transforms
    where given; an utterance without a speaker, CMVN stats or transform is skipped with a
    warning, as apply-cmvn and transform-feats."""
    import os

    from hybridasr.features.fmllr import FmllrPipeline, PipelineFeatures

    return PipelineFeatures(FmllrPipeline.from_gmm_dir(gmm_dir, transform_dir or None),
                            os.path.join(data_dir, "feats.scp"),
                            os.path.join(data_dir, "cmvn.scp"),
                            os.path.join(data_dir, "utt2spk"))


if __name__ == "__main__":
    run_main(main)
