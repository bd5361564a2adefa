#!/usr/bin/env python3
"""Embedded decoder speed (real-time factor) and accuracy on kaldi_digits' test set, one run.

Inputs (log-likelihood matrices of data/test, 30 utterances, 1073 frames):
- ``gmm``: the alignment model's own GMM (exp/mono_ali/final.mdl) on apply-cmvn + add-deltas
  features: real acoustic scores, what Kaldi's gmm-latgen-faster decoded (0% WER);
- ``pseudo``: pseudo log-likelihoods (0 for the pdf of a frame's transition-id, -10 for the
  others, plus Gaussian noise ``--noise``) from the best-path alignment of the ``gmm`` decode;
- ``model`` (with ``--nnet`` and ``--counts``): a trained network forwarded over data/test.
Prints one JSON object per line, per input:
- ``read``: reading the log-likelihood archive back (the baseline, measured in the same run:
  the least any decoder pays to see its input);
- ``decode`` for each setting (Kaldi nnet1's beam 13 / max-active 7000 at the acoustic scale
  of Kaldi's GMM decode, and a narrow beam 6 / max-active 200): seconds (best of
  ``--repeats``), real-time factor (decode time / audio time at 100 frames/s), frames per
  second, WER, and ``ratio_to_read``;
- ``lmwt_sweep``: decoding once per LM weight 7..17 (what steps/score.sh does for the embedded
  decoder), with ``ratio_to_one_decode``.
Also ``gmm_likes`` (the GMM scoring time) and ``kaldi_logged``: the real-time factor Kaldi's
gmm-latgen-faster logged for the same test set (exp/mono/decode/log/decode.1.log, another
machine, GMM scoring included: for orientation only). The machine is shared: only ratios from
the same run mean anything.

``--against-kaldi digits,polish``: instead, the toolkit's lattice decoder against Kaldi's own
LatticeFasterDecoder (kaldi-hmm-gmm's ``decode_utterance_lattice_faster``) on each corpus'
monophone graph (exp/mono/graph), the same log-likelihoods (the mono GMM's, as above), beams
and lattice beam (``--beam``, ``--lattice-beam``, ``--max-active``). Each decoder runs in a
process of its own (peak memory is the process's): ``kaldi`` (search, raw lattice and its best
path: kaldi-hmm-gmm's Python API neither returns nor determinizes the lattice), ``ours_search``
(the same work: search and raw lattice) and ``ours_lattice`` (what latgen_faster_mapped.py
does: search, phone-first determinization, the CompactLattice). One JSON line per decoder and
corpus: seconds (best of ``--repeats``), ``ratio_to_kaldi``, peak RSS and its growth while
decoding, and whether every best path (words, transition-ids, cost) is Kaldi's. kaldi-hmm-gmm
takes FSTs only from kaldifst 1.7.17, which ``install.sh`` installs beside the venv (into
.venv/kaldifst-1.7.17); kaldi-hmm-gmm builds the monophone transition model from the topology
and phones/sets.int, checked against exp/mono_ali/final.mdl's.

Usage: bench/decode.py [--repeats R] [--noise S] [--inputs gmm,pseudo] [--nnet N --counts C]
       bench/decode.py --against-kaldi digits,polish [--repeats R] [--beam B --lattice-beam L]
"""
from __future__ import annotations

# kaldi-hmm-gmm 1.1.4 hangs when imported after kaldifst (docs/design.md): first, always
import kaldi_hmm_gmm  # noqa: F401,I001

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO.parent / "shared" / "data" / "kaldi_digits"
ACWT = 0.083333  # exp/mono/decode's acoustic scale
KALDIFST_17 = REPO / ".venv" / "kaldifst-1.7.17"  # the kaldifst kaldi-hmm-gmm takes FSTs from


def _best(fn, repeats, clock=time.perf_counter):
    best, out = None, None
    for _ in range(repeats):
        t = clock()
        out = fn()
        dt = clock() - t
        best = dt if best is None else min(best, dt)
    return best, out


