"""LF-MMI: den and num forward-backward against brute-force path enumeration on small real
graphs cut from kaldi_digits (a phone LM over its 3 most frequent phones), leaky HMM, the
objective's gradient against finite differences, the xent regulariser."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from chain_helpers import (CHAIN_TOPO, brute_force_den, brute_force_num, digits_phone_seqs,
                           restrict)
from hybridasr.chain.den_forward_backward import DenGraph, den_log_prob
from hybridasr.chain.den_graph import initial_probs, make_den_fst
from hybridasr.chain.num_forward_backward import NumGraphs, alignment_graph, num_log_prob
from hybridasr.chain.objective import ChainObjectiveOptions, chain_loss, num_posteriors
from hybridasr.chain.phone_lm import estimate_phone_lm
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.tree.model import build_transition_model, monophone_tree, read_topology


@pytest.fixture(scope="module")
def small(kaldi_digits, tmp_path_factory):
    seqs = digits_phone_seqs(kaldi_digits)
    top3 = [p for p, _ in Counter(p for s in seqs for p in s).most_common(3)]
    lm = estimate_phone_lm(restrict(seqs, top3))
    tree = read_tree(str(kaldi_digits / "exp/mono/tree"))
    tm = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    den = make_den_fst(tree, tm, lm)
    d = tmp_path_factory.mktemp("topo")
    (d / "topo").write_text(CHAIN_TOPO.format(phones=" ".join(map(str, range(1, 91)))))
    topo = read_topology(str(d / "topo"))
    ctree = monophone_tree(topo)
    ctm = build_transition_model(ctree, topo)
    cden = make_den_fst(ctree, ctm, lm)
    return {"den": den, "pdfs": tm.num_pdfs, "cden": cden, "cpdfs": ctm.num_pdfs}


def _graph(den, pdfs):
    init = initial_probs(den).astype(np.float64)
    return DenGraph.from_fst(den, pdfs, init, dtype=torch.float64), init


@pytest.mark.parametrize("t_len", [1, 4])
def test_den_log_prob_equals_brute_force_sum_over_paths(small, t_len):
    g, init = _graph(small["den"], small["pdfs"])
    assert 10 <= g.num_states <= 40  # small enough to enumerate, real HMMs with branching
    rng = np.random.default_rng(t_len)
    out = rng.normal(scale=2.0, size=(2, t_len, small["pdfs"]))
    got = den_log_prob(torch.tensor(out), g, leaky_hmm_coefficient=0.0)
    for b in range(2):
        assert float(got[b]) == pytest.approx(brute_force_den(small["den"], init, out[b]),
                                              abs=1e-9)


@pytest.mark.parametrize("leaky", [0.0, 0.1, 0.5])
def test_leaky_den_log_prob_equals_brute_force_of_the_leaky_model(small, leaky):
    g, init = _graph(small["cden"], small["cpdfs"])  # the chain topology's den graph
    rng = np.random.default_rng(7)
    out = rng.normal(size=(1, 3, small["cpdfs"]))
    want = brute_force_den(small["cden"], init, out[0], leaky)
    got = float(den_log_prob(torch.tensor(out), g, leaky_hmm_coefficient=leaky)[0])
    assert got == pytest.approx(want, abs=1e-9)
    if leaky:  # the leak changes the value: the test sees it
        assert abs(want - brute_force_den(small["cden"], init, out[0], 0.0)) > 1e-3


def test_den_is_invariant_to_large_outputs_and_float32(small):
    g, _ = _graph(small["den"], small["pdfs"])
    rng = np.random.default_rng(3)
    out = torch.tensor(rng.normal(size=(3, 6, small["pdfs"])))
    ref = den_log_prob(out, g)
    shifted = den_log_prob(out + 25.0, g)  # per-frame shift: log-prob moves by T * 25
    assert torch.allclose(shifted, ref + 6 * 25.0, atol=1e-9)
    f32 = den_log_prob(out.float(), DenGraph.from_fst(small["den"], small["pdfs"]))
    assert torch.allclose(f32.double(), ref, atol=1e-4)


def test_num_log_prob_equals_brute_force_on_a_branching_graph_and_an_alignment(small):
    den = small["den"]  # as a numerator: a real graph with branches, a start and finals
    rng = np.random.default_rng(11)
    t_len = 5
    out = rng.normal(size=(2, t_len, small["pdfs"]))
    want = brute_force_num(den, out[0])
    assert np.isfinite(want)
    ali = rng.integers(0, small["pdfs"], size=t_len)
    graphs = NumGraphs.from_fsts([den, alignment_graph(ali)], small["pdfs"],
                                 dtype=torch.float64)
    got = num_log_prob(torch.tensor(out), graphs)
    assert float(got[0]) == pytest.approx(want, abs=1e-9)
    assert float(got[1]) == pytest.approx(out[1][np.arange(t_len), ali].sum(), abs=1e-9)
    post = num_posteriors(torch.tensor(out), graphs)
    assert torch.allclose(post.sum(2), torch.ones(2, t_len, dtype=torch.float64))
    assert torch.all(post[1][torch.arange(t_len), torch.as_tensor(ali)] > 1 - 1e-9)


def test_chain_loss_gradient_matches_finite_differences(small):
    g, _ = _graph(small["cden"], small["cpdfs"])
    p = small["cpdfs"]
    rng = np.random.default_rng(5)
    t_len = 4
    # numerators: the den graph's own paths (with finals) and one alignment of its pdfs
    used = np.unique(small["cden"].ilabel) - 1
    num = NumGraphs.from_fsts([small["cden"], alignment_graph(rng.choice(used, t_len))], p,
                              dtype=torch.float64)
    opts = ChainObjectiveOptions(leaky_hmm_coefficient=0.1, xent_regularize=0.1,
                                 l2_regularize=0.01)
    out = torch.tensor(rng.normal(size=(2, t_len, p)), requires_grad=True)
    xent = torch.tensor(rng.normal(size=(2, t_len, p)), requires_grad=True)
    # the chain output (den leaky, num, l2); the xent term treats the numerator posteriors
    # as constants (as Kaldi), so its finite differences are checked on the xent output only
    no_xent = ChainObjectiveOptions(0.1, 0.0, 0.01)
    assert torch.autograd.gradcheck(lambda o: chain_loss(o, g, num, None, no_xent).loss,
                                    (out,), eps=1e-6, atol=1e-6, fast_mode=True)
    assert torch.autograd.gradcheck(lambda x: chain_loss(out.detach(), g, num, x, opts).loss,
                                    (xent,), eps=1e-6, atol=1e-6, fast_mode=True)
    # Kaldi's derivative: num posteriors - den posteriors - l2 * output
    res = chain_loss(out, g, num, None, ChainObjectiveOptions(0.1, 0.0, 0.01))
    (grad,) = torch.autograd.grad(-res.loss, out)
    den_post = torch.autograd.grad(den_log_prob(out, g, 0.1).sum(), out)[0]
    want = num_posteriors(out, num) - den_post - 0.01 * out
    assert torch.allclose(grad, want, atol=1e-10)
    assert torch.allclose(den_post.sum(2), torch.ones(2, t_len, dtype=torch.float64))
    assert res.objf == pytest.approx(float((res.num_logprob - res.den_logprob).sum()) / 8)


def test_xent_regulariser_trains_the_second_output_towards_num_posteriors(small):
    g, _ = _graph(small["cden"], small["cpdfs"])
    p = small["cpdfs"]
    rng = np.random.default_rng(9)
    ali = rng.choice(np.unique(small["cden"].ilabel) - 1, 3)
    num = NumGraphs.from_fsts([alignment_graph(ali)], p, dtype=torch.float64)
    out = torch.tensor(rng.normal(size=(1, 3, p)), requires_grad=True)
    xent = torch.zeros(1, 3, p, dtype=torch.float64, requires_grad=True)
    res = chain_loss(out, g, num, xent, ChainObjectiveOptions(0.1, 0.1, 0.0))
    gx, go = torch.autograd.grad(res.loss, (xent, out))
    # d loss / d xent = -0.1 * (targets - softmax(xent)); uniform softmax here
    want = -0.1 * (torch.nn.functional.one_hot(torch.as_tensor(ali), p).double() - 1.0 / p)
    assert torch.allclose(gx[0], want, atol=1e-12)
    res0 = chain_loss(out, g, num, None, ChainObjectiveOptions(0.1, 0.1, 0.0))
    assert torch.allclose(torch.autograd.grad(res0.loss, out)[0], go)  # xent: no grad to out
    assert res.xent_objf == pytest.approx(np.log(1.0 / p))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_den_log_prob_on_cuda_matches_cpu(small):
    g, _ = _graph(small["den"], small["pdfs"])
    out = torch.tensor(np.random.default_rng(1).normal(size=(4, 20, small["pdfs"])))
    cpu = den_log_prob(out, g)
    cuda = den_log_prob(out.cuda(), g.to("cuda"))
    assert torch.allclose(cuda.cpu(), cpu, atol=1e-9)


def _padded(rng, lengths, pdfs):
    """(B, max(lengths), pdfs) outputs, NaN past each sequence's length (never to be read)."""
    out = rng.normal(size=(len(lengths), max(lengths), pdfs))
    for b, n in enumerate(lengths):
        out[b, n:] = np.nan
    return out


