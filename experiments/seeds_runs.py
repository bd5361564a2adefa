"""The five experiments of ``experiments/seeds.py`` as configurations, and one real training run.

A configuration is a list of ``pybin/train.py`` options written to ``<run-dir>/seeds.conf``
and trained with ``steps/nnet/train.sh --train-config <it>`` (``--nproc 2 --parallel
average`` through torchrun for experiment 4) under ``seeds_measure.py`` (peak memory);
experiments 1 and 2 are then decoded with ``steps/nnet/decode.sh`` and scored
(``steps/score.sh``'s best ``wer_*``).
Run dirs are named by a hash of their options, so a configuration shared by two tables (e.g.
random order at full length, experiments 1 and 2) is trained once; a finished run's
``result.json`` is reused, an unfinished one resumes (``train.py`` continues after its last
finished epoch).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Config:
    experiment: int
    label: str
    opts: List[str]  # train.py options beside the common ones
    nproc: int = 1
    decode: bool = False
    extra: Dict[str, object] = field(default_factory=dict)  # table columns known in advance


@dataclass
class Setup:
    """What is the same for every run of a table."""
    epochs: int
    layers: int
    hidden: int
    max_frames: int
    seed: int
    threads: int
    device: str
    lr: float = 0.002

    def common(self, model: str = "blstm") -> List[str]:
        return [f"--model={model}", f"--num-layers={self.layers}",
                f"--hidden-size={self.hidden}", "--dropout=0.1", f"--seed={self.seed}",
                "--optimizer=adam", f"--learning-rate={self.lr}", "--lr-schedule=constant",
                f"--max-iters={self.epochs}", "--num-workers=0", "--min-batches-per-epoch=0",
                "--max-seqs=0", "--max-seq-length=0", "--progress-every=0"]


def experiments(s: Setup, smoke: bool, tbptt: List[str], quantities: List[int],
                chunks: List[int], sync: List[int]) -> Dict[int, List[Config]]:
    """The configurations of each table; ``smoke``: the first two of each."""
    F = f"--max-frames={s.max_frames}"
    th = f"--num-threads={s.threads}"
    e1 = [Config(1, name, [f"--seq-ordering={name}", F, th, *more], decode=True)
          for name, more in (("random", []), ("laplace:8", []), ("sorted", []),
                             ("bucketing", ["--bucket-width=250", "--bucket-order=random"]),
                             ("laplace:64", []), ("laplace:256", []))]
    e2 = [Config(2, "full", ["--seq-ordering=random", F, th], decode=True,
                 extra={"chunk": "full"})]
    e2 += [Config(2, f"chunks of {c}", ["--seq-ordering=random", f"--chunking={c}:{c}", F, th],
                  decode=True, extra={"chunk": c}) for c in chunks]
    e3 = [Config(3, f"Q={q}", [f"--seq-ordering=optimal_buckets:{q}", "--bucket-order=random",
                               F, th], extra={"Q": q, "order": "random"}) for q in quantities]
    e3.append(Config(3, "Q=3 curriculum", ["--seq-ordering=optimal_buckets:3",
                                           "--bucket-order=curriculum", F, th],
                     extra={"Q": 3, "order": "curriculum"}))
    e4 = [Config(4, "1 process", ["--seq-ordering=laplace:8", F, th],
                 extra={"processes": 1, "sync_every": "-"})]
    e4 += [Config(4, f"2 processes, K={k or 'epoch'}",
                  ["--seq-ordering=laplace:8", F, "--num-threads=1", "--parallel=average",
                   f"--sync-every={k}"], nproc=2,
                  extra={"processes": 2, "sync_every": k or "epoch"}) for k in sync]
    e5 = []
    for sw in tbptt:
        streams, window = (int(x) for x in sw.split(":"))
        e5.append(Config(5, f"({streams}, {window})",
                         [f"--seq-ordering=tbptt:{streams}:{window}",
                          f"--max-frames={streams * window}", "--label-delay=5", th],
                         extra={"streams": streams, "window": window}))
    out = {1: e1, 2: e2, 3: e3, 4: e4, 5: e5}
    if smoke:  # two per table: one that needs no extra options, and one other
        out = {k: v[:2] for k, v in out.items()}
    return out


def run_id(opts: List[str], nproc: int) -> str:
    return hashlib.sha1(json.dumps([opts, nproc]).encode()).hexdigest()[:10]


def read_metrics(path: str) -> List[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def best_wer(decode_dir: str) -> Optional[dict]:
    """The lowest ``%WER`` of ``decode_dir/wer_*`` (Kaldi's best_wer.sh), with its file."""
    best = None
    for name in sorted(os.listdir(decode_dir)) if os.path.isdir(decode_dir) else []:
        if not name.startswith("wer_"):
            continue
        with open(os.path.join(decode_dir, name), encoding="utf-8") as f:
            m = re.search(r"%WER\s+([0-9.]+)\s+\[\s*(\d+)\s*/\s*(\d+)", f.read())
        if m and (best is None or float(m.group(1)) < best["wer"]):
            best = {"wer": float(m.group(1)), "errors": int(m.group(2)),
                    "words": int(m.group(3)), "file": name}
    return best


def _shell(cmd: List[str], cwd: str, log: str) -> int:
    env = dict(os.environ, HYBRIDASR_ROOT=REPO)
    with open(log, "a", encoding="utf-8") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode


def train_and_decode(work: str, common: List[str], cfg: Config, device: str,
                     decode_opts: List[str]) -> dict:
    """Trains ``cfg`` (once: a finished run's result.json is read back) and returns its
    figures: per-epoch metrics, peak memory, WER."""
    opts = common + cfg.opts
    rid = run_id(opts, cfg.nproc)
    d = os.path.join(work, "runs", rid)
    result = os.path.join(d, "result.json")
    if os.path.exists(result):
        with open(result, encoding="utf-8") as f:
            return json.load(f)
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "seeds.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(f"# experiments/seeds.py: experiment {cfg.experiment}, {cfg.label}\n")
        f.writelines(o + "\n" for o in opts)
    dev = "cpu" if cfg.nproc > 1 else device  # 2 gloo processes on the CPU
    measure = [sys.executable, os.path.join(REPO, "experiments", "seeds_measure.py"),
               "--out", os.path.join(d, "memory.json")]
    if dev == "cuda":
        measure.append("--gpu")
    train = [os.path.join(work, "steps/nnet/train.sh"), "--cmd", " ".join(measure + ["run.pl"]),
             "--train-config", str(conf), "--device", dev, "--nproc", str(cfg.nproc)]
    if cfg.nproc > 1:
        train += ["--parallel", "average"]
    train += ["data/train_tr90", "data/train_cv10", "kaldi/data/lang", "exp/ali_train",
              "exp/ali_train", d]
    log = os.path.join(d, "seeds.log")
    if _shell(train, work, log) != 0:
        raise SystemExit(f"training failed: experiment {cfg.experiment} {cfg.label}; "
                         f"see {log} and {d}/log/train.log")
    with open(os.path.join(d, "memory.json"), encoding="utf-8") as f:
        mem = json.load(f)
    wer = None
    if cfg.decode:
        dec = [os.path.join(work, "steps/nnet/decode.sh"), "--nj", "1", "--cmd", "run.pl",
               "--device", device, *decode_opts, "kaldi/exp/tri1/graph", "data/test",
               os.path.join(d, "decode_test")]
        if _shell(dec, work, log) != 0:
            raise SystemExit(f"decoding failed: experiment {cfg.experiment} {cfg.label}; "
                             f"see {log} and {d}/decode_test/log")
        wer = best_wer(os.path.join(d, "decode_test"))
    res = {"run_dir": d, "options": opts, "nproc": cfg.nproc, "device": dev,
           "metrics": read_metrics(os.path.join(d, "metrics.jsonl")), "memory": mem,
           "wer": wer}
    tmp = result + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, result)
    return res


