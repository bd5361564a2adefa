"""Preparation shared by every run of ``experiments/seeds.py``: done once, resumable.

In ``<work-dir>``:

- ``kaldi/``: a Kaldi s5 dir cut from ``kaldi_polish`` (read only, never written): the chosen
  training utterances (all 550 by default; ``--utts N``: N spread evenly over the sorted
  durations, those up to ``--max-dur`` seconds), the test set (or its shortest
  ``--test-utts``), ``conf/mfcc.conf``, links to ``data/lang`` and ``exp/tri1/{graph,decode}``,
  and ``exp/tri1_ali``: links to the tri1 alignments, tree and model, with ``final.mdl`` a real
  symlink to the numbered model it names (the copy in ../shared may hold a flattened link);
- the recipe's stages 0-2 (``egs/digits/s5/run.sh --stage 0 --stop-stage 2``, run from
  ``<work-dir>`` through links to the recipe): data dirs, MFCC + CMVN, the imported
  alignments (``exp/ali_train``) and the tr/cv split (``data/train_tr90``, ``data/train_cv10``).

``prepared.json`` records the selection; the recipe's stages skip what already exists.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(REPO, "egs", "digits", "s5")
DEFAULT_KALDI = os.path.join(os.path.dirname(REPO), "shared", "data", "kaldi_polish")
GMM = "exp/tri1"


def read_table(path: str) -> Dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                key, _, rest = line.strip().partition(" ")
                out[key] = rest.strip()
    return out


def write_table(path: str, rows: Dict[str, str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for k in sorted(rows, key=lambda s: s.encode()):
            f.write(f"{k} {rows[k]}\n")


def pick_utts(utt2dur: Dict[str, str], num: int, max_dur: float) -> List[str]:
    """``num`` utterances (0: all) spread evenly over the durations up to ``max_dur`` s."""
    durs = sorted(((float(d), u) for u, d in utt2dur.items()
                   if not max_dur or float(d) <= max_dur))
    if not num or num >= len(durs):
        return sorted(u for _, u in durs)
    step = (len(durs) - 1) / max(num - 1, 1)
    return sorted({durs[round(i * step)][1] for i in range(num)})


def real_model_name(exp_dir: str) -> str:
    """The numbered model ``exp_dir/final.mdl`` names: a symlink's target, or the name a
    flattened link (a small file) holds; ``final.mdl`` itself when it is the model."""
    final = os.path.join(exp_dir, "final.mdl")
    if os.path.islink(final):
        return os.readlink(final)
    if os.path.getsize(final) < 64:
        with open(final, encoding="utf-8", errors="replace") as f:
            name = f.read().strip()
        if name and os.path.isfile(os.path.join(exp_dir, name)):
            return name
    return "final.mdl"


def _data_dir(src: str, dst: str, utts: List[str], kaldi_src: str, kaldi_dst: str) -> None:
    keep = set(utts)
    for name in ("wav.scp", "text", "utt2spk", "utt2dur"):
        rows = {k: v for k, v in read_table(os.path.join(src, name)).items() if k in keep}
        write_table(os.path.join(dst, name), rows)
    spk2utt: Dict[str, List[str]] = {}
    for u, s in sorted(read_table(os.path.join(dst, "utt2spk")).items()):
        spk2utt.setdefault(s, []).append(u)
    write_table(os.path.join(dst, "spk2utt"), {s: " ".join(us) for s, us in spk2utt.items()})
    for path in read_table(os.path.join(dst, "wav.scp")).values():  # recipe-relative audio
        top = path.split("/")[0]
        if not os.path.isabs(path) and not os.path.lexists(os.path.join(kaldi_dst, top)):
            os.symlink(os.path.join(kaldi_src, top), os.path.join(kaldi_dst, top))


def make_kaldi_dir(src: str, dst: str, utts: int, max_dur: float, test_utts: int) -> None:
    """The cut Kaldi dir ``dst`` (made in ``dst.tmp`` then renamed)."""
    train = pick_utts(read_table(os.path.join(src, "data/train/utt2dur")), utts, max_dur)
    test = pick_utts(read_table(os.path.join(src, "data/test/utt2dur")), 0, 0)
    if test_utts:
        durs = read_table(os.path.join(src, "data/test/utt2dur"))
        test = sorted(sorted(test, key=lambda u: float(durs[u]))[:test_utts])
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    _data_dir(os.path.join(src, "data/train"), os.path.join(tmp, "data/train"), train, src, tmp)
    _data_dir(os.path.join(src, "data/test"), os.path.join(tmp, "data/test"), test, src, tmp)
    os.makedirs(os.path.join(tmp, "conf"))
    shutil.copyfile(os.path.join(src, "conf/mfcc.conf"), os.path.join(tmp, "conf/mfcc.conf"))
    os.symlink(os.path.join(src, "data/lang"), os.path.join(tmp, "data/lang"))
    os.makedirs(os.path.join(tmp, GMM))
    for name in ("graph", "decode"):
        os.symlink(os.path.join(src, GMM, name), os.path.join(tmp, GMM, name))
    ali = os.path.join(tmp, GMM + "_ali")
    os.makedirs(ali)
    model = real_model_name(os.path.join(src, GMM))
    for name in sorted(os.listdir(os.path.join(src, GMM))):
        if name.startswith("ali.") or name in ("tree", "phones.txt", "num_jobs", "cmvn_opts",
                                                 model):
            os.symlink(os.path.join(src, GMM, name), os.path.join(ali, name))
    if model != "final.mdl":
        os.symlink(model, os.path.join(ali, "final.mdl"))
    os.rename(tmp, dst)


def prepare(work: str, kaldi_src: str, utts: int, max_dur: float, test_utts: int,
            nj: int, log) -> dict:
    """Everything the runs share, in ``work``; returns ``prepared.json``'s content."""
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    want = {"kaldi_src": os.path.abspath(kaldi_src), "utts": utts, "max_dur": max_dur,
            "test_utts": test_utts}
    stamp = os.path.join(work, "prepared.json")
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            done = json.load(f)
        if {k: done.get(k) for k in want} == want:
            return done
        raise SystemExit(f"{work} was prepared with other options ({stamp}: "
                         f"{ {k: done.get(k) for k in want} }); use another --work-dir")
    kaldi = os.path.join(work, "kaldi")
    if not os.path.isdir(kaldi):
        make_kaldi_dir(want["kaldi_src"], kaldi, utts, max_dur, test_utts)
    for name in ("run.sh", "cmd.sh", "path.sh", "conf", "steps", "utils"):
        link = os.path.join(work, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(RECIPE, name), link)
    cmd = [os.path.join(work, "run.sh"), "--kaldi-dir", kaldi, "--ali", GMM + "_ali",
           "--graph", GMM + "/graph", "--nj", str(nj), "--stage", "0", "--stop-stage", "2"]
    env = dict(os.environ, HYBRIDASR_ROOT=REPO)
    with open(os.path.join(work, "prepare.log"), "a", encoding="utf-8") as f:
        res = subprocess.run(cmd, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        raise SystemExit(f"preparation failed (rc {res.returncode}): see "
                         f"{work}/prepare.log ({' '.join(cmd)})")
    done = dict(want, command=" ".join(cmd),
                train_utts=len(read_table(os.path.join(kaldi, "data/train/utt2spk"))),
                test_utts_used=len(read_table(os.path.join(kaldi, "data/test/utt2spk"))),
                tr_utts=len(read_table(os.path.join(work, "data/train_tr90/utt2spk"))),
                cv_utts=len(read_table(os.path.join(work, "data/train_cv10/utt2spk"))))
    tmp = stamp + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(done, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, stamp)
    log(f"prepared {work}: {done['tr_utts']} training, {done['cv_utts']} cv, "
        f"{done['test_utts_used']} test utterances")
    return done
