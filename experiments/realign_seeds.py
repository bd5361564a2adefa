"""Realignment rounds over several seeds: does a network retrained on its own
alignment score a WER no worse than the first network?

A 10-utterance test set cannot tell two models 1 to 3 words apart, so every model is scored
on the test set and on the cv split (``data/train_cv10``: held out from every round's
training; its newbob control set, never trained on), over several training seeds, and the
difference is given with a paired bootstrap over (seed, utterance) pairs.

In ``--work-dir``: the preparation ``experiments/seeds.py`` shares (``seeds_prep``: a Kaldi
dir cut from kaldi_polish, the recipe's stages 0-2), then per seed S the recipe itself::

    run.sh --stage 3 --exp-name blstm_sS[_<variant>] --realign-iters R [--realign-init I] \\
           --decode-sets "test train_cv10" --train-opts "--seed=S ..." [<recipe-opts>]

(a rerun skips what is done: trained models, alignments and decodes are read back, whatever
the options, so other round options need their own ``--variant``). Prints one JSON line per
model and writes ``--out``: a table per seed and round (how each model was aligned and
trained, alignment agreement with the GMM's, test and cv WER), the totals over seeds and the
bootstrap interval.

Run from the repository root (about 20 min a seed; other round options off the same first
models under a --variant name):
e.g.: python -m experiments.realign_seeds --seeds 1,2,3 --out docs/realign_seeds.md
      python -m experiments.realign_seeds --seeds 1,2,3 --variant scratch \\
          --realign-init scratch --out docs/realign_seeds_scratch.md
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shlex
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from experiments.seeds_prep import DEFAULT_KALDI, GMM, REPO, prepare
from hybridasr.decode.loglikes import PriorOptions
from hybridasr.decode.wer import WerStats
from hybridasr.kaldi.conf import read_config_file
from hybridasr.kaldi.io.table import read_map, read_text_archive
from hybridasr.recipe.summary import best_wer

SETS = ("test", "train_cv10")
SET_NAMES = {"test": "test", "train_cv10": "cv"}


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.realign_seeds", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kaldi-dir", default=DEFAULT_KALDI, help="kaldi_polish (default: %(default)s)")
    p.add_argument("--work-dir", default="/tmp/realign_seeds", help="runs are kept here")
    p.add_argument("--seeds", default="1,2,3", help="training seeds, comma-separated")
    p.add_argument("--rounds", type=int, default=1, help="realignment rounds (--realign-iters)")
    p.add_argument("--realign-init", default="", choices=("", "scratch", "previous"),
                   help="run.sh --realign-init (default: the recipe's)")
    p.add_argument("--align-opts", default="",
                   help="steps/nnet/align.sh options of the rounds (run.sh --align-opts), "
                        "e.g. '--beam 20'")
    p.add_argument("--variant", default="",
                   help="a name for these round options: the rounds go to "
                        "exp/blstm_s<seed>_<variant>_{ali,re}<k>, the first model (trained once "
                        "per seed, exp/blstm_s<seed>) is shared through a link")
    p.add_argument("--train-opts", default="", help="more train.py options for every run")
    p.add_argument("--recipe-opts", default="", help="more run.sh options, e.g. --model-config")
    p.add_argument("--nj", type=int, default=2)
    p.add_argument("--bootstrap", type=int, default=10000, help="bootstrap resamples")
    p.add_argument("--out", default="", help="the markdown report (default: print only)")
    return p


def _recipe(work: str, kaldi: str, seed: int, name: str, rounds: int, args) -> None:
    opts = f"--seed={seed}" + (f" {args.train_opts}" if args.train_opts else "")
    cmd = [os.path.join(work, "run.sh"), "--kaldi-dir", kaldi, "--ali", GMM + "_ali",
           "--graph", GMM + "/graph", "--nj", str(args.nj), "--stage", "3",
           "--exp-name", name, "--realign-iters", str(rounds),
           *(["--realign-init", args.realign_init] if args.realign_init else []),
           "--align-opts", args.align_opts, "--decode-sets", " ".join(SETS),
           "--train-opts", opts] + shlex.split(args.recipe_opts)
    log = os.path.join(work, f"log.{name}")
    with open(log, "a", encoding="utf-8") as f:
        f.write("# " + shlex.join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, cwd=work, env=dict(os.environ, HYBRIDASR_ROOT=REPO),
                            stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"seed {seed}: the recipe failed (rc {rc}); see {log}")


def run_seed(work: str, kaldi: str, seed: int, args) -> str:
    """The recipe's stages 3-5 for one seed; returns the exp name its rounds hang off."""
    base = f"blstm_s{seed}"
    if not args.variant:
        _recipe(work, kaldi, seed, base, args.rounds, args)
        return base
    _recipe(work, kaldi, seed, base, 0, args)  # the first model, trained once per seed
    name = f"{base}_{args.variant}"
    link = os.path.join(work, "exp", name)
    if not os.path.lexists(link):
        os.symlink(base, link)
    _recipe(work, kaldi, seed, name, args.rounds, args)
    return name


