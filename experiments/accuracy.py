"""The accuracy bench (issue 30): what each lever of the recipe buys, per Kaldi dir, written to
``docs/accuracy.md``.

Per corpus (a Kaldi dir from ../shared, whole or cut to a shape newcomers try first) and per
lever (a set of ``run.sh`` options), the recipe is run for each seed and every model is scored
on the test set and, where it is more than a handful of utterances, the cv split
(``data/train_cv10``: never trained on). A lever is compared with the defaults on the same
seeds and utterances: its errors summed over seeds and sets, the relative change, and a
paired-bootstrap 95% interval of the WER difference (resampling (seed, utterance) pairs).

In ``--work``: ``<corpus>/kaldi`` (the Kaldi dir, read only: symlinks, ``final.mdl`` a real
symlink), then one recipe dir per corpus and set of data options (``<corpus>/<prep>``:
stages 0-2, shared by the levers that only change training), and in it ``exp/<lever>_s<seed>``
(stages 3-4). A rerun skips every model already decoded, so the table can be regenerated
at once, or a lever added, without training again::

    python -m experiments.accuracy --work /tmp/accuracy --out docs/accuracy.md
    python -m experiments.accuracy --work /tmp/accuracy --corpora polish --levers default,wide
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Dict, List

from experiments.kaldi_shapes import digits_dir
from experiments.realign_seeds import paired_bootstrap, utterance_errors
from experiments.seeds_prep import make_kaldi_dir
from hybridasr.recipe.summary import best_wer, read_metrics

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "egs" / "digits" / "s5"
SHARED = REPO.parent / "shared" / "data"

# corpus -> how its Kaldi dir is made, the recipe options that point at it, the decode sets,
# the seeds, and the GMM decode dir to compare with (inside the Kaldi dir, where it is ours)
CORPORA: Dict[str, dict] = {
    "polish": dict(make=lambda dst: make_kaldi_dir(str(SHARED / "kaldi_polish"), str(dst), 0,
                                                   0.0, 0),
                   args=["--ali", "exp/tri1_ali", "--graph", "exp/tri1/graph"],
                   graph="exp/tri1/graph",
                   sets=["test", "train_cv10"], seeds=[777, 1], gmm="exp/tri1/decode",
                   about="kaldi_polish: 540 read sentences of 3 speakers (16 kHz), tri1 tree "
                         "of 1,192 pdfs; test 10 utterances of 1 speaker (152 words)"),
    "digits_2spk20": dict(
        make=lambda dst: digits_dir(SHARED / "kaldi_digits", dst, ["jackson_0", "nicolas_0"],
                                    ["jackson_4", "nicolas_2"], person_speakers=True),
        args=[], graph="exp/mono/graph", sets=["test"], seeds=[777, 1, 2], gmm=None,
        about="kaldi_digits cut to 2 speakers, 20 training utterances; test: 20 utterances of "
              "other sessions (Kaldi's GMM on a real dir of this shape: 3.33%)"),
    "digits_1spk10": dict(
        make=lambda dst: digits_dir(SHARED / "kaldi_digits", dst, ["jackson_0"],
                                    ["jackson_1", "jackson_2", "jackson_3"],
                                    person_speakers=True, test_from="train"),
        args=[], graph="exp/mono/graph", sets=["test"], seeds=[777, 1, 2], gmm=None,
        about="kaldi_digits cut to 1 speaker, 10 training utterances; test: 30 utterances of "
              "that speaker's other sessions (Kaldi's GMM on a real dir of this shape: "
              "23.33%)"),
}

# lever -> recipe options of stages 0-2 ("prep": a recipe dir of its own) and of training
LEVERS: Dict[str, dict] = {
    "default": dict(prep=[], train="", about="the recipe's defaults"),
    "wide": dict(prep=[], train="--hidden-size=256", about="2 x 256 cells a direction"),
    "fbank": dict(prep=["--feat-type", "fbank"], train="",
                  about="40 log mel filterbanks instead of the dir's MFCCs"),
    "speed_perturb": dict(prep=["--speed-perturb", "true"], train="",
                          about="speed perturbation 0.9/1.0/1.1 of the training data"),
    "fbank_speed_perturb": dict(prep=["--feat-type", "fbank", "--speed-perturb", "true"],
                                train="", about="both"),
    "dropout": dict(prep=[], train="--dropout=0.3", about="dropout 0.3 instead of 0.1"),
}


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="where the Kaldi dirs and runs live")
    p.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated")
    p.add_argument("--levers", default=",".join(LEVERS), help="comma-separated; default first")
    p.add_argument("--seeds", default="", help="override every corpus's seeds (e.g. 777)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--table-only", action="store_true", help="run nothing, tabulate")
    p.add_argument("--out", default="", help="markdown file (default: stdout)")
    return p


def _run(cmd: List[str], cwd: Path, log: Path) -> float:
    t = time.time()
    with open(log, "a", encoding="utf-8") as f:
        f.write("# " + shlex.join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, HYBRIDASR_ROOT=str(REPO)),
                            stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed (rc {rc}) in {cwd}: see {log}")
    return time.time() - t


def _prep_name(prep: List[str]) -> str:
    return "prep_" + ("_".join(a.strip("-").replace("-", "_") for a in prep) or "default")


def recipe_dir(work: Path, corpus: str, prep: List[str]) -> Path:
    """The corpus's Kaldi dir and a recipe dir with stages 0-2 done for ``prep``."""
    c = CORPORA[corpus]
    kaldi = work / corpus / "kaldi"
    if not kaldi.exists():
        kaldi.parent.mkdir(parents=True, exist_ok=True)
        c["make"](kaldi)
    s5 = work / corpus / _prep_name(prep)
    if not (s5 / "data" / "train_cv10").exists():
        s5.mkdir(parents=True, exist_ok=True)
        for f in ("run.sh", "cmd.sh", "path.sh", "conf", "steps", "utils"):
            if not (s5 / f).exists():
                os.symlink(RECIPE / f, s5 / f)
        _run(["./run.sh", "--kaldi-dir", str(kaldi), *c["args"], *prep, "--stop-stage", "2"],
             s5, s5 / "prepare.log")
    return s5