def test_num_of_a_padded_batch_equals_each_sequence_alone(small):
    p, rng = small["pdfs"], np.random.default_rng(13)
    lengths = [3, 5, 2]
    fsts = [alignment_graph(rng.integers(0, p, size=3)), small["den"],  # branching, finals
            alignment_graph(rng.integers(0, p, size=2))]
    out = _padded(rng, lengths, p)
    for dtype, tol in ((torch.float64, 1e-9), (torch.float32, 1e-5)):
        x = torch.tensor(out, dtype=dtype, requires_grad=True)
        lp = num_log_prob(x, NumGraphs.from_fsts(fsts, p, dtype=dtype), torch.tensor(lengths))
        (grad,) = torch.autograd.grad(lp.sum(), x)
        for b, n in enumerate(lengths):
            xb = torch.tensor(out[b:b + 1, :n], dtype=dtype, requires_grad=True)
            alone = num_log_prob(xb, NumGraphs.from_fsts([fsts[b]], p, dtype=dtype))
            (gb,) = torch.autograd.grad(alone.sum(), xb)
            assert np.isfinite(float(alone.detach()))
            assert float(lp[b].detach()) == pytest.approx(float(alone.detach()), abs=tol,
                                                          rel=tol)
            assert torch.allclose(grad[b, :n], gb[0], atol=tol, rtol=0)
            assert torch.equal(grad[b, n:], torch.zeros_like(grad[b, n:]))
    assert float(lp[1].detach()) == pytest.approx(brute_force_num(small["den"], out[1]),
                                                  abs=1e-4)


