#!/usr/bin/env python3
"""Embedded decoder with Kaldi decode-faster-mapped's interface (Kaldi's FasterDecoder via the
kaldi-decoder package): per-pdf log-likelihoods -> best word sequence per utterance."""
import sys

from hybridasr.cli import add_bool, add_options, make_parser, run_main
from hybridasr.decode.decoder import DecodeOptions
from hybridasr.options import from_values


def get_parser():
    p = make_parser(
        "decode_faster_mapped.py",
        "Decode log-likelihoods (one row per frame, one column per pdf, e.g. from forward.py)\n"
        "on a Kaldi decoding graph whose input labels are transition-ids; the transition model\n"
        "maps them to pdfs. Writes word ids (and optionally the transition-id alignment).\n"
        "Every input utterance gets an output entry (empty when no path survives).",
        usage="decode_faster_mapped.py [options] <model-in> <fst-in> <loglikes-rspecifier> "
              "<words-wspecifier> [<alignments-wspecifier>]",
        example="decode_faster_mapped.py --acoustic-scale=0.1 --beam=13 "
                "--word-symbol-table=exp/mono/graph/words.txt exp/dnn/final.mdl "
                "exp/mono/graph/HCLG.fst scp:exp/dnn/decode/loglikes.1.scp "
                "ark,t:exp/dnn/decode/hyp.1.tra")
    p.add_argument("--acoustic-scale", type=float, default=0.1,
                   help="scaling factor for acoustic likelihoods (default: 0.1)")
    p.add_argument("--inv-acoustic-scale", type=float, default=0.0,
                   help="when > 0, use acoustic scale 1/this (an LM weight; for scoring "
                        "scripts that substitute LMWT)")
    add_options(p, DecodeOptions)
    p.add_argument("--word-symbol-table", default="",
                   help="words.txt: when given, each utterance's words are logged")
    add_bool(p, "--allow-partial", True,
             "write the best partial path when no final state is reached")
    p.add_argument("model_in", help="Kaldi model whose TransitionModel maps tids to pdfs")
    p.add_argument("fst_in", help="decoding graph (OpenFst const or vector)")
    p.add_argument("loglikes_rspecifier")
    p.add_argument("words_wspecifier")
    p.add_argument("alignments_wspecifier", nargs="?")
    return p


def main(argv=None):
    import logging

    from hybridasr.decode.decode_table import decode_table
    from hybridasr.decode.decoder import MappedDecoder
    from hybridasr.decode.graph import load_model_and_graph
    from hybridasr.kaldi.symbol_table import read_symbol_table
    from hybridasr.errors import ConfigError
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.io.table_writer import IntVectorWriter

    argv = list(sys.argv[1:] if argv is None else argv)
    # a bare --allow-partial must not swallow the next (positional) argument, as in Kaldi
    argv = ["--allow-partial=true" if a == "--allow-partial" else a for a in argv]
    args = get_parser().parse_args(argv)
    if args.inv_acoustic_scale < 0:
        raise ConfigError("--inv-acoustic-scale must be positive")
    if args.inv_acoustic_scale > 0:
        args.acoustic_scale = 1.0 / args.inv_acoustic_scale
    if args.acoustic_scale <= 0 or args.beam <= 0:
        raise ConfigError("--acoustic-scale and --beam must be positive")
    tm, fst, max_ilabel = load_model_and_graph(args.model_in, args.fst_in)
    symbols = read_symbol_table(args.word_symbol_table) if args.word_symbol_table else None
    options = from_values(DecodeOptions, args)
    decoder = MappedDecoder(fst, tm.tid2pdf, tm.num_pdfs, options,
                            max_ilabel=max_ilabel, fst_path=args.fst_in)
    words = IntVectorWriter(args.words_wspecifier)
    alis = IntVectorWriter(args.alignments_wspecifier) if args.alignments_wspecifier else None
    ok = False
    try:
        summary = decode_table(decoder, read_matrices(args.loglikes_rspecifier),
                               args.acoustic_scale, words, alis, symbols, args.allow_partial)
        ok = True
    finally:
        words.close(ok)
        if alis is not None:
            alis.close(ok)
    logging.getLogger("decode_faster_mapped.py").info("%s", summary.describe(args.acoustic_scale))
    return 0 if summary.num_done else 1


if __name__ == "__main__":
    run_main(main)
