"""The models of a GMM-free recipe run (``./run.sh --ali none``) side by side: the flat-start
monophone network and the context-dependent network (and the Kaldi dir's GMM, when it has one),
each decode set's best WER, the pooled words of all sets, and a paired-bootstrap 95% interval of
the CD network's WER minus the monophone network's (utterances resampled, both models on the
same ones). Writes a markdown table.

    python -m experiments.flatstart --work egs/digits/s5 --sets "test train_cv10" \\
        --gmm-decode ../shared/data/kaldi_polish/exp/mono/decode --out docs/flatstart_polish.md
"""
from __future__ import annotations

import argparse
import os
from typing import Dict, List, Optional, Tuple

from experiments.realign_seeds import paired_bootstrap, utterance_errors
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.recipe.summary import best_wer


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="the recipe dir the run used")
    p.add_argument("--exp", default="exp/blstm", help="the CD network, inside --work")
    p.add_argument("--sets", default="test train_cv10", help="decode sets (data/<set>)")
    p.add_argument("--gmm-decode", default="", help="a GMM decode dir of the test set")
    p.add_argument("--title", default="", help="the table's heading")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--out", default="", help="markdown file (default: stdout)")
    return p


def _errors(work: str, exp: str, sets: List[str], words: str) -> Dict[str, Dict[str, Tuple]]:
    return {s: utterance_errors(os.path.join(work, exp, f"decode_{s}"), words) for s in sets}


def _wer(errs: Dict[str, Tuple[int, int]]) -> Tuple[int, int]:
    return sum(e for e, _ in errs.values()), sum(n for _, n in errs.values())


def _cell(e: int, n: int) -> str:
    return f"{100.0 * e / max(n, 1):.2f} ({e}/{n})"


def table(work: str, exp: str, sets: List[str], gmm_decode: Optional[str], title: str,
          n_boot: int) -> str:
    final = os.path.join(work, "exp/flat/final_nnet_dir")
    if not os.path.isfile(final):
        raise SystemExit(f"{work}: no flat-start network ({final} is missing: the flat start "
                         f"was the monophone GMM, run.sh's default --flat-objective gmm); "
                         f"this table compares a network flat start with its CD network: "
                         f"run with --flat-objective fullsum")
    flat = os.path.join("exp/flat", open(final).read().strip())
    models = [(f"flat-start monophone network ({flat})", flat),
              (f"context-dependent network ({exp})", exp)]
    words = {m: os.path.join(work, d, "graph" if d == exp else "../mono/graph", "words.txt")
             for m, d in models}
    errs = {m: _errors(work, d, sets, words[m]) for m, d in models}
    pdfs = {m: _num_pdfs(os.path.join(work, d)) for m, d in models}
    lines = [f"## {title or work}", "",
             "| model | pdfs | " + " | ".join(f"{s} WER" for s in sets) + " | all sets |",
             "| --- | --- | " + " | ".join("---" for _ in sets) + " | --- |"]
    if gmm_decode:
        g = best_wer(gmm_decode)
        cell = g[1].split("[")[0].replace("%WER", "").strip() if g else "-"
        lines.append(f"| the Kaldi dir's GMM ({gmm_decode}) | | {cell} |" + " - |" * len(sets))
    for m, _ in models:
        cells = [_cell(*_wer(errs[m][s])) for s in sets]
        pooled = [x for s in sets for x in errs[m][s].values()]
        lines.append(f"| {m} | {pdfs[m]} | " + " | ".join(cells) +
                     f" | {_cell(sum(e for e, _ in pooled), sum(n for _, n in pooled))} |")
    (mono, _), (cd, _) = models
    diffs = [(errs[mono][s][u][0], errs[cd][s][u][0], errs[mono][s][u][1])
             for s in sets for u in sorted(errs[mono][s])]
    lo, hi = paired_bootstrap(diffs, n_boot)
    lines += ["", f"CD minus monophone, all sets pooled ({len(diffs)} utterances): 95% "
                  f"paired-bootstrap interval [{lo:+.2f}, {hi:+.2f}] WER points "
                  f"({n_boot} resamples). Each model's WER is at its best LM weight per set."]
    return "\n".join(lines) + "\n"


def _num_pdfs(exp_dir: str) -> int:
    return read_transition_model(os.path.join(exp_dir, "final.mdl")).num_pdfs


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    text = table(args.work, args.exp, args.sets.split(), args.gmm_decode or None, args.title,
                 args.bootstrap)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
