#!/usr/bin/env python3
"""Fits the calibration of CTM word confidences on held-out words with a reference (Kaldi's
steps/conf/train_calibration.sh): a logistic map from word features to P(correct), written as
a JSON file that transcribe.py --confidence-calibration, lattice_to_ctm.py and
steps/get_ctm.sh apply (hybridasr.decode.confidence_calibration)."""

from hybridasr.cli import add_bool, make_parser, run_main


def get_parser():
    p = make_parser(
        "train_confidence_calibration.py",
        "Labels each CTM word correct or wrong by aligning its utterance's words to the "
        "reference text, fits P(correct) = sigmoid(bias + weights . features) (L2-regularised, "
        "deterministic) and writes it as JSON; logs the NCE of the raw and the calibrated "
        "confidences, and with --folds the NCE of maps fitted without each word's utterance.",
        usage="train_confidence_calibration.py [options] <text> <ctm> <calibration-json>",
        example="train_confidence_calibration.py --words=exp/tri1/graph/words.txt "
                "--ref-normalize=true data/dev/text exp/blstm/decode_dev/score_13/dev.ctm "
                "exp/blstm/decode_dev/calibration.json")
    p.add_argument("--features", default="logit_conf,log_chars,log_seconds_per_char",
                   help="comma-separated features: logit_conf, log_chars, "
                        "log_seconds_per_char, log_seconds (default: %(default)s)")
    p.add_argument("--l2", type=float, default=0.0025,
                   help="L2 penalty of the weights, per word (Kaldi's --normalizer; "
                        "default: %(default)s)")
    p.add_argument("--folds", type=int, default=5,
                   help="cross-fitted NCE by utterance folds, logged and in --report-json "
                        "(0: none; default: %(default)s)")
    add_bool(p, "--ref-normalize", False,
             "reference words outside --words read as alignment reads them (as score.sh)")
    p.add_argument("--words", default="", help="words.txt of the graph (for --ref-normalize)")
    p.add_argument("--report-json", default="", help="also write the figures to this file")
    p.add_argument("text")
    p.add_argument("ctm")
    p.add_argument("calibration")
    return p


def main(argv=None):
    import json
    import logging

    from hybridasr.decode import confidence_calibration as cc
    from hybridasr.decode.confidence import UndefinedNce, nce
    from hybridasr.decode.reference import read_reference
    from hybridasr.errors import ConfigError, FormatError
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.kaldi.symbol_table import read_symbol_ids
    from hybridasr.utils.atomic import atomic_open

    log = logging.getLogger("train_confidence_calibration.py")
    args = get_parser().parse_args(argv)
    feats = tuple(f for f in args.features.split(",") if f)
    try:
        cc.word_features([0.5], [0.1], ["a"], feats)
    except ValueError as e:
        raise ConfigError(f"--features: {e}") from None
    if args.l2 < 0 or args.folds < 0:
        raise ConfigError("--l2 and --folds must be >= 0")
    if args.ref_normalize and not args.words:
        raise ConfigError("--ref-normalize=true needs --words=<graph>/words.txt")
    refs = read_text_archive(args.text)
    if args.ref_normalize:
        refs, report = read_reference(refs, set(read_symbol_ids(args.words)), normalize=True)
        log.info("reference: %s", report.summary())
    words = cc.labelled_ctm_words(cc.read_ctm(args.ctm), refs, args.ctm)
    if not len(words):
        raise FormatError(f"{args.ctm}: no words")
    try:
        cal = cc.fit_calibration(words, feats, args.l2)
    except (ValueError, UndefinedNce) as e:
        raise FormatError(f"{args.ctm} against {args.text}: {e}") from None
    t = cal.trained_on
    if args.folds:
        try:
            t["nce_cross_fitted"] = nce(cc.cross_fitted(words, args.folds, feats, args.l2),
                                        words.correct)
            t["folds"] = args.folds
        except (ValueError, UndefinedNce) as e:
            log.warning("no cross-fitted NCE: %s", e)
    cal.save(args.calibration)
    log.info("%d words (%d correct, %d utterances): NCE raw %.3f, calibrated %.3f (on these "
             "words)%s; map: bias %.3f, %s", t["words"], t["correct"], t["utterances"],
             t["nce_raw"], t["nce_calibrated"],
             f", {args.folds}-fold cross-fitted {t['nce_cross_fitted']:.3f}"
             if "nce_cross_fitted" in t else "", cal.bias,
             ", ".join(f"{n} {w:.3f}" for n, w in zip(cal.features, cal.weights)))
    if args.report_json:
        with atomic_open(args.report_json, "w", encoding="utf-8") as f:
            json.dump(cal.to_dict(), f, indent=1, ensure_ascii=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    run_main(main)
