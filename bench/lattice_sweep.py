#!/usr/bin/env python3
"""LM-weight sweep from lattices against the re-decoding sweep, in the same run.

Re-decoding (what ``steps/score.sh --lattices false`` does): one 1-best decode per LM weight
(``decode_faster_mapped``'s decoder at acoustic scale 1/LMWT) on the pdf graph. Lattices, for
each of ``--lattice-configs``: one ``latgen_faster_mapped`` decode at ``--acwt``, then the best
path of every (LM weight, insertion penalty) lattice. Prints one JSON object per line: each route's
seconds, best WER, and its ratios to the re-decoding sweep on the pdf graph; ``--markdown``
writes them as a table (docs/lattice_sweep.md).

e.g.: bench/lattice_sweep.py --model exp/blstm/final.mdl \\
        --graph ../shared/data/kaldi_polish/exp/tri1/graph \\
        --loglikes ark:exp/blstm/decode_test/loglikes.1.ark \\
        --text ../shared/data/kaldi_polish/data/test/text \\
        --lattice-configs 13:8,12:8,13:8:words --markdown docs/lattice_sweep.md
"""
import argparse
import json
import resource
import time


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv=None):
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.decode.determinize_native import phone_boundaries
    from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
    from hybridasr.decode.wer import compute_wer
    from hybridasr.decode.lattice_best_path import best_paths
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.kaldi.transition_model import read_transition_model

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--graph", required=True, help="graph dir (HCLG.fst, words.txt)")
    p.add_argument("--loglikes", required=True, help="rspecifier of per-pdf log-likelihoods")
    p.add_argument("--text", required=True, help="reference transcripts")
    p.add_argument("--min-lmwt", type=int, default=4)
    p.add_argument("--max-lmwt", type=int, default=15)
    p.add_argument("--penalties", default="0.0,0.5,1.0")
    p.add_argument("--beam", type=float, default=13.0, help="re-decoding beam")
    p.add_argument("--max-active", type=int, default=7000)
    p.add_argument("--lattice-configs", default="13:8",
                   help="lattice routes to time, comma-separated "
                   "BEAM:LATTICE_BEAM[:FLAG...], flags: words (determinize on words alone, "
                   "not phones first), a number (its --max-active; default --max-active)")
    p.add_argument("--acwt", type=float, default=0.1)
    p.add_argument("--markdown", default="",
                   help="also write the routes as a table to this file (docs/lattice_sweep.md)")
    a = p.parse_args(argv)

    tm = read_transition_model(a.model)
    graph = load_graph_dir(a.graph)
    lls = dict(read_matrices(a.loglikes))
    refs = {k: [w for w in v if w not in ("<NOISE>", "<SPOKEN_NOISE>")]
            for k, v in read_text_archive(a.text).items() if k in lls}
    words = graph.words
    lmwts = list(range(a.min_lmwt, a.max_lmwt + 1))
    pens = [float(x) for x in a.penalties.split(",")]
    frames = sum(m.shape[0] for m in lls.values())

    def wer_of(hyps):
        return compute_wer(refs, {k: [words[w] for w in v if words[w] != "<UNK>"]
                                  for k, v in hyps.items()}).wer

    def redecode():
        t0 = time.perf_counter()
        dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                            DecodeOptions(beam=a.beam, max_active=a.max_active, min_active=200),
                            graph.max_ilabel, fst_path=graph.path)
        wers = {}
        for lmwt in lmwts:
            wers[lmwt] = wer_of({k: dec.decode(m, 1.0 / lmwt, k).words for k, m in lls.items()})
        secs = time.perf_counter() - t0
        best = min(wers, key=wers.get)
        return {"route": "redecode_pdf", "seconds": secs,
                "decodes": len(lmwts), "best_wer": wers[best], "best_lmwt": best,
                "wer_by_lmwt": wers, "beam": a.beam, "max_active": a.max_active}

    rows = [redecode()]

    combos = [(lmwt, wip) for lmwt in lmwts for wip in pens]
    base = rows[-1]  # the re-decoding sweep on the pdf graph: what score.sh does without lattices
    for spec in a.lattice_configs.split(","):
        beam, lattice_beam, *how = spec.split(":")
        words_only = "words" in how
        unknown = [x for x in how if x != "words" and not x.isdigit()]
        if unknown:
            p.error(f"--lattice-configs {spec}: unknown flag {unknown[0]} (words, or a "
                    f"number: --max-active)")
        max_active = next((int(x) for x in how if x.isdigit()), a.max_active)
        t0 = time.perf_counter()
        ld = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                            LatgenOptions(beam=float(beam), lattice_beam=float(lattice_beam),
                                          max_active=max_active),
                            graph.max_ilabel, fst_path=graph.path,
                            phone_of_tid=None if words_only else phone_boundaries(tm))
        lats = {k: ld.decode(m, a.acwt, k).lattice for k, m in lls.items()}
        ld.close()
        t_decode = time.perf_counter() - t0
        paths = {k: best_paths(lat, [1.0] * len(combos), [1.0 / c[0] for c in combos],
                               [c[1] for c in combos]) for k, lat in lats.items()}
        wers = {}
        for i, c in enumerate(combos):
            wers[c] = wer_of({k: (paths[k][i].words if paths[k][i] else []) for k in lats})
        secs = time.perf_counter() - t0
        best = min(wers, key=wers.get)
        arcs = sum(lat.num_arcs for lat in lats.values())
        rows.append({
            "route": "lattice", "seconds": secs, "decode_seconds": t_decode,
            "sweep_seconds": secs - t_decode, "best_wer": wers[best], "best_lmwt": best[0],
            "best_penalty": best[1], "wer_by_lmwt_at_penalty_0": {
                c[0]: w for c, w in wers.items() if c[1] == 0.0},
            "lattice_density_arcs_per_frame": arcs / frames, "decode_beam": float(beam),
            "lattice_beam": float(lattice_beam), "max_active": max_active,
            "determinization": "words only" if words_only else "phones first",
            "seconds_over_redecoding": secs / base["seconds"],
            "best_wer_minus_redecoding": wers[best] - base["best_wer"]})
    for r in rows:
        r.update(utts=len(lls), frames=frames, peak_rss_mb=round(peak_rss_mb()))
        print(json.dumps({k: (v if not isinstance(v, dict) else {str(x): y for x, y in v.items()})
                          for k, v in r.items()}), flush=True)
    if a.markdown:
        write_markdown(a.markdown, rows, a, argv)


