"""The default recipe on every real Kaldi dir at hand, and on reshaped copies of them, written
to ``docs/any_dir.md``: finished or the error, the WER against the dir's best Kaldi system,
minutes.

Each case is ``./run.sh`` in a fresh copy of ``egs/digits/s5`` with only the options a new
user gives: the Kaldi dir, and which alignment dir, graph, test set (and lang, where it is not
``data/lang``) to use; everything else is the recipe's defaults. The real dirs are read
through a copy of links in ``--work-dir`` (``experiments/any_dir_shapes.py``: ``final.mdl`` a
symlink again where a copy of ../shared flattened it, as Kaldi left it); the reshaped copies
are built there from them, every unchanged file a link to the real one. The WER is the one
the recipe's stage 5 wrote (``exp/<name>/summary.json``: the sequence-trained model's where it
ran, else the cross-entropy model's); the Kaldi system's is the best ``%WER`` among the dir's
own ``exp/*/decode*/wer_*``. A failing case is reported with its log's last error line, not
raised. Run it before resolving any change to a default::

    nice -n 10 .venv/bin/python -m experiments.any_dir --out docs/any_dir.md
    nice -n 10 .venv/bin/python -m experiments.any_dir --cases digits,tiny_1spk_44k --keep
    .venv/bin/python -m experiments.any_dir --work-dir DIR --table-only  # from DIR's results
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from experiments import any_dir_shapes as shapes
from hybridasr.utils.atomic import atomic_open

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "egs" / "digits" / "s5"
SHARED = REPO.parent / "shared" / "data"


# case -> its real Kaldi dir under ../shared/data (src), the builder of the copy the case runs
# on (in the case's work dir; linked_copy: the real dir as Kaldi left it, every file a link to
# the real one and final.mdl a symlink where ../shared holds it flattened), the options a
# new user gives (the GMM's ali dir and graph: the best-scoring GMM's, where it has an ali
# dir), what its shape is, and whether it is slow on 2 cores (left out of --cases fast)
CASES: Dict[str, dict] = {
    "digits": dict(
        src="kaldi_digits", build=shapes.linked_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="real kaldi_digits: 8 kHz, 120 training utterances, text alignments"),
    "polish": dict(
        src="kaldi_polish", build=shapes.linked_copy,
        args=["--ali", "exp/tri1", "--graph", "exp/tri1/graph"],
        slow=True,
        shape="real kaldi_polish: 16 kHz, 540 utterances, tri1 of 1,192 pdfs (binary "
              "alignments in exp/tri1; its mono scores better on the 10 test utterances)"),
    "tiny_2spk": dict(
        src="kaldi_tiny_2spk", build=shapes.linked_copy,
        args=["--ali", "exp/tri1", "--graph", "exp/tri1/graph"],
        shape="real kaldi_tiny_2spk: 16 kHz, 39 of 40 wavs stereo, 20 training utterances; "
              "conf/mfcc.conf names no sample rate (Kaldi's default 16 kHz, right here)"),
    "tiny_1spk": dict(
        src="kaldi_tiny_1spk", build=shapes.linked_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="real kaldi_tiny_1spk: 16 kHz, one speaker, 10 training utterances"),
    "hindi_sat": dict(
        src="kaldi_hindi_sat", build=shapes.linked_copy,
        args=["--ali", "exp/tri3b_ali", "--graph", "exp/tri3b/graph"],
        shape="real kaldi_hindi_sat: 16 kHz, 80 of 120 wavs stereo; best GMM speaker-adapted "
              "(tri3b, SAT: fMLLR transforms)"),
    "hindi_sat_no_test_trans": dict(
        src="kaldi_hindi_sat", build=shapes.without_test_decodes_copy,
        args=["--ali", "exp/tri3b_ali", "--graph", "exp/tri3b/graph"],
        shape="kaldi_hindi_sat without exp/tri3b/decode*: no fMLLR transforms of the test "
              "speakers (the recipe estimates them, as Kaldi's decode_fmllr.sh)"),
    "digits_no_rate": dict(
        src="kaldi_digits", build=shapes.no_rate_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="kaldi_digits whose conf/mfcc.conf names no sample rate (Kaldi's default "
              "16 kHz is wrong for its 8 kHz audio)"),
    "tiny_1spk_44k": dict(
        src="kaldi_tiny_1spk", build=shapes.resampled_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="kaldi_tiny_1spk resampled to 44.1 kHz, conf/mfcc.conf at 44100, a stale "
              "conf/fbank.conf at 16000"),
    "digits_1200": dict(
        src="kaldi_digits", build=shapes.replicated_copy, slow=True,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="kaldi_digits' training set 10 times under new utterance and speaker ids (1,200 "
              "utterances: data/train_tr90 has 1,000+, so sequence training runs)"),
    "digits_mixed": dict(
        src="kaldi_digits", build=shapes.mixed_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph"],
        shape="kaldi_digits with its wavs in turn 8 kHz mono, 16 kHz mono, 8 kHz stereo, "
              "16 kHz stereo (conf/mfcc.conf at 8000)"),
    "digits_dict_only": dict(
        src="kaldi_digits", build=shapes.dict_only_copy,
        args=["--ali", "exp/mono_ali", "--graph", "exp/mono/graph", "--lang", "data/local/dict"],
        shape="kaldi_digits without data/lang: a GMM dir with only data/local/dict"),
    "yesno": dict(
        src="waves_yesno", build=shapes.yesno_dir, test="data/test_yesno",
        args=["--train", "data/train_yesno", "--lang", "data/local/dict", "--lm-arpa",
              "data/local/lm_tg.arpa", "--oov-word", "<SIL>", "--ali", "none"],
        published=(0.0, "mono0a (Kaldi's published WER)"),
        shape="Kaldi's egs/yesno/s5 dir before its GMM, from waves_yesno: 8 kHz, one speaker "
              "('global'), 30 training utterances, a dict dir and a unigram ARPA LM; no exp/, "
              "so no GMM (--ali none: the flat start)"),
    "yesno_mono0a": dict(
        src="waves_yesno", build=shapes.yesno_after_gmm_dir, test="data/test_yesno",
        args=["--train", "data/train_yesno", "--ali", "exp/mono0a", "--graph",
              "exp/mono0a/graph_tgpr"],
        published=(0.0, "mono0a (Kaldi's published WER)"),
        shape="Kaldi's egs/yesno/s5 dir after its run.sh (made here with the toolkit's steps): "
              "a lang dir of position-independent phones, the monophone GMM exp/mono0a "
              "(--totgauss 400) and its graph_tgpr; the recipe on that GMM's own alignment"),
}
FAST = [c for c, v in CASES.items() if not v.get("slow")]
_ERROR = re.compile(r"\bERROR\b|Error\b|\berror:|Exception\b|No such file|command not found|"
                    r"\bKilled\b|Aborted")
_FAILED = re.compile(r"failed|error", re.IGNORECASE)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="all",
                   help="comma-separated cases, or all, or fast (all but "
                        + ", ".join(c for c in CASES if c not in FAST) + "); cases: "
                        + ", ".join(CASES))
    p.add_argument("--work-dir", default="", help="where the copies and runs live (default: a "
                   "new dir under $TMPDIR or /tmp)")
    p.add_argument("--jobs", type=int, default=1, help="cases run at once")
    p.add_argument("--keep", action="store_true",
                   help="keep each case's Kaldi copy and recipe dir (the log is always kept)")
    p.add_argument("--table-only", action="store_true",
                   help="run nothing: tabulate the cases' results already in --work-dir")
    p.add_argument("--out", default="docs/any_dir.md", help="markdown file ('-': stdout)")
    p.add_argument("--run-opts", default="",
                   help="more ./run.sh options for every case, e.g. '--chain true' (the chain "
                        "model's WER then gets its own column)")
    return p


def make_recipe_copy(dst: Path) -> Path:
    """A fresh copy of ``egs/digits/s5`` (run.sh, cmd.sh, path.sh, conf/; steps/ and utils/
    links to the toolkit's)."""
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for name in ("run.sh", "cmd.sh", "path.sh"):
        shutil.copy2(RECIPE / name, dst / name)
    shutil.copytree(RECIPE / "conf", dst / "conf")
    for name in ("steps", "utils"):
        os.symlink(REPO / name, dst / name)
    return dst


def last_error_line(log: Path) -> str:
    """The log's last error: its last line that names one (a tool's ``ERROR``, a Python
    exception, a shell's ``No such file``), with the indented lines that go on with it; else
    its last line saying something failed (run.sh's own ``stage N failed``); else its last
    line."""
    lines = [ln.rstrip() for ln in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if _ERROR.search(lines[i]):
            more = []
            for ln in lines[i + 1:i + 3]:
                if not ln.startswith((" ", "\t")):
                    break
                more.append(ln.strip())
            return " ".join([lines[i].strip()] + more)
    for ln in reversed(lines):
        if _FAILED.search(ln):
            return ln.strip()
    return lines[-1].strip() if lines else "(empty log)"


def recipe_wer(s5: Path, exp_name: str = "blstm") -> Optional[dict]:
    """The WER the recipe's stage 5 wrote: the sequence-trained model's summary.json where
    there is one, else the cross-entropy model's; with the CE WER beside it."""
    ce = s5 / "exp" / exp_name / "summary.json"
    if not ce.exists():
        return None
    out = {"ce_wer": json.loads(ce.read_text()).get("wer"), "model": exp_name}
    out["wer"] = out["ce_wer"]
    for crit in ("smbr", "mmi"):
        seq = s5 / "exp" / f"{exp_name}_{crit}" / "summary.json"
        if seq.exists() and json.loads(seq.read_text()).get("wer") is not None:
            out.update(wer=json.loads(seq.read_text())["wer"], model=f"{exp_name}_{crit}")
    chain = s5 / "exp" / "chain" / "tdnn" / "summary.json"
    if chain.exists():
        out["chain_wer"] = json.loads(chain.read_text()).get("wer")
    return out


def runs_chain(run_opts: str) -> bool:
    """Whether ``run.sh`` options turn the chain model on (``--chain true`` or
    ``--chain=true``; not ``--chain false`` nor ``--chain-opts``)."""
    words = shlex.split(run_opts)
    return any(w == "--chain=true" or (w == "--chain" and words[i + 1:i + 2] == ["true"])
               for i, w in enumerate(words))


def run_case(name: str, work: Path, keep: bool, run_opts: str = "") -> dict:
    """One case: its Kaldi dir (built where reshaped), a recipe copy, ``./run.sh``; never
    raises for the recipe's failure (nor a shape's: both are the case's result)."""
    c = CASES[name]
    cwork = work / name
    log = work / f"{name}.log"
    res: dict = {"case": name, "shape": c["shape"], "log": str(log)}
    t0 = time.time()
    try:
        cwork.mkdir(parents=True, exist_ok=True)
        kaldi = SHARED / c["src"]
        if c.get("build"):
            if (cwork / "kaldi").exists():
                shutil.rmtree(cwork / "kaldi")
            kaldi = c["build"](kaldi, cwork / "kaldi")
        res["kaldi_dir"] = str(kaldi)
        s5 = make_recipe_copy(cwork / "s5")
        cmd = ["./run.sh", "--kaldi-dir", str(kaldi), *c["args"], "--test",
               c.get("test", "data/test"),
               *shlex.split(run_opts)]
        res["command"] = shlex.join(cmd)
        # one thread unless the caller says otherwise (a 2-core machine shared with others)
        env = dict(os.environ, HYBRIDASR_ROOT=str(REPO),
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        with open(log, "w", encoding="utf-8") as f:
            f.write(f"# cd {s5} && {shlex.join(cmd)}\n")
            f.flush()
            rc = subprocess.run(cmd, cwd=s5, env=env, stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL).returncode
        res["rc"] = rc
        res["error"] = last_error_line(log) if rc != 0 else None
        w = recipe_wer(s5)
        res.update(w or {})
        if rc == 0 and not w:
            res["error"] = "finished, but no exp/blstm/summary.json"
        elif rc == 0 and runs_chain(run_opts) and "chain_wer" not in res:
            res["error"] = "finished, but no exp/chain/tdnn/summary.json"
    except Exception as e:  # a shape that cannot be built is this case's result too
        res.update(rc=None, error=f"{type(e).__name__}: {e}")
    res["minutes"] = round((time.time() - t0) / 60.0, 1)
    best = shapes.best_kaldi_system(SHARED / c["src"]) or c.get("published")  # a copy
    if best:  # links the same exp/; a dir without one: the Kaldi recipe's published figure
        res["kaldi_wer"], res["kaldi_system"] = best[0], best[1]
    if not keep and cwork.exists():
        shutil.rmtree(cwork, ignore_errors=True)
    with atomic_open(str(work / f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    return res


def read_case(name: str, work: Path) -> Optional[dict]:
    """A case's result as ``run_case`` left it in ``work`` (its error read again from its log)."""
    path = work / f"{name}.json"
    if not path.exists():
        return None
    res = json.loads(path.read_text(encoding="utf-8"))
    if res.get("rc") and Path(res["log"]).exists():
        res["error"] = last_error_line(Path(res["log"]))
    return res


def _fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def verdict(r: dict, key: str = "wer") -> str:
    if r.get(key) is None or r.get("kaldi_wer") is None:
        return "-"
    return "yes" if r[key] < r["kaldi_wer"] else "tie" if r[key] == r["kaldi_wer"] else "no"


def table(results: List[dict], command: str) -> str:
    """The markdown page: header (date, commit, command), one row a case, and the cases this
    run left out."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    chain = any("chain_wer" in r or runs_chain(r.get("command", "")) for r in results)
    out = ["# The default recipe on every Kaldi dir at hand", "",
           f"Generated {datetime.date.today().isoformat()} at commit {commit}"
           f"{' (with uncommitted changes)' if dirty else ''} by `{command}`.", "",
           "Each case is `./run.sh` in a fresh copy of `egs/digits/s5` with only `--kaldi-dir`, "
           "`--ali`, `--graph`, `--test` (and `--lang` where it is not `data/lang`): the "
           "options are in `experiments/any_dir.py`. Our WER: `exp/blstm/summary.json` (stage "
           "5), or the sequence-trained model's where it ran (CE in brackets). The Kaldi "
           "system: the best `%WER` among the dir's own `exp/*/decode*/wer_*`. Minutes: the "
           "whole case on a 2-core machine shared with other jobs (a rough cost). Run it "
           "before resolving any change to a default.", "",
           "| case | shape | finished or the error | our WER | best Kaldi system | beat it? "
           + ("| chain WER | chain beat it? " if chain else "") + "| minutes |",
           "| --- " * (9 if chain else 7) + "|"]
    for r in results:
        status = "finished" if r.get("rc") == 0 and not r.get("error") else \
            f"rc {r.get('rc')}: `{(r.get('error') or '').replace('|', '/').replace('`', '')[:300]}`"
        wer = _fmt(r.get("wer"))
        if r.get("model", "blstm") != "blstm" and r.get("ce_wer") is not None:
            wer += f" ({r['model']}; CE {_fmt(r['ce_wer'])})"
        kaldi = f"{r['kaldi_system']} {_fmt(r['kaldi_wer'])}" if "kaldi_system" in r else "-"
        more = f"| {_fmt(r.get('chain_wer'))} | {verdict(r, 'chain_wer')} " if chain else ""
        out.append(f"| {r['case']} | {r['shape']} | {status} | {wer} | {kaldi} | {verdict(r)} "
                   f"{more}| {r['minutes']:.1f} |")
    missing = [c for c in CASES if c not in {r["case"] for r in results}]
    if missing:
        out += ["", "Not in this run: " + ", ".join(f"{c} ({CASES[c]['shape']})" for c in missing)
                + "."]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    names = list(CASES) if args.cases == "all" else FAST if args.cases == "fast" \
        else [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    if args.table_only and not args.work_dir:
        raise SystemExit("--table-only needs the --work-dir of the runs")
    work = Path(args.work_dir).resolve() if args.work_dir else Path(
        os.environ.get("TMPDIR", "/tmp")) / f"any_dir.{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    print(f"any_dir: {len(names)} case(s) in {work}", file=sys.stderr, flush=True)
    results: Dict[str, dict] = {}
    if args.table_only:
        found = {n: read_case(n, work) for n in names}
        results = {n: r for n, r in found.items() if r}
        names = [n for n in names if n in results]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(run_case, n, work, args.keep, args.run_opts): n
                       for n in names}
            for fut in concurrent.futures.as_completed(futures):
                r = fut.result()
                results[r["case"]] = r
                print(json.dumps(r), flush=True)
    command = "python -m experiments.any_dir " + shlex.join(argv if argv is not None
                                                            else sys.argv[1:])
    text = table([results[n] for n in names], command.strip())
    if args.out == "-":
        print(text)
    else:
        with atomic_open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
