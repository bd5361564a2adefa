"""The accuracy bench: what each lever of the recipe buys, per Kaldi dir, written to
``docs/accuracy.md``.

Per corpus (a Kaldi dir from ../shared, whole or cut to a shape newcomers try first) and per
lever (a set of ``run.sh`` options), the recipe is run for each seed and every model is scored
on the test set and, where it is more than a handful of utterances, the cv split
(``data/train_cv10``: never trained on). A lever is compared with the defaults on the same
seeds and utterances (``plain``, the recipe before its data-size rule, or the lever it builds
on): its errors summed over seeds and sets, the relative change, and a paired-bootstrap 95%
interval of the WER difference (resampling (seed, utterance) pairs). ``default`` is what
``./run.sh`` does with no options: the levers that ``hybridasr/recipe/data_defaults.py``
chooses from the training data's size.

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
    # the real tutorial-sized dirs (read in place: the recipe only reads a Kaldi dir); their
    # best Kaldi system is the monophone GMM the recipe aligns with by default
    "tiny_2spk": dict(
        make=lambda dst: os.symlink(SHARED / "kaldi_tiny_2spk", dst), args=[],
        graph="exp/mono/graph", sets=["test"], seeds=[777, 1, 2], gmm="exp/mono/decode",
        about="kaldi_tiny_2spk: digit strings, 2 speakers x 10 training utterances; test 2 "
              "other speakers x 10 (60 words); Kaldi's best: mono 3.33%, tri1 3.33%"),
    "tiny_1spk": dict(
        make=lambda dst: os.symlink(SHARED / "kaldi_tiny_1spk", dst), args=[],
        graph="exp/mono/graph", sets=["test"], seeds=[777, 1, 2], gmm="exp/mono/decode",
        about="kaldi_tiny_1spk: digit strings, 1 speaker, 10 training and 10 test utterances "
              "(30 words); Kaldi's best: mono 23.33%, tri1 26.67%"),
}

# lever -> recipe options of stages 0-2 ("prep": a recipe dir of its own) and of training, and
# the lever it is compared with ("vs"; default: plain, the recipe before the data-size rule)
PLAIN = ["--feat-type", "mfcc", "--speed-perturb", "false"]
FBANK_SP = ["--feat-type", "fbank", "--speed-perturb", "true"]
LEVERS: Dict[str, dict] = {
    "plain": dict(prep=PLAIN, train="", vs=None,
                  about="MFCCs, no speed perturbation: the defaults before the data-size rule"),
    "default": dict(prep=[], train="", about="the recipe's defaults: chosen from the data's "
                                             "size (data/defaults.json)"),
    "wide": dict(prep=PLAIN, train="--hidden-size=256", about="2 x 256 cells a direction"),
    "fbank": dict(prep=["--feat-type", "fbank", "--speed-perturb", "false"], train="",
                  about="40 log mel filterbanks instead of the dir's MFCCs"),
    "speed_perturb": dict(prep=["--feat-type", "mfcc", "--speed-perturb", "true"], train="",
                          about="speed perturbation 0.9/1.0/1.1 of the training data"),
    "fbank_speed_perturb": dict(prep=FBANK_SP, train="", about="both"),
    # the cv rule (a cv set below MIN_CV_WORDS words is too small to judge an epoch): the
    # choices before it, on the dirs where it changes them
    "newbob_small_cv": dict(prep=["--feat-type", "mfcc", "--speed-perturb", "true",
                                  "--schedule-config", "conf/schedule.conf"], train="",
                            vs="default", about="the defaults before the cv rule: newbob on a "
                                                "cv set of 1-2 utterances, speed perturbation"),
    "all_data_speed_perturb": dict(
        prep=["--feat-type", "mfcc", "--speed-perturb", "true",
              "--schedule-config", "conf/schedule_all_data.conf"], train="", vs="default",
        about="the all-data schedule with speed perturbation"),
    "mlp_splice": dict(
        prep=["--model-config", "conf/model/mlp.conf", "--batching-config",
              "conf/batching/frame_shuffle.conf"], train="--splice=5", vs="default",
        about="nnet1's MLP (4 x 1024 sigmoid) on frames spliced +-5, frame-shuffled batches"),
    "chunked": dict(prep=["--batching-config", "conf/batching/chunking.conf"], train="",
                    vs="default", about="trained on chunks of 100 frames every 50 "
                                        "(conf/batching/chunking.conf), decoded whole"),
    "chunked50": dict(prep=["--batching-config", "conf/batching/chunking.conf"],
                      train="--chunking=50:25", vs="default",
                      about="trained on chunks of 50 frames every 25, decoded whole"),
    "all_data_2_epochs": dict(prep=[], train="--max-iters=2", vs="default",
                              about="the all-data schedule for 2 epochs instead of 4"),
    "dropout": dict(prep=PLAIN, train="--dropout=0.3", about="dropout 0.3 instead of 0.1"),
    "fbank_speed_perturb_wide": dict(prep=FBANK_SP, train="--hidden-size=256",
                                     vs="fbank_speed_perturb",
                                     about="2 x 256 cells a direction, on fbank + speed "
                                           "perturbation"),
    "label_smoothing": dict(prep=FBANK_SP, train="--label-smoothing=0.1",
                            vs="fbank_speed_perturb",
                            about="label smoothing 0.1, on fbank + speed perturbation"),
    "spec_augment": dict(prep=FBANK_SP, vs="fbank_speed_perturb",
                         train=f"--config={REPO / 'conf' / 'augment' / 'spec_augment.conf'}",
                         about="SpecAugment (conf/augment/spec_augment.conf), on fbank + "
                               "speed perturbation"),
}


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="where the Kaldi dirs and runs live")
    p.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated")
    p.add_argument("--levers", default=",".join(LEVERS), help="comma-separated")
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
    return "prep_" + ("_".join(a.strip("-").replace("-", "_").replace("/", "_")
                               for a in prep) or "default")


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
    lines = [f"### {corpus}", "", c["about"] + ".", ""]
    if c["gmm"]:
        b = best_wer(str(work / corpus / "kaldi" / c["gmm"]))
        if b:
            lines += [f"The Kaldi dir's GMM on test: `{b[1]}`.", ""]
    head = ["lever", "seeds"] + [f"{s} WER" for s in sets]
    head += ["all sets", "versus", "relative", "95% interval (points)", "train s", "per seed"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for lever in levers:
        runs = results[lever]
        seeds = sorted(runs)
        per_set = {s: (sum(sum(e for e, _ in runs[k]["sets"][s].values()) for k in seeds),
                       sum(sum(n for _, n in runs[k]["sets"][s].values()) for k in seeds))
                   for s in sets}
        e, n = sum(v[0] for v in per_set.values()), sum(v[1] for v in per_set.values())
        rel = ival = "-"
        vs = LEVERS[lever].get("vs", "plain")
        base = results.get(vs, {}) if vs else {}
        if base and all(k in base for k in seeds):
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
        row += [f"{_pct(e, n)} ({e}/{n})", vs if base else "-", rel, ival, f"{secs:.0f}",
                per_seed]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def rule_lines() -> List[str]:
    """The data-size rule of ``hybridasr/recipe/data_defaults.py``, from its constants."""
    from hybridasr.recipe import data_defaults as dd

    tiers, low = [], 0.0
    for bound, conf in dd.MODEL_TIERS:
        span = f"{low:g} h and more" if bound == float("inf") else f"below {bound:g} h"
        tiers.append(f"`{conf}` {span}")
        low = bound
    chain_tiers, low = [], 0.0
    for bound, conf in dd.CHAIN_MODEL_TIERS:
        span = f"{low:g} h and more" if bound == float("inf") else f"below {bound:g} h"
        chain_tiers.append(f"`{conf}` {span}")
        low = bound
    return [
        "## The defaults: chosen from the training data's size", "",
        "With no options, `./run.sh` measures `data/train` after stage 0 (hours of audio, "
        "utterances, speakers, and the cv set stage 2 would hold out: whether training keeps "
        "its words, and its utterances, words and frames) and chooses five options, printing "
        "each with its reason and writing them "
        "to `data/defaults.json` (copied to `exp/<name>/data_defaults.json`; the values "
        "trained with are in `exp/<name>/train.conf`). Each is overridden by giving it "
        "(`--feat-type`, `--speed-perturb`, `--model-config`, `--schedule-config`, "
        "`--chain-model-config`); the "
        "rule is `hybridasr/recipe/data_defaults.py`.", "",
        "| option | rule | what it rests on |", "| --- | --- | --- |",
        f"| `--feat-type` | `fbank` from {dd.FBANK_MIN_HOURS:g} h of training audio, else "
        "`mfcc` | polish (0.88 h): fbank 2.1% fewer test + cv errors than MFCCs, 4.3% with "
        "speed perturbation (below); 2 speakers / 20 utterances: fbank rejected every "
        "epoch |",
        "| `--speed-perturb` | `true` where a cv set judges an epoch, `false` where every "
        "utterance is trained on (or the features are the Kaldi dir's) | polish and 2 speakers / 20 "
        "utterances gain; 1 speaker / 10 utterances loses |",
        "| `--model-config` | " + "; ".join(tiers) + " | polish (0.88 h): 2 x 256 2.4% fewer "
        "errors than 2 x 128 with fbank + speed perturbation (1.9% with plain MFCCs), for "
        "about 2.5x the training time; the tiny dirs meet their targets with 2 x 128; 3 x 512 "
        "follows nnet1 and RETURNN setups, not measured here |",
        f"| `--schedule-config` | `{dd.SCHEDULE_WITH_CV}` (newbob on the cv loss, Adam "
        f"0.002, at most 30 epochs) where a cv set judges an epoch (training keeps its words, "
        f"at least {dd.MIN_CV_UTTERANCES} utterances and {dd.MIN_CV_WORDS} words), else "
        f"`{dd.SCHEDULE_ALL_DATA}` (every utterance trained on, the cv set for the log only: "
        "4 epochs of at least 100 updates at 0.002) | 1 speaker / 10 utterances: newbob "
        "rejected every epoch; kaldi_tiny_2spk / kaldi_tiny_1spk (cv sets of 2 / 1 "
        "utterances, 6 / 3 words): newbob kept epoch 1, the all-data schedule does better "
        "(below); kaldi_digits (cv: 10 utterances, 10 words) and polish (54, 734) keep "
        "newbob |",
        "| `--chain-model-config` (the TDNN-F of `--chain true`; `local/chain/run_tdnn.sh "
        "--model-config auto`) | " + "; ".join(chain_tiers) + " | Kaldi's 1k TDNN-F is "
        "mini_librispeech's (5 h); on kaldi_digits it trained at about 20 frames/s on one "
        "core, hours an epoch (docs/chain.md) |", "",
        "Dropout (0.1) and the learning rate stay as the chosen confs set them: dropout 0.3 "
        "was worse on the tiny dirs and did not help polish, and the rate is Adam's for "
        "every tier.", ""]


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    work = Path(args.work).resolve()
    levers = args.levers.split(",")
    out = ["# Accuracy: what each lever buys", "",
           "Generated by `python -m experiments.accuracy --work DIR --out docs/accuracy.md` "
           "(a rerun only tabulates what is done). WERs summed over seeds; the interval is a "
           "paired bootstrap of the lever's WER minus the defaults' over (seed, utterance) "
           "pairs; train s: the training's seconds a run (its epochs' sum in metrics.jsonl; on "
           "a 2-core machine shared with other jobs, so a rough cost).", ""] + rule_lines() + \
        ["## Per Kaldi dir", ""]
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