def write_markdown(path, rows, a, argv):
    """The routes side by side, with the command that regenerates the table."""
    import os
    import platform
    import shlex
    import sys

    cmd = "bench/lattice_sweep.py " + " ".join(
        shlex.quote(x) for x in (sys.argv[1:] if argv is None else argv))
    first = rows[0]
    lines = [
        "# LM-weight sweep: lattices against re-decoding", "",
        "Generated by `bench/lattice_sweep.py` on "
        f"{platform.node()} ({os.cpu_count()} CPU cores), {time.strftime('%Y-%m-%d %H:%M')}: "
        f"{first['utts']} utterances, {first['frames']} frames, one process, LM weights "
        f"{a.min_lmwt}..{a.max_lmwt}, insertion penalties {a.penalties} (lattices only). "
        "Regenerate with:", "",
        f"    {cmd}", "",
        "| route | decodes | seconds | seconds / re-decoding's (pdf graph) | best WER % | "
        "best LM weight (penalty) | WER - re-decoding's | arcs per frame |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    base = next(r for r in rows if r["route"] == "redecode_pdf")
    for r in rows:
        if r["route"] == "lattice":
            search = f"LatticeFasterDecoder (ours), max-active {r['max_active']}"
            what = (f"lattices: {search}, beam {r['decode_beam']:g}, lattice beam "
                    f"{r['lattice_beam']:g}, {r['determinization']} (decode "
                    f"{r['decode_seconds']:.1f} s, sweep "
                    f"{r['sweep_seconds']:.2f} s)")
            best = f"{r['best_lmwt']} ({r['best_penalty']:g})"
            density = f"{r['lattice_density_arcs_per_frame']:.2f}"
        else:
            what = (f"1-best re-decoding, pdf graph, beam {r['beam']:g}, "
                    f"max-active {r['max_active']}")
            best, density = str(r["best_lmwt"]), "-"
        lines.append(f"| {what} | {r.get('decodes', 1)} | {r['seconds']:.1f} | "
                     f"{r['seconds'] / base['seconds']:.3f} | {r['best_wer']:.2f} | {best} | "
                     f"{r['best_wer'] - base['best_wer']:+.2f} | {density} |")
    lines += ["", f"Peak RSS of the run: {first['peak_rss_mb']} MB.", ""]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
