"""Den forward-backward frames/s (Kaldi's DenominatorComputation, ours in torch) on a real
den graph, beside a BLSTM's forward+backward frames/s; JSON lines on stdout. The den
forward-backward is timed twice in the same run: as ``den_forward_backward.den_log_prob``
(sparse matmul per frame) and as the per-arc gather/scatter it replaced (``arc_gather``,
kept here as the reference), with the ratio and the largest difference of their results.

usage: bench/chain_den.py <kaldi-dir> <model-dir e.g. exp/tri1> [batch] [frames] [device]
(one thread: OMP_NUM_THREADS=1). The networks: a 3 x 320 BLSTM and the default TDNN-F
(hybridasr/models/tdnnf.py), forward and backward on batch x 3*frames input frames.
The phone LM comes from <model-dir>/ali.1.gz (Kaldi defaults: 4-gram, 1000 extra states)."""
from __future__ import annotations

import json
import os
import sys
import time

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


class _ArcGather(torch.autograd.Function):
    """The previous den forward-backward: per frame, a gather of every arc's source alpha
    and pdf output, then a scatter-add into the destinations ((B, S) layout)."""

    @staticmethod
    def forward(ctx, out, g, c):
        b, t_len, _ = out.shape
        x = out.detach().clamp(-30.0, 30.0)
        shift = x.max(2, keepdim=True).values
        e = torch.exp(x - shift)
        alphas = out.new_empty(t_len + 1, b, g.num_states)
        a = g.init.unsqueeze(0).expand(b, -1).clone()
        a = a + c * a.sum(1, keepdim=True) * g.init
        logp = shift.sum((1, 2))
        for t in range(t_len):
            alphas[t] = a
            arc = a[:, g.src] * g.prob * e[:, t, g.pdf]
            nxt = out.new_zeros(b, g.num_states).index_add_(1, g.dst, arc)
            s = nxt.sum(1, keepdim=True)
            logp = logp + torch.log(s.squeeze(1))
            a = nxt / s
            a = a + c * a.sum(1, keepdim=True) * g.init
        alphas[t_len] = a
        ctx.save_for_backward(alphas, e)
        ctx.g, ctx.c = g, c
        return logp + torch.log(a.sum(1))

    @staticmethod
    def backward(ctx, grad_logp):
        alphas, e = ctx.saved_tensors
        g, c = ctx.g, ctx.c
        b, t_len = e.shape[0], e.shape[1]
        post = e.new_zeros(b, t_len, g.num_pdfs)
        beta = e.new_ones(b, g.num_states)
        beta = beta + c * (beta * g.init).sum(1, keepdim=True)
        for t in range(t_len - 1, -1, -1):
            w = g.prob * e[:, t, g.pdf] * beta[:, g.dst]
            arc = alphas[t][:, g.src] * w
            post[:, t].index_add_(1, g.pdf, arc / arc.sum(1, keepdim=True))
            nb = e.new_zeros(b, g.num_states).index_add_(1, g.src, w)
            nb = nb + c * (nb * g.init).sum(1, keepdim=True)
            beta = nb / nb.sum(1, keepdim=True)
        return post * grad_logp.view(b, 1, 1), None, None


def _time_den(fn, x: torch.Tensor, device: str):
    """(seconds of the second of two forward+backward runs, log-probs, gradient)."""
    for rep in range(2):  # the first is a warm-up
        x.grad = None
        if device != "cpu":
            torch.cuda.synchronize()
        t = time.time()
        lp = fn(x)
        lp.sum().backward()
        if device != "cpu":
            torch.cuda.synchronize()
        dt = time.time() - t
    return dt, lp.detach(), x.grad.clone()


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
    dt_den, lp, grad = _time_den(lambda o: den_log_prob(o, g, 0.1), x, device)
    dt_ref, lp_ref, grad_ref = _time_den(lambda o: _ArcGather.apply(o, g, 0.1), x, device)
    for what, sec in (("den_forward_backward", dt_den),
                      ("den_forward_backward_arc_gather", dt_ref)):
        print(json.dumps({"what": what, "device": device, "batch": batch,
                          "frames_per_seq": frames, "frames_per_s": round(batch * frames / sec, 1),
                          "threads": torch.get_num_threads()}), flush=True)
    print(json.dumps({"what": "den_speedup", "ratio": round(dt_ref / dt_den, 2),
                      "max_logprob_diff": float((lp - lp_ref).abs().max()),
                      "max_grad_diff": float((grad - grad_ref).abs().max())}), flush=True)
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
    print(json.dumps({"what": "den_vs_blstm", "den_over_blstm_output_frames_per_s":
                      round(dt / dt_den, 2), "arc_gather_over_blstm": round(dt / dt_ref, 2)}),
          flush=True)
    from hybridasr.models.factory import build_model
    tdnnf = build_model({"model": "tdnnf"}, 40, tm.num_pdfs).to(device).train()
    for rep in range(2):
        if device != "cpu":
            torch.cuda.synchronize()
        t = time.time()
        chain, xent = tdnnf(feats, return_xent=True)
        (chain.sum() + xent.sum()).backward()
        if device != "cpu":
            torch.cuda.synchronize()
        dt_tdnnf = time.time() - t
    print(json.dumps({"what": "tdnnf_forward_backward", "device": device, "batch": batch,
                      "config": "conf/model/tdnnf.conf defaults", "output_frames_per_s":
                      round(batch * frames / dt_tdnnf, 1),
                      "den_over_tdnnf": round(dt_tdnnf / dt_den, 2)}), flush=True)


if __name__ == "__main__":
    main()
