#!/usr/bin/env python3
"""Kaldi's compile-train-graphs | latgen-faster-mapped --word-determinize=false in one job:
lattices of per-pdf log-likelihoods on the utterances' training graphs (the lattices of
steps/align_fmllr_lats.sh that chain training reads)."""


from hybridasr.cli import add_options, make_parser, run_main


def get_parser():
    from hybridasr.decode.training_lattices import TrainingGraphLatgenOptions
    from hybridasr.align.training_graphs import GraphOptions

    p = make_parser(
        "latgen_align_mapped.py",
        "Builds each utterance's training graph from the tree, the transition model and the\n"
        "lang dir (L.fst, phones/disambig.int, words.txt, oov.int) and decodes its\n"
        "log-likelihoods on it into a CompactLattice of transition-ids, determinized on\n"
        "phones only (--word-determinize=false: the alternative pronunciations and optional\n"
        "silences stay). An utterance whose search does not reach the end of its graph is\n"
        "reported and skipped (no retry beam, as Kaldi's --allow-partial=false).",
        usage="latgen_align_mapped.py [options] <tree> <model> <lang-dir> "
              "<loglikes-rspecifier> <transcriptions-rspecifier> <lattice-wspecifier>",
        example="latgen_align_mapped.py --beam=20 --lattice-beam=20 exp/tri1_lats/tree "
                "exp/tri1_lats/final.mdl data/lang ark:- data/train/split1/1/text "
                "'ark:|gzip -c > exp/tri1_lats/lat.1.gz'")
    add_options(p, TrainingGraphLatgenOptions, "lattice generation")
    add_options(p, GraphOptions, "training graphs")
    p.add_argument("--acoustic-scale", type=float, default=0.1,
                   help="scale of the log-likelihoods in the search (default: %(default)s)")
    p.add_argument("--report", default="",
                   help="write the job's figures (lattices, failed, OOVs, seconds) here as JSON")
    p.add_argument("tree")
    p.add_argument("model")
    p.add_argument("lang_dir")
    p.add_argument("loglikes_rspecifier")
    p.add_argument("text_rspecifier")
    p.add_argument("lattice_wspecifier")
    return p


def main(argv=None):
    from hybridasr.decode.training_lattices import TrainingGraphLatgenOptions, latgen_mapped
    from hybridasr.align.training_graphs import GraphOptions
    from hybridasr.errors import ConfigError
    from hybridasr.options import from_values
    from hybridasr.utils.atomic import write_json_report

    args = get_parser().parse_args(argv)
    if args.acoustic_scale <= 0 or args.beam <= 0 or args.lattice_beam <= 0:
        raise ConfigError("--acoustic-scale, --beam and --lattice-beam must be positive")
    rep = latgen_mapped(args.tree, args.model, args.lang_dir, args.loglikes_rspecifier,
                        args.text_rspecifier, args.lattice_wspecifier,
                        from_values(GraphOptions, args), from_values(TrainingGraphLatgenOptions, args),
                        args.acoustic_scale)
    if args.report:
        write_json_report(args.report, rep.to_dict())
    return 0


if __name__ == "__main__":
    run_main(main)