def _test_set(transform, kaldi_dir=DIGITS):
    from hybridasr.data.dataset import UtteranceDataset

    os.chdir(kaldi_dir)  # the scp paths are relative to the experiment dir
    return UtteranceDataset.from_data_dir("data/test", transform=transform,
                                          use_cmvn=transform.norm_means)


def _gmm(repeats, kaldi_dir=DIGITS):
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.kaldi.gmm_model import read_gmm_model

    _, gmm = read_gmm_model(str(kaldi_dir / "exp/mono_ali/final.mdl"))
    ds = _test_set(FeatureTransform(norm_means=True, delta_order=2), kaldi_dir)
    feats = {u: ds.load(u)[0] for u in ds}
    t, out = _best(lambda: {u: gmm.log_likelihoods(x) for u, x in feats.items()}, repeats)
    return out, t


def _pseudo(tm, dec, gmm_lls, noise, seed=0):
    import numpy as np

    from hybridasr.decode.pseudo_loglikes import pseudo_loglikes

    rng = np.random.default_rng(seed)
    out = {}
    for u, ll in gmm_lls.items():
        ali = np.asarray(dec.decode(ll, ACWT, u).alignment)
        m = pseudo_loglikes(ali, tm.tid2pdf, tm.num_pdfs)
        out[u] = (m + rng.normal(0, noise, m.shape)).astype(np.float32)
    return out


def _forwarded(nnet, counts):
    import torch

    from hybridasr.features.transform import FeatureTransform
    from hybridasr.decode.forward import forward_dataset
    from hybridasr.decode.loglikes import load_log_priors
    from hybridasr.models import load_model

    model, meta = load_model(nnet, torch.device("cpu"))
    ds = _test_set(FeatureTransform.from_dict(meta["transform"]))
    out = {}
    priors = load_log_priors(counts, int(meta["num_pdfs"])) if counts else None
    forward_dataset(model, ds, torch.device("cpu"), out.__setitem__, int(meta["num_pdfs"]),
                    priors)
    return out


def _kaldi_logged():
    log = DIGITS / "exp/mono/decode/log/decode.1.log"
    m = re.search(r"Time taken (\S+)s: real-time factor assuming 100 frames/sec is (\S+)",
                  log.read_text()) if log.exists() else None
    return (float(m.group(1)), float(m.group(2))) if m else None