def test_chain_loss_of_a_padded_batch_equals_each_sequence_alone(small):
    g, _ = _graph(small["cden"], small["cpdfs"])
    p, rng = small["cpdfs"], np.random.default_rng(14)
    used = np.unique(small["cden"].ilabel) - 1
    lengths = [4, 6, 2]
    fsts = [small["cden"], alignment_graph(rng.choice(used, 6)),
            alignment_graph(rng.choice(used, 2))]
    out, xent = _padded(rng, lengths, p), _padded(rng, lengths, p)
    weights = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    opts = ChainObjectiveOptions(0.1, 0.1, 0.01)
    x, xe = (torch.tensor(a, requires_grad=True) for a in (out, xent))
    res = chain_loss(x, g, NumGraphs.from_fsts(fsts, p, dtype=torch.float64), xe, opts,
                     weights, lengths=torch.tensor(lengths))
    gx, gxe = torch.autograd.grad(res.loss, (x, xe))
    assert res.frames == 12
    want = {"loss": 0.0, "objf": 0.0, "xent_objf": 0.0, "l2_term": 0.0}
    for b, n in enumerate(lengths):
        xb, xeb = (torch.tensor(a[b:b + 1, :n], requires_grad=True) for a in (out, xent))
        r = chain_loss(xb, g, NumGraphs.from_fsts([fsts[b]], p, dtype=torch.float64), xeb,
                       opts, weights[b:b + 1])
        gb, geb = torch.autograd.grad(r.loss, (xb, xeb))
        assert r.frames == n
        want["loss"] += float(r.loss.detach())
        for k in ("objf", "xent_objf", "l2_term"):
            want[k] += getattr(r, k) * n
        assert float(res.num_logprob[b]) == pytest.approx(float(r.num_logprob[0]), abs=1e-9)
        assert float(res.den_logprob[b]) == pytest.approx(float(r.den_logprob[0]), abs=1e-9)
        assert torch.allclose(gx[b, :n], gb[0], atol=1e-9, rtol=0)
        assert torch.allclose(gxe[b, :n], geb[0], atol=1e-9, rtol=0)
        for grad in (gx, gxe):  # the padding: exactly zero
            assert torch.equal(grad[b, n:], torch.zeros_like(grad[b, n:]))
    assert float(res.loss.detach()) == pytest.approx(want["loss"], abs=1e-9)
    for k in ("objf", "xent_objf", "l2_term"):
        assert getattr(res, k) * 12 == pytest.approx(want[k], abs=1e-9)
    assert want["l2_term"] < 0 and want["xent_objf"] < 0  # both terms are in the figures
