#!/usr/bin/env python3
"""Embedded decoding with and without the [T, num_transition_ids] expansion, each route in its
own process (peak RSS is the process's): seconds, peak RSS, and the ratio to the expanded
route measured in the same run. Prints one JSON object per line.

e.g.: bench/decode_expansion.py --model /work/runs/polish1/exp/cpu16/final.mdl \\
        --graph ../shared/data/kaldi_polish/exp/tri1/graph \\
        --loglikes ark:/work/runs/polish1/exp/cpu16/decode_test/loglikes.1.ark
"""
import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time


def run_route(a, expand: bool) -> dict:
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(a.model)
    graph = load_graph_dir(a.graph)
    lls = list(read_matrices(a.loglikes))
    t0 = time.perf_counter()
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=a.beam, max_active=a.max_active, min_active=200),
                        graph.max_ilabel, fst_path=graph.path, expand=expand)
    t_graph = time.perf_counter() - t0
    words = [dec.decode(m, a.acwt, k).words for k, m in lls]
    return {"route": "expanded" if expand else "pdf_graph", "seconds": time.perf_counter() - t0,
            "graph_seconds": t_graph, "utts": len(lls), "frames": sum(len(m) for _, m in lls),
            "num_pdfs": tm.num_pdfs, "num_transition_ids": tm.num_transition_ids,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "words_hash": hashlib.sha1(str(words).encode()).hexdigest()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--graph", required=True)
    p.add_argument("--loglikes", required=True)
    p.add_argument("--beam", type=float, default=13.0)
    p.add_argument("--max-active", type=int, default=7000)
    p.add_argument("--acwt", type=float, default=0.1)
    p.add_argument("--route", choices=["expanded", "pdf_graph"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.route:
        print(json.dumps(run_route(a, a.route == "expanded")))
        return
    rows = []
    for route in ("expanded", "pdf_graph"):
        out = subprocess.run([sys.executable, __file__, *sys.argv[1:], f"--route={route}"],
                             check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    base = rows[0]
    for r in rows:
        r["seconds_over_expanded"] = r["seconds"] / base["seconds"]
        r["same_words_as_expanded"] = r.pop("words_hash") == base.get("words_hash", None) \
            if r is not base else True
    base.pop("words_hash", None)
    for r in rows:
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
