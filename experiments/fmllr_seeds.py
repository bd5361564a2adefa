"""fMLLR vs plain features on a SAT Kaldi dir (kaldi_hindi_sat), over seeds: per seed the WER
of the recipe's network on test and on the cv split, pooled errors, and a paired bootstrap
interval of the difference over (seed, utterance) pairs of test + cv.

Each variant is a recipe dir (run.sh, cmd.sh, path.sh copied; conf, steps, utils linked) in
``--work-dir``/<variant>: stages 0-2 once, then per seed S::

    run.sh --kaldi-dir <dir> --ali exp/tri3b_ali --graph exp/tri3b/graph --fmllr auto|false \\
           --stage 3 --stop-stage 4 --exp-name blstm_sS --decode-sets "test train_cv10" \\
           --train-opts --seed=S

(runs already done are read back). ``--fmllr-opts`` adds run.sh options to the fMLLR
variant only (its dir is then ``fmllr_<options>``), e.g. ``"--use-kaldi-feats true"``: the
fMLLR pipeline on the Kaldi dir's own MFCCs, which its transforms were estimated on. Run from
the repository root:
e.g.: python -m experiments.fmllr_seeds --seeds 1,2,3 --work-dir /tmp/fmllr_exp
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import Dict

from experiments.realign_seeds import SETS, SET_NAMES, paired_bootstrap, utterance_errors

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(REPO, "egs", "digits", "s5")
DEFAULT_KALDI = os.path.join(os.path.dirname(REPO), "shared", "data", "kaldi_hindi_sat")
VARIANTS = {"fmllr": "auto", "plain": "false"}


def _run(work: str, kaldi: str, fmllr: str, extra, log: str) -> None:
    cmd = [os.path.join(work, "run.sh"), "--kaldi-dir", kaldi, "--ali", "exp/tri3b_ali",
           "--graph", "exp/tri3b/graph", "--fmllr", fmllr] + extra
    with open(log, "a", encoding="utf-8") as f:
        rc = subprocess.run(cmd, cwd=work, env=dict(os.environ, HYBRIDASR_ROOT=REPO),
                            stdout=f, stderr=subprocess.STDOUT).returncode
    if rc:
        raise SystemExit(f"{' '.join(cmd)} failed (rc {rc}): see {log}")


def variant_dirs(fmllr_opts: str = "") -> Dict[str, str]:
    """variant -> its dir under the work dir: ``fmllr`` with ``fmllr_opts`` is
    ``fmllr_<the options, as a name>``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", fmllr_opts).strip("_")
    return {"fmllr": "fmllr" + (f"_{slug}" if slug else ""), "plain": "plain"}


def run_variant(work: str, kaldi: str, fmllr: str, seeds, opts=()) -> None:
    os.makedirs(work, exist_ok=True)
    for name in ("run.sh", "cmd.sh", "path.sh"):  # (copies: edits to the recipe mid-run)
        if not os.path.exists(os.path.join(work, name)):
            shutil.copy(os.path.join(RECIPE, name), os.path.join(work, name))
    for name in ("conf", "steps", "utils", "local"):
        if os.path.lexists(os.path.join(RECIPE, name)) and \
                not os.path.lexists(os.path.join(work, name)):
            os.symlink(os.path.join(RECIPE, name), os.path.join(work, name))
    opts = list(opts)
    if not os.path.exists(os.path.join(work, "data", "train_cv10", "feats.scp")):
        _run(work, kaldi, fmllr, opts + ["--stop-stage", "2"], os.path.join(work, "prep.log"))
    for s in seeds:
        if not os.path.exists(os.path.join(work, "exp", f"blstm_s{s}", "decode_train_cv10",
                                           "scoring")):
            _run(work, kaldi, fmllr, opts + ["--stage", "3", "--stop-stage", "4", "--exp-name",
                                      f"blstm_s{s}", "--decode-sets", " ".join(SETS),
                                      "--train-opts", f"--seed={s}"],
                 os.path.join(work, f"log.s{s}"))


def report(work: str, kaldi: str, seeds, n_boot: int, fmllr_opts: str = "") -> str:
    words = os.path.join(kaldi, "exp", "tri3b", "graph", "words.txt")
    dirs = variant_dirs(fmllr_opts)
    res: Dict[str, Dict[int, dict]] = {}
    for v in VARIANTS:
        res[v] = {s: {SET_NAMES[x]: utterance_errors(
            os.path.join(work, dirs[v], "exp", f"blstm_s{s}", f"decode_{x}"), words) for x in SETS}
            for s in seeds}
    lines = ["| seed | fMLLR test | plain test | fMLLR cv | plain cv |", "|---|---|---|---|---|"]
    tot = {(v, k): [0, 0] for v in VARIANTS for k in SET_NAMES.values()}
    pairs = []
    for s in seeds:
        row = [str(s)]
        for k in ("test", "cv"):
            for v in VARIANTS:
                u = res[v][s][k]
                e, n = sum(a for a, _ in u.values()), sum(b for _, b in u.values())
                tot[(v, k)][0] += e
                tot[(v, k)][1] += n
                row.append(f"{100.0 * e / n:.2f} ({e}/{n})")
            pairs += [(res["plain"][s][k][u][0], res["fmllr"][s][k][u][0],
                       res["plain"][s][k][u][1]) for u in sorted(res["plain"][s][k])]
        lines.append("| " + " | ".join(row) + " |")
    row = ["pooled"]
    for k in ("test", "cv"):
        for v in VARIANTS:
            e, n = tot[(v, k)]
            row.append(f"{100.0 * e / n:.2f} ({e}/{n})")
    lines.append("| " + " | ".join(row) + " |")
    lo, hi = paired_bootstrap(pairs, n_boot)
    de = sum(b - a for a, b, _ in pairs)
    dw = sum(w for _, _, w in pairs)
    lines.append("")
    lines.append(f"fMLLR minus plain, test + cv over {len(seeds)} seeds: {de:+d} errors of {dw} "
                 f"words ({100.0 * de / dw:+.2f} points), 95% paired-bootstrap interval "
                 f"[{lo:+.2f}, {hi:+.2f}] ({n_boot} resamples of (seed, utterance) pairs)")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.fmllr_seeds", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kaldi-dir", default=DEFAULT_KALDI)
    p.add_argument("--work-dir", default="/tmp/fmllr_exp")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--bootstrap", type=int, default=10000)
    p.add_argument("--fmllr-opts", default="",
                   help='more run.sh options of the fMLLR variant, e.g. "--use-kaldi-feats true"')
    p.add_argument("--report-only", action="store_true", help="read finished runs back only")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    dirs = variant_dirs(args.fmllr_opts)
    if not args.report_only:
        for v, fmllr in VARIANTS.items():
            run_variant(os.path.join(args.work_dir, dirs[v]), args.kaldi_dir, fmllr, seeds,
                        shlex.split(args.fmllr_opts) if v == "fmllr" else ())
    print(report(args.work_dir, args.kaldi_dir, seeds, args.bootstrap, args.fmllr_opts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
