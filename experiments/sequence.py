"""Models of one recipe dir side by side against the first (e.g. the CE network and its
sequence-trained successors): each decode set's best WER, the pooled words of all sets, the
relative change, and a paired-bootstrap 95% interval of each model's WER minus the first's
(utterances resampled, both models on the same ones). Writes a markdown table.

    python -m experiments.sequence --work egs/digits/s5 --sets "test train_cv10" \\
        --words ../kaldi_polish/exp/tri1/graph/words.txt exp/blstm exp/blstm_smbr exp/blstm_mmi
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Dict, List, Tuple

from experiments.realign_seeds import paired_bootstrap, utterance_errors


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="the recipe dir the run used")
    p.add_argument("--sets", default="test train_cv10", help="decode sets (data/<set>)")
    p.add_argument("--words", required=True, help="words.txt of the decoding graph")
    p.add_argument("--title", default="", help="the table's heading")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--out", default="", help="markdown file (default: stdout)")
    p.add_argument("--json", default="", help="the figures as JSON too")
    p.add_argument("models", nargs="+", help="exp dirs inside --work; the first is the "
                                             "baseline")
    return p


def _cell(e: int, n: int) -> str:
    return f"{100.0 * e / max(n, 1):.2f} ({e}/{n})"


def compare(work: str, models: List[str], sets: List[str], words: str, n_boot: int):
    errs: Dict[str, Dict[str, Dict[str, Tuple[int, int]]]] = {
        m: {s: utterance_errors(os.path.join(work, m, f"decode_{s}"), words) for s in sets}
        for m in models}
    base = models[0]
    rows = []
    for m in models:
        per_set = {s: (sum(e for e, _ in errs[m][s].values()),
                       sum(n for _, n in errs[m][s].values())) for s in sets}
        e = sum(v[0] for v in per_set.values())
        n = sum(v[1] for v in per_set.values())
        row = {"model": m, "sets": per_set, "errors": e, "words": n}
        if m != base:
            triples = [(errs[base][s][u][0], errs[m][s][u][0], errs[base][s][u][1])
                       for s in sets for u in sorted(errs[base][s])]
            lo, hi = paired_bootstrap(triples, n_boot)
            b = sum(a for a, _, _ in triples)
            row.update(relative=100.0 * (e - b) / max(b, 1), interval=[lo, hi])
        rows.append(row)
    return rows


def table(rows, sets: List[str], title: str) -> str:
    lines = [f"## {title}", "" if title else "",
             "| model | " + " | ".join(f"{s} WER" for s in sets) + " | all sets | relative to "
             f"{rows[0]['model']} | 95% interval of the difference (points) |",
             "| --- | " + " | ".join("---" for _ in sets) + " | --- | --- | --- |"]
    for r in rows:
        rel = f"{r['relative']:+.1f}%" if "relative" in r else "-"
        iv = (f"[{r['interval'][0]:+.2f}, {r['interval'][1]:+.2f}]" if "interval" in r
              else "-")
        lines.append(f"| {r['model']} | " + " | ".join(_cell(*r["sets"][s]) for s in sets)
                     + f" | {_cell(r['errors'], r['words'])} | {rel} | {iv} |")
    return "\n".join(x for x in lines if x is not None) + "\n"


def main(argv=None) -> int:
    a = get_parser().parse_args(argv)
    sets = a.sets.split()
    rows = compare(a.work, a.models, sets, a.words, a.bootstrap)
    text = table(rows, sets, a.title or a.work)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text, end="")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