def _best_tra(decode_dir: str) -> Tuple[str, str]:
    """(the best ``wer_*`` line, the ``scoring/`` transcript behind it)."""
    b = best_wer(decode_dir)
    if b is None:
        raise SystemExit(f"{decode_dir}: no wer_* (not scored)")
    m = re.fullmatch(r"wer_(\d+)(?:_([0-9.]+))?", os.path.basename(b[2]))
    if not m:
        raise SystemExit(f"{b[2]}: not a wer_LMWT[_WIP] file")
    sub = f"penalty_{m.group(2)}/" if m.group(2) else ""
    return b[1], os.path.join(decode_dir, "scoring", f"{sub}{m.group(1)}.tra")


def utterance_errors(decode_dir: str, words_txt: str) -> Dict[str, Tuple[int, int]]:
    """{utterance: (word errors, reference words)} at the decode dir's best ``wer_*``,
    from ``scoring/test_filt.txt`` and that LM weight's ``scoring/*.tra``."""
    line, tra = _best_tra(decode_dir)
    refs = read_text_archive(os.path.join(decode_dir, "scoring", "test_filt.txt"))
    id2word = {v: k for k, v in read_map(words_txt).items()}
    hyps = {u: [id2word.get(w, w) for w in ws] for u, ws in read_text_archive(tra).items()}
    out = {}
    for u, ref in refs.items():
        stats = WerStats()
        stats.add(ref, hyps.get(u, []))
        out[u] = (stats.word_errs, stats.num_words)
    total = sum(e for e, _ in out.values()), sum(n for _, n in out.values())
    want = re.search(r"\[\s*(\d+)\s*/\s*(\d+)", line)
    if want and (int(want.group(1)), int(want.group(2))) != total:
        raise SystemExit(f"{decode_dir}: per-utterance errors {total} differ from {line!r}")
    return out