def run_model(s5: Path, corpus: str, lever: str, seed: int) -> dict:
    """Stages 3-4 for one lever and seed (skipped when decoded); its figures."""
    c, lv = CORPORA[corpus], LEVERS[lever]
    name = f"{lever}_s{seed}"
    exp = s5 / "exp" / name
    done = exp / "bench.json"
    if not done.exists():
        opts = f"--seed={seed} {lv['train']}".strip()
        secs = _run(["./run.sh", "--kaldi-dir", str(s5.parent / "kaldi"), *c["args"],
                     *lv["prep"], "--stage", "3", "--stop-stage", "4", "--exp-name", name,
                     "--decode-sets", " ".join(c["sets"]), "--train-opts", opts],
                    s5, s5 / f"log.{name}")
        tmp = done.with_suffix(".tmp")
        tmp.write_text(json.dumps({"seconds": secs, "train_opts": opts}))
        os.replace(tmp, done)
    words = s5.parent / "kaldi" / c["graph"] / "words.txt"
    fig = json.loads(done.read_text())
    fig["train_seconds"] = sum(m.get("seconds", 0.0) for m in read_metrics(str(exp)))
    fig["sets"] = {s: utterance_errors(str(exp / f"decode_{s}"), str(words))
                   for s in c["sets"]}
    return fig


def _pct(e: int, n: int) -> str:
    return f"{100.0 * e / max(n, 1):.2f}"