def _memory_mb():
    """(current RSS, peak RSS) of this process, MB (Linux's /proc/self/status)."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return tuple(int(fields[k].split()[0]) / 1024.0 for k in ("VmRSS", "VmHWM"))


def _worker(spec):
    """One decoder in this process: best-of-repeats seconds (wall and CPU; nothing kept from
    the timed runs), memory, and each utterance's best path (one utterance at a time)."""
    import numpy as np

    lls = dict(np.load(spec["npz"]))
    beams = {k: spec[k] for k in ("beam", "max_active", "min_active", "lattice_beam")}
    acwt = spec["acwt"]
    if spec["mode"] == "kaldi":
        import kaldifst  # 1.7.17 (PYTHONPATH): the one whose FSTs kaldi-hmm-gmm takes

        if not kaldifst.__file__.startswith(str(KALDIFST_17)):
            sys.exit(f"the kaldi worker needs kaldifst 1.7.17 from {KALDIFST_17} first on "
                     f"PYTHONPATH, got {kaldifst.__file__}")

        khg = kaldi_hmm_gmm
        topo = khg.HmmTopology()
        topo.read(open(spec["topo"]).read())
        sets = [[int(x) for x in line.split()] for line in open(spec["sets"])]
        tm = khg.TransitionModel(khg.monophone_context_dependency_shared(
            sets, topo.get_phone_to_num_pdf_classes()), topo)
        tid2pdf = np.asarray(spec["tid2pdf"])
        ours = [tm.transition_id_to_pdf(t) for t in range(1, tm.num_transition_ids + 1)]
        if ours != tid2pdf[1:].tolist():
            sys.exit(f"{spec['topo']}: kaldi-hmm-gmm's monophone transition model is not "
                     f"{spec['model']}'s")
        fst = kaldifst.StdConstFst(kaldifst.StdVectorFst.read(spec["vector_fst"]))
        decoder = khg.LatticeFasterDecoderStdConstFst(
            fst, khg.LatticeFasterDecoderConfig(**beams))
        # DecodableMatrixScaledMapped's lookups, done beforehand: column tid - 1
        mats = {u: np.ascontiguousarray(acwt * m[:, tid2pdf[1:]]) for u, m in lls.items()}

        def one(u):
            ok, ali, words, like = khg.decode_utterance_lattice_faster(
                decoder, khg.DecodableCtc(mats[u]), tm, u, True)
            return (list(words), list(ali), -like) if ok else None
        decode = best = one
    else:
        from hybridasr.decode.determinize_native import phone_boundaries, state_level
        from hybridasr.decode.graph import load_graph_dir
        from hybridasr.decode.lattice_best_path import best_path
        from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
        from hybridasr.kaldi.transition_model import read_transition_model

        tm = read_transition_model(spec["model"])
        graph = load_graph_dir(spec["graph_dir"])
        dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, LatgenOptions(**beams),
                             graph.max_ilabel, fst_path=graph.path,
                             phone_of_tid=phone_boundaries(tm))
        search = spec["mode"] == "ours_search"

        def decode(u):
            return dec.search(lls[u], acwt, u) if search else dec.decode(lls[u], acwt, u)

        def best(u):  # the raw lattice's acoustic costs are scaled, the CompactLattice's not
            out, scale = decode(u), 1.0 if search else acwt
            lat = (state_level(out, dec.graph.pair_tid, dec.graph.pair_word)
                   if search else out.lattice) if out is not None else None
            p = best_path(lat, 1.0, scale) if lat is not None else None
            return (p.words, p.tids, p.graph_cost + scale * p.acoustic_cost) if p else None
    rss0, _ = _memory_mb()

    def run():
        for u in lls:
            decode(u)
    cpu, _ = _best(run, spec["repeats"], time.process_time)
    wall, _ = _best(run, spec["repeats"])
    _, peak = _memory_mb()
    paths = {u: best(u) for u in lls}
    return {"seconds": wall, "cpu_seconds": cpu, "rss_before_decoding_mb": rss0,
            "peak_rss_mb": peak, "paths": {u: p for u, p in paths.items() if p is not None}}


def _check_kaldifst_17():
    if not (KALDIFST_17 / "kaldifst").is_dir():
        sys.exit(f"bench/decode.py: --against-kaldi needs kaldifst 1.7.17 (the kaldifst whose "
                 f"FSTs kaldi-hmm-gmm 1.1.4 takes) in {KALDIFST_17}: run ./install.sh")


