#!/usr/bin/env python3
"""Kaldi's lattice-scale --inv-acoustic-scale=LMWT | lattice-add-penalty --word-ins-penalty=WIP |
lattice-best-path for every LM weight and penalty in one pass over the lattices; optionally
the lattices' oracle WER and density as JSON."""
import sys

from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser(
        "lattice_best_path_sweep.py",
        "Best paths of lattices (Kaldi's CompactLattice archives) for a range of LM weights\n"
        "(acoustic scale 1/LMWT) and word insertion penalties, in one pass. Writes one text\n"
        "archive of word ids per (LMWT, WIP): the output pattern's LMWT and WIP are replaced.",
        usage="lattice_best_path_sweep.py [options] <lattice-rspecifier> <tra-pattern>",
        example="lattice_best_path_sweep.py --min-lmwt=4 --max-lmwt=15 "
                "--word-ins-penalty=0.0,0.5 'ark:gunzip -c exp/dnn/decode/lat.*.gz|' "
                "exp/dnn/decode/scoring/penalty_WIP/LMWT.tra")
    p.add_argument("--min-lmwt", type=int, default=4, help="smallest LM weight (default: 4)")
    p.add_argument("--max-lmwt", type=int, default=15, help="largest LM weight (default: 15)")
    p.add_argument("--word-ins-penalty", default="0.0",
                   help="comma-separated word insertion penalties (default: 0.0)")
    p.add_argument("--oracle-reference", default="",
                   help="reference text (words): compute the lattices' oracle WER")
    p.add_argument("--word-symbol-table", default="",
                   help="words.txt (needed with --oracle-reference)")
    p.add_argument("--summary-json", default="",
                   help="write lattice count, density (arcs per frame) and oracle WER here")
    p.add_argument("lattice_rspecifier")
    p.add_argument("tra_pattern", help="output path with LMWT (and WIP when several penalties)")
    return p


def main(argv=None):
    import json
    import logging
    import os

    from hybridasr.decode.lattice_table import sweep
    from hybridasr.errors import ConfigError
    from hybridasr.kaldi.lattice import read_lattices
    from hybridasr.kaldi.symbol_table import read_symbol_table
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.kaldi.io.table_writer import IntVectorWriter
    from hybridasr.utils.atomic import atomic_open

    args = get_parser().parse_args(argv)
    try:
        names = args.word_ins_penalty.split(",")
        pens = [float(x) for x in names]
    except ValueError:
        raise ConfigError(f"--word-ins-penalty: expected numbers, got {args.word_ins_penalty!r}")
    if not 0 < args.min_lmwt <= args.max_lmwt:
        raise ConfigError(f"bad LM-weight range {args.min_lmwt}..{args.max_lmwt}")
    if "LMWT" not in args.tra_pattern or (len(pens) > 1 and "WIP" not in args.tra_pattern):
        raise ConfigError(f"{args.tra_pattern}: the output pattern needs LMWT (and WIP for "
                          f"several penalties)")
    refs = None
    if args.oracle_reference:
        if not args.word_symbol_table:
            raise ConfigError("--oracle-reference needs --word-symbol-table")
        ids = {w: i for i, w in read_symbol_table(args.word_symbol_table).items()}
        refs = {k: [ids.get(w, -1) for w in v]
                for k, v in read_text_archive(args.oracle_reference).items()}
    lmwts = list(range(args.min_lmwt, args.max_lmwt + 1))
    res = sweep(read_lattices(args.lattice_rspecifier), lmwts, pens, refs)
    for (lmwt, wip), hyps in res.best.items():
        path = args.tra_pattern.replace("LMWT", str(lmwt)).replace(
            "WIP", names[pens.index(wip)])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with IntVectorWriter(f"ark,t:{path}") as w:
            for k, words in hyps.items():
                w.write(k, words)
    summary = res.summary()
    logging.getLogger("lattice_best_path_sweep.py").info("%s", json.dumps(summary))
    if args.summary_json:
        with atomic_open(args.summary_json, "w") as f:
            json.dump(summary, f)
            f.write("\n")
    return 0 if res.num_lattices else 1


if __name__ == "__main__":
    run_main(main)
