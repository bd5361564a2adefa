#!/usr/bin/env python3
"""Kaldi's cluster-phones + compile-questions + build-tree + the transition model of
gmm-init-model: a context-dependent decision tree from tree statistics and a lang dir."""


from hybridasr.cli import add_bool, add_options, make_parser, run_main
from hybridasr.tree.build import BuildTreeOptions
from hybridasr.tree.phone_clustering import ClusterPhonesOptions
from hybridasr.tree.stats import ContextOptions


def get_parser():
    p = make_parser("build_tree.py",
                    "Builds a decision tree as Kaldi's train_deltas.sh does: the phone sets of "
                    "<lang-dir>/phones/sets.int are clustered into questions (cluster-phones, "
                    "or --questions gives them), phones/extra_questions.int is added, the "
                    "questions are compiled with the topology (compile-questions), and the "
                    "tree is grown from the roots of phones/roots.int and clustered "
                    "(build-tree). Writes the tree, a model file holding the tree's "
                    "transition model (what gmm-init-model makes, without the GMM) and, with "
                    "--report, a JSON report (leaves, splits, objective per frame).",
                    usage="build_tree.py [options] <tree-stats> <lang-dir> <tree-out> "
                          "<model-out>",
                    example="build_tree.py --max-leaves=2000 --report=exp/tri/tree_report.json "
                            "exp/tri/treeacc.npz data/lang exp/tri/tree exp/tri/final.mdl")
    add_options(p, BuildTreeOptions, "build-tree")
    add_options(p, ContextOptions, "context (must match the statistics)")
    add_options(p, ClusterPhonesOptions, "cluster-phones")
    p.add_argument("--questions", default="",
                   help="questions.int to use instead of clustering phones/sets.int (its sets "
                        "are used as they are: add extra_questions.int to it yourself)")
    p.add_argument("--questions-out", default="",
                   help="write the phone questions (cluster-phones' sets plus "
                        "extra_questions.int) here, as Kaldi's questions.int")
    p.add_argument("--questions-qst-out", default="",
                   help="write the compiled questions here, as Kaldi's questions.qst")
    p.add_argument("--report", default="", help="write a JSON report of the build here")
    add_bool(p, "--binary", True, "write the tree and model in binary")
    p.add_argument("tree_stats")
    p.add_argument("lang_dir")
    p.add_argument("tree_out")
    p.add_argument("model_out")
    return p


def main(argv=None):
    import dataclasses
    import json
    import logging
    import os
    import time

    args = get_parser().parse_args(argv)
    from hybridasr.errors import ConfigError
    from hybridasr.kaldi.transition_model import write_transition_model
    from hybridasr.kaldi.tree import write_tree
    from hybridasr.options import from_values
    from hybridasr.tree.build import build_from_lang
    from hybridasr.tree.model import build_transition_model, read_topology
    from hybridasr.tree.phone_clustering import parse_pdf_class_list
    from hybridasr.tree.questions import write_questions_int, write_questions_qst
    from hybridasr.tree.stats import read_tree_stats
    from hybridasr.utils.atomic import atomic_open

    t0 = time.perf_counter()
    opts = from_values(BuildTreeOptions, args)
    ctx = from_values(ContextOptions, args)
    ctx.check_context()
    pdf_classes = parse_pdf_class_list(from_values(ClusterPhonesOptions, args).pdf_class_list)
    stats = read_tree_stats(args.tree_stats)
    if (ctx.context_width, ctx.central_position) != (stats.context_width,
                                                     stats.central_position):
        raise ConfigError(f"--context-width={ctx.context_width} "
                          f"--central-position={ctx.central_position}, but {args.tree_stats} "
                          f"was accumulated with {stats.context_width} and "
                          f"{stats.central_position}")
    tree, qlist, compiled, report = build_from_lang(
        stats, args.lang_dir, opts, pdf_classes, args.questions or None, name=args.tree_out)
    topo = read_topology(os.path.join(args.lang_dir, "topo"))
    tm = build_transition_model(tree, topo, name=args.model_out)
    if args.questions_out:
        write_questions_int(qlist, args.questions_out)
    if args.questions_qst_out:
        write_questions_qst(compiled, args.questions_qst_out)
    write_tree(tree, args.tree_out, binary=args.binary)
    write_transition_model(tm, args.model_out, binary=args.binary)
    elapsed = time.perf_counter() - t0
    if args.report:
        out = dataclasses.asdict(report)
        out.update(num_pdfs=tree.num_pdfs, num_questions=len(compiled[0]) if 0 in
                   compiled.by_key else 0, num_transition_ids=tm.num_transition_ids,
                   context_width=tree.context_width, central_position=tree.central_position,
                   max_leaves=opts.max_leaves, thresh=opts.thresh, seconds=round(elapsed, 3))
        with atomic_open(args.report, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    logging.getLogger("build_tree.py").info(
        "wrote %s (%d pdfs) and %s (%d transition-ids) in %.1fs", args.tree_out, tree.num_pdfs,
        args.model_out, tm.num_transition_ids, elapsed)
    return 0


if __name__ == "__main__":
    run_main(main)