def training_figures(exp_dir: str) -> dict:
    """How a model was trained: the model it started from (``train.conf``'s ``--init-model``,
    "" for a new one), the learning rate it started at and its epochs, trained and accepted
    (``metrics.jsonl``, whose epoch 0 is the initial model)."""
    with open(os.path.join(exp_dir, "metrics.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(x) for x in f if x.strip()]
    init = next((e.value or "" for e in read_config_file(os.path.join(exp_dir, "train.conf"))
                 if e.name == "init-model"), "")
    epochs = [r for r in rows if r.get("epoch", 0) > 0]
    return {"init_model": init, "start_lr": rows[0]["lr"], "epochs": len(epochs),
            "accepted": sum(bool(r.get("accepted")) for r in epochs)}


def alignment_prior_scale(ali_dir: str) -> Optional[float]:
    """The prior scale an alignment dir was made with: the forward pass's option in its first
    job's log, forward.py's default when the command there has none (steps/nnet/align.sh
    passes only the options it was given), None without a log."""
    try:
        with open(os.path.join(ali_dir, "log", "align.1.log"), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    m = re.search(r"--prior-scale=([0-9.]+)", text)
    if m:
        return float(m.group(1))
    return PriorOptions().prior_scale if "forward.py" in text else None


def model_figures(work: str, exp: str, words_txt: str, ali: Optional[str] = None) -> dict:
    """One model: per set its best WER line and per-utterance errors; for a retrained model
    the agreement of the alignment it was trained on with the GMM's."""
    fig: dict = {"exp": exp}
    for s in SETS:
        d = os.path.join(work, "exp", exp, f"decode_{s}")
        utts = utterance_errors(d, words_txt)
        errs = sum(e for e, _ in utts.values())
        words = sum(n for _, n in utts.values())
        fig[SET_NAMES[s]] = {"errors": errs, "words": words, "wer": round(100.0 * errs / words, 2),
                             "utterances": utts}
    fig["training"] = training_figures(os.path.join(work, "exp", exp))
    if ali:
        with open(os.path.join(work, "exp", ali, "compare_gmm.json"), encoding="utf-8") as f:
            c = json.load(f)
        fig["alignment"] = {"dir": ali, "utterances": c["utterances"],
                            "not_aligned": c["num_only_in_first"],
                            "prior_scale": alignment_prior_scale(os.path.join(work, "exp", ali)),
                            "phone_agreement": c["phone_agreement"],
                            "pdf_agreement": c["pdf_agreement"]}
    return fig


def paired_bootstrap(diffs: Sequence[Tuple[int, int, int]], n: int, seed: int = 0
                     ) -> Tuple[float, float]:
    """95% interval of the WER difference (percent points) from (errors A, errors B, words)
    triples resampled with replacement (paired: both models on the same utterance)."""
    rng = random.Random(seed)
    k = len(diffs)
    stats = []
    for _ in range(n):
        de = dw = 0
        for _ in range(k):
            a, b, w = diffs[rng.randrange(k)]
            de += b - a
            dw += w
        stats.append(100.0 * de / max(dw, 1))
    stats.sort()
    return stats[int(0.025 * (n - 1))], stats[int(0.975 * (n - 1))]


def compare(first: dict, other: dict, sets: Sequence[str]) -> List[Tuple[int, int, int]]:
    """(first's errors, other's errors, words) per utterance of ``sets``."""
    out = []
    for s in sets:
        a, b = first[s]["utterances"], other[s]["utterances"]
        for u in sorted(a):
            out.append((a[u][0], b[u][0], a[u][1]))
    return out


def _wer(errs: int, words: int) -> str:
    return f"{100.0 * errs / words:.2f} ({errs}/{words})"


def plot(results: Dict[int, List[dict]], path: str) -> None:
    """Test and cv WER of every model, a group of bars per seed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    seeds = sorted(results)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=False)
    for ax, k in zip(axes, ("test", "cv")):
        n = len(results[seeds[0]])
        width = 0.8 / n
        for r in range(n):
            ax.bar([i + r * width for i in range(len(seeds))],
                   [results[s][r][k]["wer"] for s in seeds], width,
                   label="first model" if r == 0 else f"round {r}")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(seeds))])
        ax.set_xticklabels([f"seed {s}" for s in seeds])
        words = results[seeds[0]][0][k]["words"]
        ax.set_title(f"{k} WER % ({words} words)")
        lo = min(results[s][r][k]["wer"] for s in seeds for r in range(n))
        ax.set_ylim(max(0.0, lo - 10), None)
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def report(results: Dict[int, List[dict]], args, seconds: float, prepared: dict,
           png: str = "") -> str:
    seeds = sorted(results)
    lines = ["# Realignment rounds over seeds (kaldi_polish)", "",
             "Generated by `python -m experiments.realign_seeds "
             + shlex.join(sys.argv[1:]) + f"` in {seconds:.0f} s on "
             f"{platform.node() or 'this machine'} ({os.cpu_count()} cores; runs already in "
             "the work dir are read back, not redone). "
             f"Data: {prepared['tr_utts']} training, {prepared['cv_utts']} cv and "
             f"{prepared['test_utts_used']} test utterances; the recipe's default confs; "
             "the round's options as the command gives them, else run.sh's defaults (the "
             "table says how each model was aligned and trained). The cv split is held out "
             "from every model's training (it is newbob's control set). WER: each model's best "
             "LM weight (`wer_*`), as the recipe reports it.", "",
             "| seed | model | trained on | aligned (of GMM-aligned), prior scale | phone / pdf "
             "agreement with the GMM | test WER | cv WER | test+cv errors | training: from, start "
             "learning rate, epochs accepted of trained |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in seeds:
        for i, m in enumerate(results[s]):
            a = m.get("alignment")
            trained = f"`{a['dir']}`" if a else "GMM (tri1)"
            aligned = (f"{a['utterances'] - a['not_aligned']} / {a['utterances']}, "
                       f"{a.get('prior_scale')}" if a else "-")
            agree = f"{a['phone_agreement']:.2f}% / {a['pdf_agreement']:.2f}%" if a else "-"
            both = m["test"]["errors"] + m["cv"]["errors"]
            t = m["training"]
            start = (f"from `{os.path.basename(os.path.dirname(t['init_model']))}`"
                     if t["init_model"] else "new model")
            lines.append(f"| {s if i == 0 else ''} | `{m['exp']}` | {trained} | {aligned} | "
                         f"{agree} | {_wer(m['test']['errors'], m['test']['words'])} | "
                         f"{_wer(m['cv']['errors'], m['cv']['words'])} | {both} | "
                         f"{start}, {t['start_lr']:g}, {t['accepted']} of {t['epochs']} |")
    lines += ["", "Totals over the seeds, and the retrained model's difference from the first "
              f"(paired bootstrap over (seed, utterance), {args.bootstrap} resamples, 95%):", "",
              "| round | test errors | cv errors | test+cv WER | difference from the first "
              "(points) | 95% interval |", "| --- | --- | --- | --- | --- | --- |"]
    verdict = []
    for r in range(args.rounds + 1):
        tot = {k: sum(results[s][r][k]["errors"] for s in seeds) for k in ("test", "cv")}
        words = {k: sum(results[s][r][k]["words"] for s in seeds) for k in ("test", "cv")}
        all_w = words["test"] + words["cv"]
        all_e = tot["test"] + tot["cv"]
        if r == 0:
            lines.append(f"| first model | {tot['test']} | {tot['cv']} | "
                         f"{_wer(all_e, all_w)} | - | - |")
            first_e = all_e
            continue
        pairs = [p for s in seeds for p in compare(results[s][0], results[s][r], ("test", "cv"))]
        lo, hi = paired_bootstrap(pairs, args.bootstrap)
        diff = 100.0 * (all_e - first_e) / all_w
        lines.append(f"| round {r} | {tot['test']} | {tot['cv']} | {_wer(all_e, all_w)} | "
                     f"{diff:+.2f} | [{lo:+.2f}, {hi:+.2f}] |")
        test_pairs = [(results[s][0]["test"]["errors"], results[s][r]["test"]["errors"])
                      for s in seeds]
        worse = sum(b > a for a, b in test_pairs)
        verdict.append(
            f"Round {r}: over {len(seeds)} seed{'s' if len(seeds) > 1 else ''} and {all_w} words the retrained models make "
            f"{all_e - first_e:+d} errors against the first models ({diff:+.2f} points, 95% "
            f"interval [{lo:+.2f}, {hi:+.2f}]): "
            + ("the interval holds 0, the two are not told apart" if lo <= 0 <= hi else
               ("significantly better" if hi < 0 else "significantly worse"))
            + f". On the test set alone the retrained model is worse for {worse} of "
            f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''} ({sum(b - a for a, b in test_pairs):+d} errors in all, of "
            f"{words['test']} words).")
    lines += [""] + verdict + [""]
    if png:
        lines += [f"![test and cv WER per seed]({os.path.basename(png)})", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    start = time.time()
    work = os.path.abspath(args.work_dir)
    prepared = prepare(work, args.kaldi_dir, 0, 0.0, 0, args.nj,
                       lambda m: print(m, file=sys.stderr))
    kaldi = os.path.join(work, "kaldi")
    words_txt = os.path.join(kaldi, GMM, "graph", "words.txt")
    results: Dict[int, List[dict]] = {}
    for seed in seeds:
        name = run_seed(work, kaldi, seed, args)
        models = [model_figures(work, f"blstm_s{seed}", words_txt)]
        for r in range(1, args.rounds + 1):
            models.append(model_figures(work, f"{name}_re{r}", words_txt, f"{name}_ali{r}"))
        results[seed] = models
        for m in models:
            print(json.dumps({"seed": seed, "exp": m["exp"],
                              **{k: {kk: v for kk, v in m[k].items() if kk != "utterances"}
                                 for k in ("test", "cv")},
                              "training": m["training"],
                              **({"alignment": m["alignment"]} if "alignment" in m else {})}),
                  flush=True)
    png = os.path.splitext(args.out)[0] + ".png" if args.out else ""
    if png:
        plot(results, png)
    text = report(results, args, time.time() - start, prepared, png)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.out)
    print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
