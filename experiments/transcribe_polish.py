"""transcribe.py against the decode pipeline, the exported model, and word confidences, on a
recipe dir's test and cv sets (docs/transcribe.md, "On kaldi_polish").

    nice -n 5 .venv/bin/python -m experiments.transcribe_polish \
        <model-dir> <recipe-dir> <graph-dir> <work-dir>

<recipe-dir> holds data/test and data/train_cv10 (wav.scp, text). Read only: the model dir's
files are copied into <work-dir>/model, and everything is written under <work-dir>.

1. Same words as decode.sh: a copy of data/test where each utterance is its own speaker,
   features by steps/make_<type>.sh --compress false with the model dir's conf, CMVN stats by
   compute_cmvn_stats.sh, steps/nnet/decode.sh --nj 1 and its scoring (LMWT 4..15, penalties
   0.0, 0.5, 1.0); then transcribe.py --cmvn=utterance on the same wavs at the scoring's best
   (LMWT, penalty) and at a second LMWT (default 10, penalty 0): utterances with identical words. Also
   transcribe.py's default (--cmvn=auto: online CMVN from global_cmvn.stats) and the WERs
   (the reference as given, as Kaldi scores, and normalised as score.sh --ref-normalize true).
2. Export: export_model.py of the model dir; its log-likelihoods against forward.py's on the
   pipeline's features (max abs diff), and transcribe.py from the .pt against the model dir.
3. Confidences: transcribe.py --ctm (default CMVN, best LMWT and penalty) on the cv and test
   wavs, each CTM word labelled by aligning to the reference, NCE
   (hybridasr.decode.confidence).

Writes <work-dir>/transcribe_polish.json and prints a markdown table.

    nice -n 5 .venv/bin/python -m experiments.transcribe_polish --confidence-sweep \
        <model-dir> <recipe-dir> <graph-dir> <work-dir>

4. Confidences only (<work-dir>/confidence_sweep.json): transcribe.py's pipeline in one process
   (default CMVN, --lm-weight/--word-ins-penalty as given, default 13 and 1.0), the network run
   once per recording; for each lattice beam (8, 12, 16) the lattices, and for each posterior
   scale (the scaled lattice's costs times 0.25, 0.5, 1) the CTM words' confidences (the same
   arcs kept: lattice-prune --beam 5 at scale 1); NCE and AUC raw, then calibrated
   (hybridasr.decode.confidence_calibration): fitted on cv -> test, on test -> cv, and
   5-fold cross-fitted by utterance within each set.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import kaldiio
import numpy as np

from hybridasr.decode.confidence import confidence_stats, label_words, nce, read_ctm_words
from hybridasr.decode.reference import read_reference
from hybridasr.decode.wer import compute_wer
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.kaldi.symbol_table import read_symbol_ids

REPO = Path(__file__).resolve().parents[1]

MODEL_FILES = ("final.nnet", "final.mdl", "ali_train_pdf.counts", "global_cmvn.stats")


def env_with_path() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(REPO / "pybin"), str(REPO / "utils"),
                                   str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"]
                                     if env.get("PYTHONPATH") else "")
    env.update(LC_ALL="C", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def run(cmd, env, cwd, log):
    t = time.time()
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"# {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}# rc {p.returncode}, "
                f"{time.time() - t:.1f} s\n")
    if p.returncode != 0:
        sys.exit(f"failed (rc {p.returncode}, see {log}): {' '.join(map(str, cmd))}\n"
                 f"{p.stderr[-3000:]}")
    return p.stdout


def copy_model_dir(src: Path, dst: Path) -> str:
    """The files transcribe.py, decode.sh and export_model.py need (symlinks resolved);
    returns the feature type."""
    dst.mkdir(parents=True, exist_ok=True)
    for n in MODEL_FILES:
        shutil.copy(os.path.realpath(src / n), dst / n)
    shutil.copytree(src / "conf", dst / "conf", dirs_exist_ok=True)
    types = [t for t in ("mfcc", "fbank") if (dst / f"conf/{t}.conf").is_file()]
    if len(types) != 1:
        sys.exit(f"{src}/conf: want exactly one of mfcc.conf, fbank.conf, found {types}")
    return types[0]


def abs_wav_scp(data: Path, recipe: Path, out: Path) -> list:
    """``data/wav.scp`` with relative paths made absolute (against the recipe dir)."""
    lines, keys = [], []
    for line in (data / "wav.scp").read_text().splitlines():
        key, rest = line.split(maxsplit=1)
        if not rest.rstrip().endswith("|") and not os.path.isabs(rest):
            rest = str(recipe / rest)
        lines.append(f"{key} {rest}\n")
        keys.append(key)
    out.write_text("".join(lines))
    return keys


def one_speaker_per_utterance(recipe: Path, work: Path) -> Path:
    data = work / "data_test_utt"
    data.mkdir(parents=True, exist_ok=True)
    keys = abs_wav_scp(recipe / "data/test", recipe, data / "wav.scp")
    (data / "utt2spk").write_text("".join(f"{k} {k}\n" for k in keys))
    shutil.copy(data / "utt2spk", data / "spk2utt")
    shutil.copy(recipe / "data/test/text", data / "text")
    return data


def best_wer(decode: Path):
    """(WER, LMWT, penalty, the wer file's line) of the lowest ``%WER`` of ``wer_*``."""
    best = None
    for f in sorted(decode.glob("wer_*")):
        m = re.search(r"%WER ([\d.]+) \[ (\d+) / (\d+)", f.read_text())
        _, lmwt, wip = f.name.split("_")
        cand = (float(m.group(1)), int(lmwt), wip)
        if best is None or cand[0] < best[0]:
            best = cand
    return best


def tra_words(path: Path, id2word: dict) -> dict:
    return {k: [id2word[i] for i in v] for k, *v in
            (line.split() for line in path.read_text().splitlines())}


def text_lines(text: str) -> dict:
    return {k: v for k, *v in (line.split() for line in text.splitlines())}


def wer(refs, hyps) -> dict:
    hyps = {k: [w for w in v if w != "<UNK>"] for k, v in hyps.items()}  # as score.sh
    s = compute_wer(refs, hyps, mode="all")
    return {"wer": round(s.wer, 2), "errors": s.word_errs, "words": s.num_words,
            "ins": s.num_ins, "del": s.num_del, "sub": s.num_sub}


def same(a: dict, b: dict) -> dict:
    keys = sorted(set(a) | set(b))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    return {"identical": len(keys) - len(differ), "utterances": len(keys), "differ": differ}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--confidence-sweep":
        return confidence_sweep(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir", type=Path)
    p.add_argument("recipe_dir", type=Path, help="with data/test and data/train_cv10")
    p.add_argument("graph_dir", type=Path)
    p.add_argument("work_dir", type=Path)
    p.add_argument("--other-lmwt", type=int, default=0,
                   help="the second LM weight of check 1 (default: 10, the search's own "
                        "1/acwt; 12 when 10 is the best)")
    a = p.parse_args(argv)
    model_src, recipe, graph, work = (x.absolute() for x in (a.model_dir, a.recipe_dir,
                                                             a.graph_dir, a.work_dir))
    work.mkdir(parents=True, exist_ok=True)
    env, log = env_with_path(), work / "log.txt"
    model = work / "model"
    feat_type = copy_model_dir(model_src, model)
    id2word = {str(v): k for k, v in read_symbol_ids(str(graph / "words.txt")).items()}
    vocab = set(id2word.values())
    out = {"model_dir": str(model_src), "recipe_dir": str(recipe), "graph_dir": str(graph)}

    def transcribe(model_arg, scp, *opts):
        return text_lines(run([sys.executable, REPO / "pybin/transcribe.py", *opts,
                               f"--wav-scp={scp}", model_arg, graph], env, work, log))

    # 1. the decode pipeline on one speaker per utterance
    data = one_speaker_per_utterance(recipe, work)
    refs = read_text_archive(str(data / "text"))
    refs_norm, rep = read_reference(refs, vocab, normalize=True)
    decode = model / "decode_test_utt"
    t = time.time()
    if not (decode / "lat.1.gz").is_file():
        run(["bash", REPO / f"steps/make_{feat_type}.sh", "--nj", 1, "--compress", "false",
             f"--{feat_type}-config", model / f"conf/{feat_type}.conf", data, work / "make_log",
             work / feat_type], env, work, log)
        run(["bash", REPO / "steps/compute_cmvn_stats.sh", data, work / "make_log",
             work / feat_type], env, work, log)
        run(["bash", REPO / "steps/nnet/decode.sh", "--nj", 1, "--srcdir", model, graph, data,
             decode], env, work, log)
    out["pipeline_seconds"] = round(time.time() - t, 1)
    best, lmwt, wip = best_wer(decode)
    other = a.other_lmwt or (10 if lmwt != 10 else 12)
    pipe = tra_words(decode / f"scoring/penalty_{wip}/{lmwt}.tra", id2word)
    pipe_other = tra_words(decode / f"scoring/penalty_0.0/{other}.tra", id2word)
    utt_opts = ["--cmvn=utterance", f"--lm-weight={lmwt}", f"--word-ins-penalty={wip}"]
    t = time.time()
    tr_utt = transcribe(model, data / "wav.scp", *utt_opts, f"--ctm={work}/test_utt.ctm")
    out["transcribe_test_seconds"] = round(time.time() - t, 1)
    tr_other = transcribe(model, data / "wav.scp", "--cmvn=utterance", f"--lm-weight={other}")
    tr_auto = transcribe(model, data / "wav.scp", f"--lm-weight={lmwt}",
                         f"--word-ins-penalty={wip}", f"--ctm={work}/test_auto.ctm")
    out["check1"] = {
        "lmwt": lmwt, "penalty": float(wip), "other_lmwt": other,
        "pipeline_best_wer_file": best,
        "same_words_best": same(tr_utt, pipe), "same_words_other": same(tr_other, pipe_other),
        "reference_words_outside_vocabulary": rep.as_dict(),
        "wer_as_given": {"pipeline": wer(refs, pipe), "transcribe_utterance": wer(refs, tr_utt),
                         "transcribe_auto": wer(refs, tr_auto)},
        "wer_normalized": {"pipeline": wer(refs_norm, pipe),
                           "transcribe_utterance": wer(refs_norm, tr_utt),
                           "transcribe_auto": wer(refs_norm, tr_auto)},
    }

    # 2. export
    from hybridasr.decode.export import load_exported, run_exported
    from hybridasr.features.cmvn import apply_cmvn

    pt = work / "model.pt"
    run([sys.executable, REPO / "pybin/export_model.py", model, pt], env, work, log)
    fw = work / "forward.ark"
    run([sys.executable, REPO / "pybin/forward.py",
         f"--class-frame-counts={model}/ali_train_pdf.counts", model / "final.nnet", data,
         f"ark:{fw}"], env, work, log)
    want = dict(kaldiio.load_ark(str(fw)))
    module, meta, _ = load_exported(str(pt))
    stats = kaldiio.load_scp(str(data / "cmvn.scp"))
    worst, frames, largest = 0.0, 0, 0.0
    for utt, feats in kaldiio.load_scp(str(data / "feats.scp")).items():
        x = apply_cmvn(np.asarray(feats, np.float32), stats[utt], meta["cmvn"]["norm_means"],
                       meta["cmvn"]["norm_vars"])
        got, w = run_exported(module, x), want[utt]
        if got.shape != w.shape:
            sys.exit(f"{utt}: exported {got.shape}, forward.py {w.shape}")
        worst = max(worst, float(np.abs(got - w).max()))
        largest = max(largest, float(np.abs(w).max()))
        frames += len(w)
    tr_pt = transcribe(pt, data / "wav.scp", *utt_opts)
    out["check2"] = {"utterances": len(want), "frames": frames, "max_abs_diff": worst,
                     "largest_abs_loglike": largest, "same_words_pt_vs_model_dir":
                     same(tr_pt, tr_utt)}

    # 3. confidences
    cv_scp = work / "cv_wav.scp"
    abs_wav_scp(recipe / "data/train_cv10", recipe, cv_scp)
    cv_refs = read_text_archive(str(recipe / "data/train_cv10/text"))
    cv_norm, _ = read_reference(cv_refs, vocab, normalize=True)
    t = time.time()
    tr_cv = transcribe(model, cv_scp, f"--lm-weight={lmwt}", f"--word-ins-penalty={wip}",
                       f"--ctm={work}/cv_auto.ctm")
    out["transcribe_cv_seconds"] = round(time.time() - t, 1)
    conf, calib = {}, None
    for name, ctm, r, rn in (("cv (--cmvn auto)", "cv_auto.ctm", cv_refs, cv_norm),
                             ("test (--cmvn auto)", "test_auto.ctm", refs, refs_norm),
                             ("test (--cmvn utterance)", "test_utt.ctm", refs, refs_norm)):
        hyps = read_ctm_words(str(work / ctm))
        conf[name] = {"normalized_reference": confidence_stats(rn, hyps).as_dict(),
                      "reference_as_given": confidence_stats(r, hyps).as_dict()}
        c, ok = labelled(rn, hyps)
        if calib is None:  # the cv set's: fitted there, applied to every set
            calib = fit_calibration(c, ok)
        conf[name]["normalized_reference"].update(
            auc=auc(c, ok), wrong_at_conf_1=int((c[~ok] >= 0.995).sum()),
            correct_at_conf_1=int((c[ok] >= 0.995).sum()),
            nce_calibrated_on_cv=nce(apply_calibration(calib, c), ok))
    out["check3"] = {"lmwt": lmwt, "penalty": float(wip), "confidences": conf,
                     "calibration_on_cv": {"a": calib[0], "b": calib[1]},
                     "cv_wer_as_given": wer(cv_refs, tr_cv), "cv_wer_normalized":
                     wer(cv_norm, tr_cv)}
    with open(work / "transcribe_polish.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print_table(out)
    return 0


def labelled(refs, hyps):
    """(confidences, correct) of every CTM word, in order."""
    c, ok = [], []
    for utt, words in hyps.items():
        ok += label_words(refs[utt], [w for w, _ in words])
        c += [x for _, x in words]
    return np.asarray(c, np.float64), np.asarray(ok, bool)


def auc(c, ok) -> float:
    """P(a correct word's confidence > a wrong word's), ties counted half."""
    a, b = c[ok][:, None], c[~ok][None, :]
    return float(((a > b).sum() + 0.5 * (a == b).sum()) / max(a.size * b.size, 1))


def fit_calibration(c, ok, iters=50):
    """Logistic regression P(correct) = sigmoid(a + b * conf), by Newton's method: a
    one-feature form of Kaldi's steps/conf/train_calibration.sh (there: more features)."""
    x = np.stack([np.ones_like(c), c], 1)
    w = np.zeros(2)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        h = x.T @ (x * (p * (1 - p))[:, None]) + 1e-9 * np.eye(2)
        w -= np.linalg.solve(h, x.T @ (p - ok))
    return float(w[0]), float(w[1])


def apply_calibration(ab, c):
    return 1.0 / (1.0 + np.exp(-(ab[0] + ab[1] * c)))


def confidence_sweep(argv) -> int:
    import torch

    from hybridasr.decode import confidence_calibration as cc
    from hybridasr.decode.ctm import lattice_ctm, word_arc_posteriors, confidences
    from hybridasr.decode.model_dir import load_model_dir
    from hybridasr.decode.transcribe import (Transcriber, TranscribeOptions, read_audio,
                                             recordings)
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.models import load_model

    p = argparse.ArgumentParser()
    for n in ("model_dir", "recipe_dir", "graph_dir", "work_dir"):
        p.add_argument(n, type=Path)
    p.add_argument("--lm-weight", type=float, default=13.0)
    p.add_argument("--word-ins-penalty", type=float, default=1.0)
    p.add_argument("--lattice-beams", default="8,12,16")
    p.add_argument("--posterior-scales", default="0.25,0.5,1")
    p.add_argument("--l2", type=float, default=cc.DEFAULT_L2)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    work = a.work_dir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    model_dir = work / "model"
    copy_model_dir(a.model_dir.absolute(), model_dir)
    graph = str(a.graph_dir.absolute())
    vocab = set(read_symbol_ids(str(a.graph_dir / "words.txt")))
    model, meta = load_model(str(model_dir / "final.nnet"), torch.device("cpu"))
    transform = FeatureTransform.from_dict(meta["transform"])
    md = load_model_dir(str(model_dir), "", "", "auto", transform.norm_means)
    sets = {}
    for name, sub in (("cv", "train_cv10"), ("test", "test")):
        scp = work / f"{name}_wav.scp"
        abs_wav_scp(a.recipe_dir / "data" / sub, a.recipe_dir.absolute(), scp)
        refs, _ = read_reference(read_text_archive(str(a.recipe_dir / "data" / sub / "text")),
                                 vocab, normalize=True)
        sets[name] = (recordings([], str(scp)), refs)
    out = {"lm_weight": a.lm_weight, "word_ins_penalty": a.word_ins_penalty, "l2": a.l2,
           "configs": []}
    loglikes = {}
    beams = [float(b) for b in a.lattice_beams.split(",")]
    scales = [float(s) for s in a.posterior_scales.split(",")]
    for beam in beams:
        opts = TranscribeOptions(lm_weight=a.lm_weight, word_ins_penalty=a.word_ins_penalty,
                                 lattice_beam=beam)
        t = Transcriber(md, model, meta, graph, opts, want_ctm=True)
        words = {(name, s): cc.CtmWords() for name in sets for s in scales}
        arcs = frames = 0
        t0 = time.time()
        for name, (recs, refs) in sets.items():
            for rec in recs:
                if rec.key not in loglikes:
                    loglikes[rec.key] = t.loglikes(t.features(read_audio(rec), rec.source))
                r = t.lattice_decoder.decode(loglikes[rec.key], opts.acwt, utt=rec.key)
                lat = r.lattice
                arcs += sum(len(x) for x in lat.arcs)
                frames += len(loglikes[rec.key])
                best = lattice_ctm(lat, t.tm, t.boundary, a.lm_weight, a.word_ins_penalty,
                                   what=rec.key) or []
                base = lat.scaled(1.0, 1.0 / a.lm_weight, a.word_ins_penalty)
                for s in scales:
                    ws = [type(w)(w.word, w.start, w.frames) for w in best]
                    confidences(ws, word_arc_posteriors(base.scaled(s, s), 5.0 * s))
                    cw = words[(name, s)]
                    for w in ws:
                        cw.utts.append(rec.key)
                        cw.words.append(t.graph.words.get(w.word, str(w.word)))
                        cw.seconds.append(round(w.frames * t.frame_shift, 2))
                        cw.confs.append(round(w.conf, 2))
        t.close()
        for s in scales:
            lab = {n: cc.labelled_ctm_words(words[(n, s)], sets[n][1], n) for n in sets}
            row = {"lattice_beam": beam, "posterior_scale": s,
                   "arcs_per_frame": round(arcs / max(frames, 1), 3),
                   "decode_seconds": round(time.time() - t0, 1)}
            for n, w in lab.items():
                c, ok = np.asarray(w.confs), np.asarray(w.correct, bool)
                row[n] = {"words": len(w), "correct": int(ok.sum()), "nce_raw": nce(c, ok),
                          "auc": auc(c, ok), "wrong_at_1": int((c[~ok] >= 0.995).sum())}
                for feats, tag in ((("logit_conf",), "conf"), (cc.FEATURES, "all")):
                    row[n][f"nce_5fold_{tag}"] = nce(cc.cross_fitted(w, 5, feats, a.l2), ok)
            for src, dst in (("cv", "test"), ("test", "cv")):
                for feats, tag in ((("logit_conf",), "conf"), (cc.FEATURES, "all")):
                    cal = cc.fit_calibration(lab[src], feats, a.l2)
                    d = lab[dst]
                    row[src][f"fit_{tag}"] = cal.to_dict()
                    row[dst][f"nce_fit_on_{src}_{tag}"] = nce(
                        cal.apply(d.confs, d.seconds, d.words), d.correct)
                    row[src][f"nce_in_sample_{tag}"] = cal.trained_on["nce_calibrated"]
            out["configs"].append(row)
            print(json.dumps({k: row[k] for k in ("lattice_beam", "posterior_scale",
                                                  "arcs_per_frame")}),
                  {n: {k: round(v, 3) for k, v in row[n].items() if k.startswith(("nce", "auc"))}
                   for n in sets}, flush=True)
    with open(work / "confidence_sweep.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return 0


def _f(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def print_table(out: dict) -> None:
    c1, c2, c3 = out["check1"], out["check2"], out["check3"]
    s, o = c1["same_words_best"], c1["same_words_other"]
    print(f"| check | figure |\n|---|---|\n"
          f"| words = decode.sh, LMWT {c1['lmwt']} penalty {c1['penalty']} (--cmvn utterance) "
          f"| {s['identical']}/{s['utterances']} utterances |\n"
          f"| words = decode.sh, LMWT {c1['other_lmwt']} penalty 0.0 (--cmvn utterance) "
          f"| {o['identical']}/{o['utterances']} utterances |")
    for ref in ("as_given", "normalized"):
        for k, v in c1[f"wer_{ref}"].items():
            print(f"| test WER {k}, reference {ref.replace('_', ' ')} | {v['wer']:.2f}% "
                  f"[{v['errors']}/{v['words']}, {v['ins']} ins, {v['del']} del, "
                  f"{v['sub']} sub] |")
    print(f"| export: max abs diff of log-likelihoods, {c2['utterances']} utterances, "
          f"{c2['frames']} frames | {c2['max_abs_diff']:.3g} |\n"
          f"| export: words = model dir's | {c2['same_words_pt_vs_model_dir']['identical']}/"
          f"{c2['same_words_pt_vs_model_dir']['utterances']} |")
    for k in ("cv_wer_as_given", "cv_wer_normalized"):
        print(f"| {k.replace('_', ' ')} (--cmvn auto) | {c3[k]['wer']:.2f}% "
              f"[{c3[k]['errors']}/{c3[k]['words']}] |")
    print("\n| set | reference | words | fraction correct | mean conf correct | mean conf wrong "
          "| NCE |\n|---|---|---|---|---|---|---|")
    for name, by_ref in c3["confidences"].items():
        for ref, st in by_ref.items():
            print(f"| {name} | {ref.replace('_', ' ')} | {st['words']} | "
                  f"{_f(st['fraction_correct'])} | {_f(st['mean_conf_correct'])} | "
                  f"{_f(st['mean_conf_wrong'])} | {_f(st['nce'])} |")
    cal = c3["calibration_on_cv"]
    print(f"\n| set (normalised reference) | AUC | wrong words at conf 1.00 | correct words at "
          f"conf 1.00 | NCE after sigmoid({cal['a']:.2f} + {cal['b']:.2f} conf) fitted on cv |"
          "\n|---|---|---|---|---|")
    for name, by_ref in c3["confidences"].items():
        st = by_ref["normalized_reference"]
        print(f"| {name} | {_f(st['auc'])} | {st['wrong_at_conf_1']} | "
              f"{st['correct_at_conf_1']} | {_f(st['nce_calibrated_on_cv'])} |")


if __name__ == "__main__":
    sys.exit(main())