def summarise(cfg: Config, res: dict, tr_utts: int) -> dict:
    """One JSON line: the run's figures (epoch figures from metrics.jsonl)."""
    epochs = [m for m in res["metrics"] if m.get("epoch", 0) >= 1]
    secs = [m["seconds"] for m in epochs]
    mean_s = sum(secs) / len(secs) if secs else float("nan")
    fps = [m["frames_per_s"] for m in epochs if m.get("frames_per_s")]
    pad = [m["padding_ratio"] for m in epochs if m.get("padding_ratio") is not None]
    init = [m for m in res["metrics"] if m.get("epoch") == 0]
    rec = {"experiment": cfg.experiment, "configuration": cfg.label, **cfg.extra,
           "epochs": len(epochs), "epoch_seconds": mean_s,
           "utts_per_s": tr_utts / mean_s if mean_s and not math.isnan(mean_s) else None,
           "frames_per_s": sum(fps) / len(fps) if fps else None,
           "peak_rss_mb": res["memory"]["peak_rss_mb"],
           "gpu_peak_mb": res["memory"].get("gpu_peak_mb"),
           "padding_ratio": sum(pad) / len(pad) if pad else None,
           "cv_loss": [init[0]["cv_loss"]] + [m["cv_loss"] for m in epochs] if init else
           [m["cv_loss"] for m in epochs],
           "cv_fer": [init[0]["cv_fer"]] + [m["cv_fer"] for m in epochs] if init else
           [m["cv_fer"] for m in epochs],
           "train_seconds": secs,
           "wer": res["wer"]["wer"] if res.get("wer") else None,
           "device": res["device"], "processes": res["nproc"], "run_dir": res["run_dir"]}
    return rec


def planned_apr(work: str, opts: List[str], epochs: int) -> dict:
    """Variani et al.'s average padding ratio of the batches the trainer plans with ``opts``
    (``plan_epoch`` over ``data/train_tr90``'s lengths, as ``bench/batching.py``): the padded
    share of each batch's frames, mean and sd over the steps of ``epochs`` epochs."""
    import importlib.util

    from hybridasr.data.epoch import plan_epoch
    from hybridasr.data.options import data_config_from_args

    spec = importlib.util.spec_from_file_location("pybin_train", os.path.join(REPO, "pybin",
                                                                            "train.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = data_config_from_args(mod.get_parser().parse_args([*opts, "tr", "cv", "a", "a", "e"]))
    with open(os.path.join(work, "exp/ali_train/targets.scp"), encoding="utf-8") as f:
        have = {line.split(" ", 1)[0] for line in f}
    lengths = {}
    with open(os.path.join(work, "data/train_tr90/utt2num_frames"), encoding="utf-8") as f:
        for line in f:
            utt, n = line.split()
            if utt in have:
                lengths[utt] = int(n)
    apr = []
    for e in range(1, epochs + 1):
        for p in plan_epoch(lengths, cfg, e):
            if p.num_padded_frames:
                apr.append(100.0 * (1 - p.num_real_frames / p.num_padded_frames))
    mean = sum(apr) / len(apr)
    sd = math.sqrt(sum((a - mean) ** 2 for a in apr) / len(apr))
    return {"apr_mean": mean, "apr_sd": sd, "steps_per_epoch": len(apr) / epochs}
