"""Decoding with the alignment GMM's log-likelihoods added (``run.sh --gmm-weight``), over
seeds, on the small real Kaldi dirs: is the sum better than the network alone, and than the
GMM alone?

Per case (``experiments.any_dir``'s) and seed S, in ``<work-dir>/<case>_sS``, a fresh copy of
the recipe runs with the defaults::

    run.sh --kaldi-dir <case's dir> <case's options> --decode-sets "test train_cv10" \\
           --train-opts --seed=S

(its decode dirs are the defaults' own: the GMM added below 0.5 h), then the same network is
decoded alone (``steps/nnet/decode.sh`` without ``--gmm-dir``: ``exp/blstm/decodenet_<set>``)
and the GMM alone (``--gmm-weight 1``: ``exp/blstm/decodegmm_<set>``, the GMM's own decoding
through the same decoder and scoring). Every run is kept; a rerun skips what is done. Writes
``--out``: per case the test and cv errors of each system per seed, the totals, and paired
bootstrap intervals over (seed, utterance) pairs of test + cv.

e.g.: python -m experiments.gmm_fusion_seeds --cases hindi_sat,tiny_2spk,tiny_1spk \\
          --seeds 777,1,2 --out docs/gmm_fusion.md
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

from experiments.any_dir import CASES, REPO, SHARED, make_recipe_copy
from experiments.realign_seeds import paired_bootstrap, utterance_errors
from hybridasr.recipe.summary import best_wer
from hybridasr.utils.atomic import atomic_open

SETS = ("test", "train_cv10")
SYSTEMS = (("net", "decodenet", "the network alone"),
           ("gmm", "decodegmm", "the GMM alone (weight 1)"),
           ("sum", "decode", "the defaults: both"))


def weight_systems(weights: List[str]) -> tuple:
    """SYSTEMS and the sums at each of --weights (decoded into ``decodew<W>_<set>``)."""
    return SYSTEMS + tuple((f"w{w}", f"decodew{w}", f"both, the GMM at {w}") for w in weights)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.gmm_fusion_seeds",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="hindi_sat,tiny_2spk,tiny_1spk",
                   help="experiments.any_dir cases with a GMM (default: %(default)s)")
    p.add_argument("--seeds", default="777,1,2", help="training seeds (default: %(default)s)")
    p.add_argument("--work-dir", default="/tmp/gmm_fusion_seeds", help="runs are kept here")
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (default: %(default)s)")
    p.add_argument("--run-opts", default="", help="more run.sh options, e.g. '--gmm-weight 0.5' "
                                                  "for a dir where the defaults add no GMM")
    p.add_argument("--weights", default="", help="comma-separated GMM weights to decode the "
                   "same networks with besides the defaults' (e.g. 0.5,0.67), each its row")
    p.add_argument("--out", default="", help="the markdown report (default: stdout only)")
    return p


def _sh(cmd: List[str], cwd: Path, log: Path) -> None:
    env = dict(os.environ, HYBRIDASR_ROOT=str(REPO))
    with open(log, "a") as f:
        f.write(f"# {' '.join(cmd)}\n")
        f.flush()
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}: see {log}")


def decode_opts(s5: Path) -> str:
    """The decode options the recipe's stage 4 used (its stage4.json)."""
    opts = re.search(r'"decode_opts": "([^"]*)"', (s5 / "exp/blstm/stage4.json").read_text())
    return opts.group(1) if opts else ""


def default_weight(s5: Path) -> str:
    """The --gmm-weight the recipe's decoding used."""
    opts = decode_opts(s5)
    return opts.split("--gmm-weight ")[1].split()[0] if "--gmm-weight " in opts else "0"


def run_one(work: Path, case: str, seed: int, run_opts: str = "",
            weights: List[str] = ()) -> Path:
    """The recipe's defaults for one seed, then the network and the GMM decoded alone, and
    the sum at each of ``weights``."""
    c = CASES[case]
    s5 = work / f"{case}_s{seed}"
    kaldi = work / f"{case}_kaldi"
    if not kaldi.exists():
        c["build"](SHARED / c["src"], kaldi)
    if not (s5 / "run.sh").exists():
        make_recipe_copy(s5)
    log = s5 / "experiment.log"
    summary = s5 / "exp/blstm/summary.json"
    if not summary.exists():
        _sh(["./run.sh", "--kaldi-dir", str(kaldi), *c["args"], "--test",
             c.get("test", "data/test"), "--decode-sets", " ".join(SETS),
             "--train-opts", f"--seed={seed}", *shlex.split(run_opts)], s5, log)
    graph = str(kaldi / c["args"][c["args"].index("--graph") + 1])
    opts = decode_opts(s5)
    if "--gmm-dir " not in opts:
        raise SystemExit(f"{case}: its decoding adds no GMM (data/defaults.json; give "
                         f"--run-opts '--gmm-weight 0.5')")
    words = opts.split("--gmm-dir ")[1].split()
    gmm_dir, feats = words[0], words[words.index("--gmm-feats") + 1]
    for name, prefix, _ in weight_systems(list(weights)):
        if name == "sum":
            continue
        w = {"net": "0", "gmm": "1"}.get(name, name[1:])
        for x in SETS:
            d = s5 / f"exp/blstm/{prefix}_{x}"
            if best_wer(str(d)) is not None:
                continue
            extra = [] if name == "net" else ["--gmm-dir", gmm_dir, "--gmm-weight", w,
                                              "--gmm-feats", feats]
            _sh(["steps/nnet/decode.sh", "--nj", "2", *extra, graph, f"data/{x}",
                 f"exp/blstm/{prefix}_{x}"], s5, log)
    return s5


