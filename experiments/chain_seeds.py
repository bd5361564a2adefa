"""The chain (LF-MMI TDNN-F) model against the default cross-entropy hybrid on one Kaldi dir,
over seeds: per seed and model the WER on test and on the cv split, scored with
``--ref-normalize true`` and as Kaldi scores, pooled errors, and a paired-bootstrap interval
of chain minus CE over (seed, utterance) pairs of test + cv.

One recipe dir (run.sh, cmd.sh, path.sh copied; conf, steps, utils, local linked) in
``--work-dir``: stages 0-2 once, then per seed S::

    run.sh --kaldi-dir <dir> --ali <ali> --graph <graph> --stage 3 --stop-stage 4 \\
           --exp-name blstm_sS --decode-sets "test train_cv10" --ref-normalize true \\
           --train-opts --seed=S
    local/chain/run_tdnn.sh --stop-stage 2 --decode-sets "test train_cv10" \\
           --ref-normalize true --train-opts --seed=S <lang> <kaldi-dir>/<ali> exp/chain/tdnn_sS

(the chain tree and den.fst, exp/chain/tree and exp/chain/den, are made once and shared:
they do not depend on the seed). ``--ali none``: the GMM-free path (a Kaldi dir without
``exp/``): stages 0-2 make the flat start, the CE model decodes with its own graph
(``exp/blstm_sS/graph``) and the chain model starts from the flat start's alignment
(``exp/tri_ali``, or ``exp/flat/ali_final`` without a CD tree), with ``<lang>`` the one the
recipe uses (the Kaldi dir's ``data/lang``, or ``data/lang`` made from its dict dir), as
``run.sh --chain true`` does. Runs already done are read back; each run's seconds go to
``<work-dir>/seconds.json``. Kaldi's scoring (``--ref-normalize false``) is made in a copy
of each decode dir (``<decode-dir>_kaldi``: its lattices linked, scored again). ``--smbr``: also the CE model
after 4 epochs of sMBR (``run.sh --stage 4 --stop-stage 4 --seq-epochs 4``). Run from the
repository root:
e.g.: python -m experiments.chain_seeds --seeds 777,1 --smbr --work-dir /tmp/chain_polish
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Tuple

from experiments.realign_seeds import SETS, SET_NAMES, paired_bootstrap, utterance_errors

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(REPO, "egs", "digits", "s5")
DEFAULT_KALDI = os.path.join(os.path.dirname(REPO), "shared", "data", "kaldi_polish")
MODELS = {"ce": "exp/blstm_s{s}", "smbr": "exp/blstm_s{s}_smbr", "chain": "exp/chain/tdnn_s{s}"}
MODEL_NAMES = {"ce": "cross-entropy BLSTM (the defaults)",
               "smbr": "the CE BLSTM after 4 epochs of sMBR (--seq-epochs 4)",
               "chain": "chain TDNN-F (the defaults)"}


def _run(cmd: List[str], work: str, log: str, seconds: Dict[str, float], key: str) -> None:
    start = time.time()
    with open(log, "a", encoding="utf-8") as f:
        rc = subprocess.run(cmd, cwd=work, env=dict(os.environ, HYBRIDASR_ROOT=REPO),
                            stdout=f, stderr=subprocess.STDOUT).returncode
    if rc:
        raise SystemExit(f"{' '.join(cmd)} failed (rc {rc}): see {log}")
    seconds[key] = round(time.time() - start, 1)
    path = os.path.join(work, "seconds.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(seconds, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def prepare(work: str) -> Dict[str, float]:
    os.makedirs(work, exist_ok=True)
    for name in ("run.sh", "cmd.sh", "path.sh"):  # (copies: edits to the recipe mid-run)
        if not os.path.exists(os.path.join(work, name)):
            shutil.copy(os.path.join(RECIPE, name), os.path.join(work, name))
    for name in ("conf", "steps", "utils", "local"):
        if not os.path.lexists(os.path.join(work, name)):
            os.symlink(os.path.join(RECIPE, name), os.path.join(work, name))
    path = os.path.join(work, "seconds.json")
    return json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}


def gmm_free(ali: str) -> bool:
    return ali == "none"


def chain_inputs(work: str, kaldi: str, ali: str) -> Tuple[str, str]:
    """(lang dir, alignment dir) of the chain model: the GMM's, or the flat start's (as
    run.sh's ``chain_ali``, the lang dir as ``resolve_kaldi_dir_options`` picks it)."""
    if not gmm_free(ali):
        return os.path.join(kaldi, "data", "lang"), os.path.join(kaldi, ali)
    lang = os.path.join(kaldi, "data", "lang")
    if not os.path.exists(os.path.join(lang, "L.fst")):
        lang = os.path.join(work, "data", "lang")
    tri = os.path.join(work, "exp", "tri_ali")
    return lang, tri if os.path.isdir(tri) else os.path.join(work, "exp", "flat", "ali_final")


def ce_graph(work: str, kaldi: str, ali: str, graph: str, seed: int) -> str:
    """The CE model's graph: the Kaldi dir's, or with --ali none the one made beside it."""
    if gmm_free(ali):
        return os.path.join(work, MODELS["ce"].format(s=seed), "graph")
    return os.path.join(kaldi, graph)


def run_seeds(work: str, kaldi: str, ali: str, graph: str, seeds, smbr: bool) -> None:
    seconds = prepare(work)
    base = [os.path.join(work, "run.sh"), "--kaldi-dir", kaldi, "--ali", ali]
    if not gmm_free(ali):
        base += ["--graph", graph]
    if not os.path.exists(os.path.join(work, "data", "train_cv10", "feats.scp")):
        _run(base + ["--stop-stage", "2"], work, os.path.join(work, "prep.log"), seconds, "prep")
    lang, chain_ali = chain_inputs(work, kaldi, ali)
    for s in seeds:
        if not os.path.exists(os.path.join(work, MODELS["ce"].format(s=s), "decode_train_cv10",
                                           "scoring")):
            _run(base + ["--stage", "3", "--stop-stage", "4", "--exp-name", f"blstm_s{s}",
                         "--decode-sets", " ".join(SETS), "--ref-normalize", "true",
                         "--train-opts", f"--seed={s}"],
                 work, os.path.join(work, f"log.ce_s{s}"), seconds, f"ce_s{s}")
        if smbr and not os.path.exists(os.path.join(work, MODELS["smbr"].format(s=s),
                                                    "decode_train_cv10", "scoring")):
            _run(base + ["--stage", "4", "--stop-stage", "4", "--exp-name", f"blstm_s{s}",
                         "--decode-sets", " ".join(SETS), "--ref-normalize", "true",
                         "--seq-epochs", "4", "--train-opts", f"--seed={s}"],
                 work, os.path.join(work, f"log.smbr_s{s}"), seconds, f"smbr_s{s}")
        if not os.path.exists(os.path.join(work, MODELS["chain"].format(s=s),
                                           "decode_train_cv10", "scoring")):
            _run([os.path.join(work, "local", "chain", "run_tdnn.sh"), "--stop-stage", "2",
                  "--decode-sets", " ".join(SETS), "--ref-normalize", "true",
                  "--tree-dir", "exp/chain/tree", "--den-dir", "exp/chain/den",
                  "--train-opts", f"--seed={s}", lang, chain_ali,
                  MODELS["chain"].format(s=s)],
                 work, os.path.join(work, f"log.chain_s{s}"), seconds, f"chain_s{s}")


def kaldi_scored(work: str, decode_dir: str, data: str, graph: str) -> str:
    """``<decode_dir>_kaldi``: the same lattices scored with ``--ref-normalize false``."""
    out = decode_dir + "_kaldi"
    if not os.path.isdir(os.path.join(out, "scoring")):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for name in os.listdir(decode_dir):
            if name.startswith("lat.") or name == "num_jobs":
                os.symlink(os.path.abspath(os.path.join(decode_dir, name)),
                           os.path.join(out, name))
        model = os.path.join(os.path.dirname(decode_dir), "final.mdl")
        subprocess.run([os.path.join(work, "steps", "score.sh"), "--model", model, data, graph,
                        out], cwd=work, env=dict(os.environ, HYBRIDASR_ROOT=REPO), check=True,
                       stdout=subprocess.DEVNULL)
    return out


def collect(work: str, kaldi: str, graph: str, seeds, kaldi_scoring: bool, models,
            ali: str = "exp/tri1") -> Dict[str, Dict[int, Dict[str, Dict[str, Tuple[int, int]]]]]:
    """{model: {seed: {"test"|"cv": {utterance: (errors, words)}}}}."""
    res: Dict[str, Dict[int, dict]] = {}
    for m in models:
        pattern = MODELS[m]
        res[m] = {}
        for s in seeds:
            graph_dir = (ce_graph(work, kaldi, ali, graph, s) if m != "chain"
                         else os.path.join(work, "exp", "chain", "tree", "graph"))
            words = os.path.join(graph_dir, "words.txt")
            res[m][s] = {}
            for x in SETS:
                d = os.path.join(work, pattern.format(s=s), f"decode_{x}")
                if kaldi_scoring:
                    d = kaldi_scored(work, d, os.path.join(work, "data", x), graph_dir)
                res[m][s][SET_NAMES[x]] = utterance_errors(d, words)
    return res


def _wer(errs: List[Tuple[int, int]]) -> str:
    e, n = sum(a for a, _ in errs), sum(b for _, b in errs)
    return f"{100.0 * e / n:.2f} ({e}/{n})"


def table(res, seeds, n_boot: int, title: str) -> List[str]:
    lines = [f"**{title}**", "", "| model | seed | test WER | cv WER | test + cv |",
             "| --- | --- | --- | --- | --- |"]
    for m in res:
        for s in list(seeds) + ["pooled"]:
            ss = seeds if s == "pooled" else [s]
            t = [v for q in ss for v in res[m][q]["test"].values()]
            c = [v for q in ss for v in res[m][q]["cv"].values()]
            lines.append(f"| {MODEL_NAMES[m]} | {s} | {_wer(t)} | {_wer(c)} | {_wer(t + c)} |")
    lines.append("")
    for base in [m for m in ("ce", "smbr") if m in res]:
        pairs = [(res[base][s][k][u][0], res["chain"][s][k][u][0], res[base][s][k][u][1])
                 for s in seeds for k in ("test", "cv") for u in sorted(res[base][s][k])]
        lo, hi = paired_bootstrap(pairs, n_boot)
        de = sum(b - a for a, b, _ in pairs)
        errs = sum(a for a, _, _ in pairs)
        dw = sum(w for _, _, w in pairs)
        lines.append(f"Chain minus {base.upper() if base == 'ce' else 'sMBR'}, test + cv over "
                     f"{len(seeds)} seeds: {de:+d} errors of {dw} words ({100.0 * de / dw:+.2f} "
                     f"points, {100.0 * de / max(errs, 1):+.1f}% of its {errs} errors), 95% "
                     f"paired-bootstrap interval [{lo:+.2f}, {hi:+.2f}] points ({n_boot} "
                     f"resamples of (seed, utterance) pairs).")
    return lines + [""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.chain_seeds", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kaldi-dir", default=DEFAULT_KALDI)
    p.add_argument("--ali", default="exp/tri1",
                   help="the GMM's alignment in --kaldi-dir; none: the GMM-free path")
    p.add_argument("--graph", default="exp/tri1/graph")
    p.add_argument("--work-dir", default="/tmp/chain_polish")
    p.add_argument("--seeds", default="777,1")
    p.add_argument("--bootstrap", type=int, default=10000)
    p.add_argument("--smbr", action="store_true", help="also 4 epochs of sMBR on each CE model")
    p.add_argument("--report-only", action="store_true", help="read finished runs back only")
    p.add_argument("--chain-name", default="tdnn",
                   help="with --report-only: the chain runs to read, exp/chain/<name>_s<seed> "
                        "(e.g. a variant trained by hand with local/chain/run_tdnn.sh)")
    args = p.parse_args(argv)
    if args.chain_name != "tdnn":
        MODELS["chain"] = f"exp/chain/{args.chain_name}_s{{s}}"
        MODEL_NAMES["chain"] = f"chain ({args.chain_name})"
    models = ["ce"] + (["smbr"] if args.smbr else []) + ["chain"]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    kaldi = os.path.abspath(args.kaldi_dir)
    if not args.report_only:
        run_seeds(args.work_dir, kaldi, args.ali, args.graph, seeds, args.smbr)
    lines = table(collect(args.work_dir, kaldi, args.graph, seeds, False, models, args.ali),
                  seeds, args.bootstrap, "Scored with --ref-normalize true")
    lines += table(collect(args.work_dir, kaldi, args.graph, seeds, True, models, args.ali),
                   seeds, args.bootstrap, "Scored as Kaldi scores (--ref-normalize false)")
    path = os.path.join(args.work_dir, "seconds.json")
    if os.path.exists(path):
        lines.append("Seconds of each run (this machine, 2 cores, other jobs running): " +
                     ", ".join(f"{k} {v:.0f}" for k, v in
                               sorted(json.load(open(path, encoding="utf-8")).items())))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
