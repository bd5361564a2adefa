"""Den forward-backward frames/s (Kaldi's DenominatorComputation, ours in torch) on a real
den graph, beside a BLSTM's forward+backward frames/s; JSON lines on stdout.

usage: bench/chain_den.py <kaldi-dir> <model-dir e.g. exp/tri1> [batch] [frames] [device]
The phone LM comes from <model-dir>/ali.1.gz (Kaldi defaults: 4-gram, 1000 extra states)."""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import torch

from hybridasr.chain.den_forward_backward import DenGraph, den_log_prob
from hybridasr.chain.den_graph import make_den_fst
from hybridasr.chain.phone_lm import alignment_phone_sequences, estimate_phone_lm
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree


def _final_mdl(model_dir: str) -> str:
    p = os.path.join(model_dir, "final.mdl")
    if os.path.getsize(p) < 64:  # a flattened symlink naming the real file
        with open(p) as f:
            p = os.path.join(model_dir, f.read().strip())
    return p


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n", 1)[1], file=sys.stderr)
        sys.exit(0 if argv[:1] in (["-h"], ["--help"]) else 1)
    kdir, mdir = argv[0], os.path.join(argv[0], argv[1])
    batch = int(argv[2]) if len(argv) > 2 else 32
    frames = int(argv[3]) if len(argv) > 3 else 50
    device = argv[4] if len(argv) > 4 else "cpu"
    mdl = _final_mdl(mdir)
    t = time.time()
    seqs = [s for _, s in alignment_phone_sequences(
        mdl, f"ark:gunzip -c {os.path.join(mdir, 'ali.1.gz')}|")]
    lm = estimate_phone_lm(seqs)
    tm, tree = read_transition_model(mdl), read_tree(os.path.join(mdir, "tree"))
    den = make_den_fst(tree, tm, lm)
    print(json.dumps({"what": "den_graph", "dir": mdir, "pdfs": tm.num_pdfs,
                      "lm_states": lm.num_states, "states": den.num_states,
                      "arcs": den.num_arcs, "seconds": round(time.time() - t, 2)}), flush=True)
    g = DenGraph.from_fst(den, tm.num_pdfs, device=device)
    x = torch.randn(batch, frames, tm.num_pdfs, device=device, requires_grad=True)
    for rep in range(2):  # the first is a warm-up
        if device != "cpu":
            torch.cuda.synchronize()
        t = time.time()
        den_log_prob(x, g, 0.1).sum().backward()
        if device != "cpu":
            torch.cuda.synchronize()
        dt = time.time() - t
    print(json.dumps({"what": "den_forward_backward", "device": device, "batch": batch,
                      "frames_per_seq": frames, "frames_per_s": round(batch * frames / dt, 1),
                      "threads": torch.get_num_threads()}), flush=True)
    from torch import nn
    lstm = nn.LSTM(40, 320, num_layers=3, bidirectional=True, batch_first=True).to(device)
    head = nn.Linear(640, tm.num_pdfs).to(device)
    feats = torch.randn(batch, frames * 3, 40, device=device)  # 3x the subsampled frames
    for rep in range(2):
        if device != "cpu":
            torch.cuda.synchronize()
        t = time.time()
        y = head(lstm(feats)[0][:, ::3])
        y.sum().backward()
        if device != "cpu":
            torch.cuda.synchronize()
        dt = time.time() - t
    print(json.dumps({"what": "blstm_forward_backward", "device": device, "batch": batch,
                      "layers": 3, "cells": 320, "input_frames_per_s":
                      round(batch * frames * 3 / dt, 1), "output_frames_per_s":
                      round(batch * frames / dt, 1)}), flush=True)


if __name__ == "__main__":
    main()
