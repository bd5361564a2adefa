#!/usr/bin/env python3
"""Kaldi's ``lattice-1best --lm-scale=LMWT | lattice-align-words | nbest-to-ctm`` with the
confidences of ``lattice-to-ctm-conf --inv-acoustic-scale=LMWT`` (word posteriors after
``lattice-prune --beam=5``): a CTM of the best path's words from lattices
(hybridasr.decode.ctm)."""

from hybridasr.cli import make_parser, run_main, str2bool


def get_parser():
    p = make_parser(
        "lattice_to_ctm.py",
        "Writes '<utt> 1 <start> <dur> <word> <conf>' lines for the best path of each lattice "
        "at the LM weight: word times from its phones and phones/word_boundary.int, "
        "confidences from the lattice's word posteriors.",
        usage="lattice_to_ctm.py [options] <model> <word-boundary-int> <words-txt> "
              "<lattice-rspecifier> <ctm-wxfilename>",
        example="lattice_to_ctm.py --lm-weight=10 exp/blstm/final.mdl "
                "exp/mono/graph/phones/word_boundary.int exp/mono/graph/words.txt "
                "'ark:gunzip -c exp/blstm/decode_test/lat.*.gz|' "
                "exp/blstm/decode_test/score_10/test.ctm")
    p.add_argument("--lm-weight", type=float, default=10.0,
                   help="LMWT: the lattice's acoustic costs scaled by 1/LMWT (default: 10)")
    p.add_argument("--word-ins-penalty", type=float, default=0.0,
                   help="word insertion penalty (default: 0.0)")
    p.add_argument("--frame-shift", type=float, default=0.01,
                   help="seconds per lattice frame (default: 0.01)")
    p.add_argument("--prune-beam", type=float, default=5.0,
                   help="lattice-prune beam before the posteriors (default: 5.0)")
    p.add_argument("--confidence", choices=("frame", "mbr"), default="frame",
                   help="frame: per-frame word posteriors of the best path's words; mbr: "
                        "lattice-to-ctm-conf's MBR sausage-bin posteriors (default: frame)")
    p.add_argument("--decode-mbr", type=str2bool, default=True,
                   help="with --confidence=mbr: the MBR words (true) or the best path's "
                        "(false), as lattice-to-ctm-conf --decode-mbr (default: true)")
    p.add_argument("--confidence-calibration", default="",
                   help="map the confidences through this calibration (the JSON file "
                        "train_confidence_calibration.py wrote; default: none)")
    p.add_argument("model")
    p.add_argument("word_boundary")
    p.add_argument("words_txt")
    p.add_argument("lattice_rspecifier")
    p.add_argument("ctm_wxfilename")
    return p


def main(argv=None):
    import logging

    from hybridasr.decode.ctm import lattices_to_ctm, read_word_boundary
    from hybridasr.errors import ConfigError, HybridAsrError
    from hybridasr.kaldi.io.streams import OutputStream
    from hybridasr.kaldi.lattice import read_lattices
    from hybridasr.kaldi.symbol_table import read_symbol_table
    from hybridasr.kaldi.transition_model import read_transition_model

    args = get_parser().parse_args(argv)
    if args.lm_weight <= 0 or args.frame_shift <= 0 or args.prune_beam <= 0:
        raise ConfigError("--lm-weight, --frame-shift and --prune-beam must be positive")
    cal = None
    if args.confidence_calibration:
        from hybridasr.decode.confidence_calibration import (ConfidenceCalibration,
                                                             calibrate_ctm_text)

        cal = ConfidenceCalibration.load(args.confidence_calibration)
    tm = read_transition_model(args.model)
    boundary = read_word_boundary(args.word_boundary)
    symbols = read_symbol_table(args.words_txt)
    out = OutputStream(args.ctm_wxfilename)
    try:
        done, skipped = lattices_to_ctm(read_lattices(args.lattice_rspecifier), tm, boundary,
                                        symbols, args.lm_weight,
                                        lambda s: out.write(
                                            (calibrate_ctm_text(cal, s) if cal else s)
                                            .encode("utf-8")),
                                        args.word_ins_penalty, args.frame_shift,
                                        args.prune_beam, args.confidence, args.decode_mbr)
    except BaseException:
        out.abort()
        raise
    out.commit()
    logging.getLogger("lattice_to_ctm.py").info("%d lattices written, %d skipped", done,
                                               len(skipped))
    if done == 0:
        raise HybridAsrError(f"no CTM written: all {len(skipped)} lattices were skipped")
    return 0


if __name__ == "__main__":
    run_main(main)