def figures(s5: Path, words_txt: str, weights: List[str] = ()) -> Dict[str, Dict[str, dict]]:
    """{system: {set: {utt: (errors, words)}}}."""
    return {name: {x: utterance_errors(str(s5 / f"exp/blstm/{prefix}_{x}"), words_txt)
                   for x in SETS} for name, prefix, _ in weight_systems(list(weights))}


def _tot(per: Dict[str, tuple]) -> tuple:
    return sum(e for e, _ in per.values()), sum(n for _, n in per.values())


def report(cases: List[str], seeds: List[int], work: Path, seconds: float,
           run_opts: str = "", weights: List[str] = ()) -> str:
    systems = weight_systems(list(weights))
    out = ["# The network, its alignment GMM, and both (`run.sh --gmm-weight`)", "",
           f"Generated by `python -m experiments.gmm_fusion_seeds --cases {','.join(cases)} "
           f"--seeds {','.join(map(str, seeds))}"
           f"{f' --run-opts {shlex.quote(run_opts)}' if run_opts else ''}"
           f"{' --weights ' + ','.join(weights) if weights else ''}` (this invocation {seconds / 60:.0f} minutes on a "
           f"2-core machine; runs already in its --work-dir are read back, each new one takes "
           f"about a minute). Per seed, the recipe with its defaults (below 0.5 h: the network's and "
           f"the GMM's log-likelihoods, the GMM at the weight `data/defaults.json` chose, said "
           f"in each table), then the same network decoded alone, the GMM alone "
           f"(`--gmm-weight 1`) and the sum at each of `--weights`, on test and on the cv split "
           f"(`data/train_cv10`; the GMM was trained on it, the network not unless the "
           f"all-data schedule trains on every utterance). Errors / words at each decode "
           f"dir's best LM weight and penalty (`steps/score.sh`); intervals: 95% paired "
           f"bootstrap of test + cv over (seed, utterance) pairs, 5000 resamples.", ""]
    for case in cases:
        c = CASES[case]
        kaldi = work / f"{case}_kaldi"
        words_txt = str(kaldi / c["args"][c["args"].index("--graph") + 1] / "words.txt")
        figs = {s: figures(work / f"{case}_s{s}", words_txt, weights) for s in seeds}
        chosen = sorted({default_weight(work / f"{case}_s{s}") for s in seeds})
        out += [f"## {case}", "", c["shape"] + f"; the defaults' GMM weight: "
                f"{', '.join(chosen)}.", "",
                "| system | " + " | ".join(f"seed {s}: test, cv" for s in seeds) +
                " | test | cv | test + cv |",
                "|---" * (len(seeds) + 4) + "|"]
        for name, _, label in systems:
            row, tt, tc = [], [0, 0], [0, 0]
            for s in seeds:
                t, v = _tot(figs[s][name]["test"]), _tot(figs[s][name]["train_cv10"])
                row.append(f"{t[0]}/{t[1]}, {v[0]}/{v[1]}")
                tt = [tt[0] + t[0], tt[1] + t[1]]
                tc = [tc[0] + v[0], tc[1] + v[1]]
            both = (tt[0] + tc[0], tt[1] + tc[1])
            out.append(f"| {label} | " + " | ".join(row) +
                       f" | {100 * tt[0] / tt[1]:.2f} ({tt[0]}/{tt[1]}) | "
                       f"{100 * tc[0] / max(tc[1], 1):.2f} ({tc[0]}/{tc[1]}) | "
                       f"{100 * both[0] / both[1]:.2f} ({both[0]}/{both[1]}) |")
        out.append("")
        for other in ("net", "gmm", *(f"w{w}" for w in weights)):
            diffs = [(figs[s][other][x][u][0], figs[s]["sum"][x][u][0],
                      figs[s]["sum"][x][u][1])
                     for s in seeds for x in SETS for u in sorted(figs[s]["sum"][x])]
            lo, hi = paired_bootstrap(diffs, 5000)
            d = sum(b - a for a, b, _ in diffs)
            n = sum(w for _, _, w in diffs)
            label = dict((k, v) for k, _, v in systems)[other]
            out.append(f"- the defaults minus {label}: {d:+d} errors of {n} words "
                       f"({100 * d / n:+.2f} points), 95% interval [{lo:+.2f}, {hi:+.2f}].")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"--cases: no case {c!r} (experiments.any_dir: "
                             f"{', '.join(CASES)})")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    for c in cases:  # (the Kaldi dir copies first: runs of one case share theirs)
        kaldi = work / f"{c}_kaldi"
        if not kaldi.exists():
            CASES[c]["build"](SHARED / CASES[c]["src"], kaldi)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        weights = [w for w in args.weights.split(",") if w]
        for f in [pool.submit(run_one, work, c, s, args.run_opts, weights)
                  for c in cases for s in seeds]:
            print(f.result(), flush=True)
    text = report(cases, seeds, work, time.time() - start, args.run_opts, weights)
    print(text)
    if args.out:
        with atomic_open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
