#!/usr/bin/env python3
"""CTC decoding without a graph: greedy (best path) or prefix beam search over the units of
a network's log-posteriors, the units back to words with sentencepiece (hybridasr.ctc.decode);
writes a Kaldi text archive of words (score it with compute_wer.py --text)."""

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("decode_ctc_greedy.py",
                    "Decodes CTC log-posteriors (forward.py without --class-frame-counts) into "
                    "words: greedy best path (--beam-size=0) or prefix beam search over the "
                    "units of <units-model> (units.model of steps/nnet/train_units.sh; blank "
                    "0), decoded to words by sentencepiece. No lexicon, no LM.",
                    usage="decode_ctc_greedy.py [options] <units-model> <loglikes-rspecifier> "
                          "<words-wspecifier>",
                    example="decode_ctc_greedy.py --beam-size=8 exp/ctc_units/units.model "
                            "scp:loglikes.1.scp ark,t:hyp.1.txt")
    p.add_argument("--beam-size", type=int, default=0,
                   help="prefix beam search with this many prefixes (default: 0, greedy)")
    p.add_argument("units_model")
    p.add_argument("loglikes_rspecifier")
    p.add_argument("words_wspecifier")
    return p


def main(argv=None):
    import logging

    from hybridasr.ctc.decode import decode_words_table
    from hybridasr.ctc.units import Units
    from hybridasr.errors import ConfigError
    from hybridasr.kaldi.io import TextTableWriter
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    args = get_parser().parse_args(argv)
    if args.beam_size < 0:
        raise ConfigError(f"--beam-size must be 0 (greedy) or more, got {args.beam_size}")
    units = Units.load(args.units_model)
    with TextTableWriter(args.words_wspecifier) as w:
        n, words = decode_words_table(units, read_matrices(args.loglikes_rspecifier),
                                      lambda k, ws: w.write(k, " ".join(ws)), args.beam_size)
    logging.getLogger("decode_ctc_greedy.py").info(
        "%s: %d utterances, %d words", "prefix beam search (%d)" % args.beam_size
        if args.beam_size else "greedy", n, words)
    return 0


if __name__ == "__main__":
    run_main(main)
