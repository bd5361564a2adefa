#!/usr/bin/env python3
"""Embedded lattice generation with Kaldi latgen-faster-mapped's interface: per-pdf
log-likelihoods -> pruned, word-determinized CompactLattices (Kaldi's lat.JOB.gz), with the
toolkit's C++ lattice decoder; where that cannot be built it says so and fails (decode 1-best
with decode_faster_mapped.py then)."""
import sys

from hybridasr.cli import add_bool, add_options, make_parser, run_main
from hybridasr.decode.lattice_decoder import LatgenOptions
from hybridasr.options import from_values


def get_parser():
    p = make_parser(
        "latgen_faster_mapped.py",
        "Generate lattices from log-likelihoods (one row per frame, one column per pdf, e.g.\n"
        "from forward.py) on a Kaldi decoding graph over transition-ids; the transition model\n"
        "maps them to pdfs. Lattices are written as Kaldi's CompactLattice archives, acoustic\n"
        "costs unscaled; optionally the best path's words and alignment. Needs the toolkit's\n"
        "C++ library (built by install.sh with g++).",
        usage="latgen_faster_mapped.py [options] <model-in> <fst-in> <loglikes-rspecifier> "
              "<lattice-wspecifier> [<words-wspecifier> [<alignments-wspecifier>]]",
        example="latgen_faster_mapped.py --beam=13 --lattice-beam=8 --acoustic-scale=0.1 "
                "exp/dnn/final.mdl exp/tri1/graph/HCLG.fst scp:exp/dnn/decode/loglikes.1.scp "
                "'ark:|gzip -c > exp/dnn/decode/lat.1.gz'")
    p.add_argument("--acoustic-scale", type=float, default=0.1,
                   help="scaling factor for acoustic likelihoods (default: 0.1)")
    add_options(p, LatgenOptions)
    p.add_argument("--word-symbol-table", default="",
                   help="words.txt: when given, each utterance's best words are logged")
    add_bool(p, "--allow-partial", False,
             "write the lattice of the best partial paths when no final state is reached")
    p.add_argument("--summary-json", default="",
                   help="file to write the run's summary to (JSON: lattices, frames, arcs "
                        "per frame, seconds)")
    p.add_argument("model_in", help="Kaldi model whose TransitionModel maps tids to pdfs")
    p.add_argument("fst_in", help="decoding graph (OpenFst const or vector)")
    p.add_argument("loglikes_rspecifier")
    p.add_argument("lattice_wspecifier")
    p.add_argument("words_wspecifier", nargs="?")
    p.add_argument("alignments_wspecifier", nargs="?")
    return p


def main(argv=None):
    import json
    import logging

    from hybridasr.decode.determinize_native import phone_boundaries
    from hybridasr.decode.lattice_decoder import LatticeDecoder
    from hybridasr.decode.lattice_table import latgen_table
    from hybridasr.errors import ConfigError
    from hybridasr.decode.graph import load_model_and_graph
    from hybridasr.kaldi.lattice import CompactLatticeWriter
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.symbol_table import read_symbol_table
    from hybridasr.kaldi.io.table_writer import IntVectorWriter
    from hybridasr.utils.atomic import atomic_open

    argv = list(sys.argv[1:] if argv is None else argv)
    argv = ["--allow-partial=true" if a == "--allow-partial" else a for a in argv]
    args = get_parser().parse_args(argv)
    if args.acoustic_scale <= 0 or args.beam <= 0 or args.lattice_beam <= 0:
        raise ConfigError("--acoustic-scale, --beam and --lattice-beam must be positive")
    tm, fst, max_ilabel = load_model_and_graph(args.model_in, args.fst_in)
    decoder = LatticeDecoder(fst, tm.tid2pdf, tm.num_pdfs, from_values(LatgenOptions, args),
                             max_ilabel, fst_path=args.fst_in,
                             phone_of_tid=phone_boundaries(tm))
    writers = [CompactLatticeWriter(args.lattice_wspecifier)]
    for spec in (args.words_wspecifier, args.alignments_wspecifier):
        writers.append(IntVectorWriter(spec) if spec else None)
    ok = False
    try:
        summary = latgen_table(decoder, read_matrices(args.loglikes_rspecifier),
                               args.acoustic_scale, *writers, allow_partial=args.allow_partial,
                               word_symbols=read_symbol_table(args.word_symbol_table)
                               if args.word_symbol_table else None)
        ok = True
    finally:
        for w in writers:
            if w is not None:
                w.close(ok)
        decoder.close()
    logging.getLogger("latgen_faster_mapped.py").info("%s", summary.describe())
    if args.summary_json:
        with atomic_open(args.summary_json, "w") as f:
            json.dump({"lattices": summary.num_done, "partial": summary.num_partial,
                       "empty": summary.num_failed, "frames": summary.num_frames,
                       "arcs": summary.num_arcs,
                       "lattice_density_arcs_per_frame": summary.density,
                       "seconds": summary.elapsed}, f)
            f.write("\n")
    return 0 if summary.num_done else 1


if __name__ == "__main__":
    run_main(main)