def corpus_table(work: Path, corpus: str, results: Dict[str, Dict[int, dict]],
                 n_boot: int) -> List[str]:
    c = CORPORA[corpus]
    sets = c["sets"]
    levers = list(results)
    base = results[levers[0]]
    lines = [f"### {corpus}", "", c["about"] + ".", ""]
    if c["gmm"]:
        b = best_wer(str(work / corpus / "kaldi" / c["gmm"]))
        if b:
            lines += [f"The Kaldi dir's GMM on test: `{b[1]}`.", ""]
    head = ["lever", "seeds"] + [f"{s} WER" for s in sets]
    head += ["all sets", "relative", "95% interval (points)", "train s", "per seed"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for lever in levers:
        runs = results[lever]
        seeds = sorted(runs)
        per_set = {s: (sum(sum(e for e, _ in runs[k]["sets"][s].values()) for k in seeds),
                       sum(sum(n for _, n in runs[k]["sets"][s].values()) for k in seeds))
                   for s in sets}
        e, n = sum(v[0] for v in per_set.values()), sum(v[1] for v in per_set.values())
        rel = ival = "-"
        if lever != levers[0] and all(k in base for k in seeds):
            triples = [(base[k]["sets"][s][u][0], runs[k]["sets"][s][u][0],
                        runs[k]["sets"][s][u][1])
                       for k in seeds for s in sets for u in sorted(runs[k]["sets"][s])]
            b = sum(t[0] for t in triples)
            rel = f"{100.0 * (e - b) / max(b, 1):+.1f}%"
            lo, hi = paired_bootstrap(triples, n_boot)
            ival = f"[{lo:+.2f}, {hi:+.2f}]"
        per_seed = ", ".join(
            f"{k}: " + "/".join(_pct(sum(x for x, _ in runs[k]["sets"][s].values()),
                                     sum(y for _, y in runs[k]["sets"][s].values()))
                                for s in sets) for k in seeds)
        secs = sum(runs[k]["train_seconds"] for k in seeds) / len(seeds)
        row = [f"{lever} ({LEVERS[lever]['about']})", str(len(seeds))]
        row += [f"{_pct(*per_set[s])} ({per_set[s][0]}/{per_set[s][1]})" for s in sets]
        row += [f"{_pct(e, n)} ({e}/{n})", rel, ival, f"{secs:.0f}", per_seed]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    work = Path(args.work).resolve()
    levers = args.levers.split(",")
    out = ["# Accuracy: what each lever buys", "",
           "Generated by `python -m experiments.accuracy --work DIR --out docs/accuracy.md` "
           "(a rerun only tabulates what is done). WERs summed over seeds; the interval is a "
           "paired bootstrap of the lever's WER minus the defaults' over (seed, utterance) "
           "pairs; train s: the training's seconds a run (its epochs' sum in metrics.jsonl; on a 2-core "
           "machine shared with other jobs, so a rough cost).", ""]
    for corpus in args.corpora.split(","):
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds \
            else CORPORA[corpus]["seeds"]
        results: Dict[str, Dict[int, dict]] = {}
        for lever in levers:
            prep = LEVERS[lever]["prep"]
            s5 = work / corpus / _prep_name(prep) if args.table_only \
                else recipe_dir(work, corpus, prep)
            for seed in seeds:
                if args.table_only and not (s5 / "exp" / f"{lever}_s{seed}"
                                            / "bench.json").exists():
                    continue
                fig = run_model(s5, corpus, lever, seed)
                results.setdefault(lever, {})[seed] = fig
                print(json.dumps({"corpus": corpus, "lever": lever, "seed": seed,
                                  "seconds": round(fig["seconds"], 1),
                                  "errors": {s: [sum(e for e, _ in v.values()),
                                                 sum(n for _, n in v.values())]
                                             for s, v in fig["sets"].items()}}), flush=True)
        if results:
            out += corpus_table(work, corpus, results, args.bootstrap)
    text = "\n".join(out) + "\n"
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.out)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
