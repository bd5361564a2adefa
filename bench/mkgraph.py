#!/usr/bin/env python3
"""Decoding-graph build time and peak memory (utils/mkgraph.sh, hybridasr.graph) on the real
Kaldi dirs: kaldi_digits' monophone graph and kaldi_polish's tri1 graph (1,192 pdfs, 5,748
words), each from the dir's own lang, tree and model. One JSON object per line, per graph:

- ``build``: a fresh process runs ``make_graph`` into a new dir: ``seconds`` (wall, best of
  ``--repeats``), ``peak_rss_mb`` (that process's maximum resident set), the per-step seconds
  of ``mkgraph.json``, the graph's states and arcs beside Kaldi's (``kaldi_states``,
  ``kaldi_arcs``), and ``ratio_to_cpp_core``;
- the baseline, measured in the same run: ``cpp_core_seconds``, the kaldifst (C++) calls of
  the same build alone (L o G, determinize-star, minimize, compose-context, H o CLG,
  determinize-star, minimize) on the same inputs, with H made beforehand: what the build
  costs at the least. The ratio says what our own steps (push-special, H, rmepslocal,
  self-loops, the arc sort, reading and writing) add on top. The machine is shared: only
  ratios from the same run mean anything.

Usage: bench/mkgraph.py [--repeats R] [--graphs digits,polish]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
GRAPHS = {"digits": ("kaldi_digits", "mono", "40.mdl"), "polish": ("kaldi_polish", "tri1",
                                                                   "35.mdl")}

_BUILD = """
import json, resource, sys, time
from hybridasr.graph.mkgraph import make_graph
t = time.perf_counter()
stats = make_graph(sys.argv[1], sys.argv[2], sys.argv[3])
stats["wall"] = time.perf_counter() - t
stats["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(stats))
"""


def model_dir(root: Path, kdir: Path, exp: str, mdl: str) -> Path:
    d = root / "model"
    d.mkdir()
    shutil.copy(kdir / "exp" / exp / mdl, d / mdl)
    os.symlink(mdl, d / "final.mdl")
    shutil.copy(kdir / "exp" / exp / "tree", d / "tree")
    return d


def build_once(lang: Path, mdir: Path, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", _BUILD, str(lang), str(mdir), str(out)],
                       env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpp_core(lang: Path, mdir: Path) -> float:
    """Seconds of the kaldifst calls of one build (H built before the clock starts)."""
    import kaldifst

    from hybridasr.graph.h_transducer import make_h_transducer
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree

    tree, tm = read_tree(str(mdir / "tree")), read_transition_model(str(mdir / "final.mdl"))
    disambig = [int(x) for x in (lang / "phones/disambig.int").read_text().split()]
    lexicon = kaldifst.StdVectorFst.read(str(lang / "L_disambig.fst"))
    grammar = kaldifst.StdVectorFst.read(str(lang / "G.fst"))
    lg0 = kaldifst.StdVectorFst(kaldifst.compose(lexicon, grammar))
    kaldifst.determinize_star(lg0, use_log=True)
    _, ilabels = kaldifst.compose_context(disambig, tree.context_width, tree.central_position,
                                          lg0)
    h = make_h_transducer(ilabels, tree, tm)[0].to_fst()
    t = time.perf_counter()
    lg = kaldifst.StdVectorFst(kaldifst.compose(lexicon, grammar))
    kaldifst.determinize_star(lg, use_log=True)
    kaldifst.minimize_encoded(lg)
    clg, _ = kaldifst.compose_context(disambig, tree.context_width, tree.central_position, lg)
    kaldifst.arcsort(clg, "ilabel")
    hclg = kaldifst.StdVectorFst(kaldifst.compose(h, clg))
    kaldifst.determinize_star(hclg, use_log=True)
    kaldifst.minimize_encoded(hclg)
    return time.perf_counter() - t


def kaldi_size(path: Path):
    from hybridasr.kaldi.fst import parse_const_fst

    c = parse_const_fst(path.read_bytes(), str(path))
    return len(c.states), len(c.arcs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--graphs", default="digits,polish")
    args = p.parse_args(argv)
    for name in args.graphs.split(","):
        which, exp, mdl = GRAPHS[name]
        kdir = DATA / which
        with tempfile.TemporaryDirectory(prefix="bench-mkgraph-") as d:
            root = Path(d)
            mdir = model_dir(root, kdir, exp, mdl)
            runs = [build_once(kdir / "data/lang", mdir, root / f"graph{i}")
                    for i in range(args.repeats)]
            core = min(cpp_core(kdir / "data/lang", mdir) for _ in range(args.repeats))
        best = min(runs, key=lambda r: r["wall"])
        ks, ka = kaldi_size(kdir / "exp" / exp / "graph/HCLG.fst")
        print(json.dumps({
            "bench": "mkgraph", "graph": f"{which}/exp/{exp}", "seconds": round(best["wall"], 3),
            "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
            "steps_seconds": {k: best[k]["seconds"] for k in ("LG", "CLG", "Ha", "HCLGa",
                                                              "HCLG")},
            "states": best["HCLG"]["states"], "arcs": best["HCLG"]["arcs"],
            "kaldi_states": ks, "kaldi_arcs": ka, "cpp_core_seconds": round(core, 3),
            "ratio_to_cpp_core": round(best["wall"] / core, 2)}), flush=True)


if __name__ == "__main__":
    main()