def against_kaldi(args):
    """The toolkit's lattice decoder against Kaldi's LatticeFasterDecoder, per corpus."""
    import subprocess

    import kaldifst
    import numpy as np

    from hybridasr.kaldi.transition_model import read_transition_model

    _check_kaldifst_17()
    for corpus in args.against_kaldi.split(","):
        kdir = REPO.parent / "shared" / "data" / f"kaldi_{corpus}"
        if not kdir.exists():
            sys.exit(f"needs {kdir}")
        lls, _ = _gmm(1, kdir)
        frames = sum(len(m) for m in lls.values())
        model = str(kdir / "exp/mono_ali/final.mdl")
        with tempfile.TemporaryDirectory() as tmp:
            np.savez(f"{tmp}/ll.npz", **lls)
            kaldifst.StdVectorFst(kaldifst.StdConstFst.read(
                str(kdir / "exp/mono/graph/HCLG.fst"))).write(f"{tmp}/HCLG.vector.fst")
            common = {"npz": f"{tmp}/ll.npz", "model": model, "acwt": ACWT,
                      "graph_dir": str(kdir / "exp/mono/graph"), "repeats": args.repeats,
                      "vector_fst": f"{tmp}/HCLG.vector.fst", "topo": str(kdir / "data/lang/topo"),
                      "sets": str(kdir / "data/lang/phones/sets.int"), "beam": args.beam,
                      "max_active": args.max_active, "min_active": 200,
                      "lattice_beam": args.lattice_beam,
                      "tid2pdf": read_transition_model(model).tid2pdf.tolist()}
            res = {}
            for mode in ("kaldi", "ours_search", "ours_lattice"):
                with open(f"{tmp}/{mode}.json", "w") as f:
                    json.dump({**common, "mode": mode}, f)
                env = dict(os.environ)
                if mode == "kaldi":  # kaldi-hmm-gmm takes FSTs from kaldifst 1.7.17 only
                    env["PYTHONPATH"] = os.pathsep.join(
                        [str(KALDIFST_17)] + [x for x in [env.get("PYTHONPATH")] if x])
                p = subprocess.run([sys.executable, __file__, "--worker", f"{tmp}/{mode}.json"],
                                   capture_output=True, text=True, env=env)
                if p.returncode != 0:
                    sys.exit(f"the {mode} worker failed:\n{p.stderr[-3000:]}")
                res[mode] = json.loads(p.stdout.splitlines()[-1])
        ref = res["kaldi"]["paths"]
        for mode, r in res.items():
            same = [u for u, (w, a, c) in r["paths"].items()
                    if u in ref and (w, a) == tuple(ref[u][:2]) and abs(c - ref[u][2]) <= 1e-3 *
                    max(1.0, abs(c))]
            print(json.dumps({
                "bench": "decode", "name": "vs_kaldi", "corpus": corpus, "decoder": mode,
                "graph": "exp/mono/graph", "input": "gmm (exp/mono_ali/final.mdl)",
                "utts": len(lls), "frames": frames, "beam": args.beam,
                "max_active": args.max_active, "lattice_beam": args.lattice_beam,
                "acoustic_scale": ACWT, "seconds": round(r["seconds"], 4),
                "cpu_seconds": round(r["cpu_seconds"], 4),
                "rtf": round(r["cpu_seconds"] / (frames / 100.0), 5),
                "ratio_to_kaldi": round(r["cpu_seconds"] / res["kaldi"]["cpu_seconds"], 3),
                "peak_rss_mb": round(r["peak_rss_mb"], 1),
                "decoding_rss_growth_mb": round(r["peak_rss_mb"] -
                                                r["rss_before_decoding_mb"], 1),
                "best_paths": len(r["paths"]), "identical_to_kaldi": len(same),
                "all_identical": len(same) == len(ref) == len(lls)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--noise", type=float, default=2.0)
    ap.add_argument("--inputs", default="gmm,pseudo", help="comma list of gmm, pseudo")
    ap.add_argument("--nnet", default="", help="also decode this trained model's outputs")
    ap.add_argument("--counts", default="", help="pdf counts for --nnet's priors")
    ap.add_argument("--against-kaldi", default="",
                    help="corpora (digits, polish): the lattice decoder against Kaldi's")
    ap.add_argument("--beam", type=float, default=13.0, help="--against-kaldi's beam")
    ap.add_argument("--lattice-beam", type=float, default=8.0)
    ap.add_argument("--max-active", type=int, default=7000)
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        with open(args.worker) as f:
            print(json.dumps(_worker(json.load(f))))
        return
    if args.against_kaldi:
        against_kaldi(args)
        return
    if not DIGITS.exists():
        sys.exit(f"needs {DIGITS}")
    import kaldiio

    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.decode.wer import compute_wer
    from hybridasr.kaldi.io.table_writer import ArkScpWriter
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(str(DIGITS / "exp/mono_ali/final.mdl"))
    graph = load_graph_dir(str(DIGITS / "exp/mono/graph"))
    refs = read_text_archive(str(DIGITS / "data/test/text"))
    settings = [("kaldi_nnet1_beam13", DecodeOptions(beam=13, max_active=7000, min_active=200)),
                ("narrow_beam6", DecodeOptions(beam=6, max_active=200, min_active=20))]
    wide = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, settings[0][1], graph.max_ilabel)

    gmm_lls, t_gmm = _gmm(args.repeats)
    frames = sum(len(m) for m in gmm_lls.values())
    audio_s = frames / 100.0
    print(json.dumps({"bench": "decode", "name": "gmm_likes", "data": "data/test",
                      "utts": len(gmm_lls), "frames": frames, "seconds": round(t_gmm, 4),
                      "rtf": round(t_gmm / audio_s, 5)}), flush=True)
    logged = _kaldi_logged()
    if logged:
        print(json.dumps({"bench": "decode", "name": "kaldi_logged",
                          "program": "gmm-latgen-faster (GMM scoring included)",
                          "seconds": logged[0], "rtf": logged[1],
                          "note": "another machine, from exp/mono/decode/log/decode.1.log"}),
              flush=True)

    inputs = [name for name in args.inputs.split(",") if name] + (["model"] if args.nnet else [])
    for name in inputs:
        if name == "gmm":
            mats, label = gmm_lls, "gmm (exp/mono_ali/final.mdl)"
        elif name == "pseudo":
            mats, label = _pseudo(tm, wide, gmm_lls, args.noise), f"pseudo, noise {args.noise}"
        elif name == "model":
            mats, label = _forwarded(args.nnet, args.counts), f"model {args.nnet}"
        else:
            sys.exit(f"unknown input {name!r} (gmm, pseudo)")
        common = {"bench": "decode", "input": label, "data": "data/test", "utts": len(mats),
                  "frames": frames}
        with tempfile.TemporaryDirectory() as tmp:
            with ArkScpWriter(f"{tmp}/ll.ark", f"{tmp}/ll.scp") as w:
                for k, m in mats.items():
                    w.write(k, m)
            t_read, _ = _best(lambda: [m for _, m in kaldiio.load_ark(f"{tmp}/ll.ark")],
                              args.repeats)
        print(json.dumps({**common, "name": "read", "seconds": round(t_read, 4),
                          "rtf": round(t_read / audio_s, 5)}), flush=True)

        def run(dec, scale):
            return {k: [graph.words[w] for w in dec.decode(m, scale, k).words]
                    for k, m in mats.items()}

        t_wide = None
        for sname, opts in settings:
            dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, opts, graph.max_ilabel)
            t, hyps = _best(lambda: run(dec, ACWT), args.repeats)
            t_wide = t if t_wide is None else t_wide
            s = compute_wer(refs, hyps)
            print(json.dumps({**common, "name": "decode", "setting": sname, "beam": opts.beam,
                              "max_active": opts.max_active, "acoustic_scale": ACWT,
                              "seconds": round(t, 4), "rtf": round(t / audio_s, 5),
                              "frames_per_s": round(frames / t), "wer": round(s.wer, 2),
                              "ratio_to_read": round(t / t_read, 2)}), flush=True)
        t_sweep, _ = _best(lambda: [run(wide, 1.0 / lmwt) for lmwt in range(7, 18)], 1)
        print(json.dumps({**common, "name": "lmwt_sweep", "lmwts": "7..17",
                          "seconds": round(t_sweep, 4), "rtf": round(t_sweep / audio_s, 5),
                          "ratio_to_one_decode": round(t_sweep / t_wide, 2)}), flush=True)


if __name__ == "__main__":
    main()
