"""The den forward-backward's two layouts of the sparse matmul per frame: the entries are the
states (every state entered with one pdf, as in kaldi_digits' HMM-topology den graph) or
(state, pdf) pairs (the chain topology's small den graph; relabelled, with a duplicate arc),
against brute-force path enumeration, with the leaky HMM; the posteriors against finite
differences; float32 against float64 on a whole real den graph (kaldi_digits' monophone tree
and alignments)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from chain_helpers import CHAIN_TOPO, brute_force_den, digits_phone_seqs, restrict
from hybridasr.chain.den_forward_backward import DenGraph, den_log_prob
from hybridasr.chain.den_graph import initial_probs, make_den_fst
from hybridasr.chain.phone_lm import estimate_phone_lm
from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.tree.model import build_transition_model, monophone_tree, read_topology


@pytest.fixture(scope="module")
def graphs(kaldi_digits, tmp_path_factory):
    seqs = digits_phone_seqs(kaldi_digits)
    top3 = [p for p, _ in Counter(p for s in seqs for p in s).most_common(3)]
    d = tmp_path_factory.mktemp("topo")
    (d / "topo").write_text(CHAIN_TOPO.format(phones=" ".join(map(str, range(1, 91)))))
    topo = read_topology(str(d / "topo"))
    tree = monophone_tree(topo)
    tm = build_transition_model(tree, topo)
    small = make_den_fst(tree, tm, estimate_phone_lm(restrict(seqs, top3)))
    full = make_den_fst(read_tree(str(kaldi_digits / "exp/mono/tree")),
                        read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl")),
                        estimate_phone_lm(seqs))
    return {"small": small, "pdfs": tm.num_pdfs, "full": full,
            "full_pdfs": read_transition_model(
                str(kaldi_digits / "exp/mono_ali/final.mdl")).num_pdfs}


def _relabelled(den: FstArrays, seed: int) -> FstArrays:
    """``den`` with every other arc's pdf replaced by another of its pdfs (so more states
    are entered with several pdfs) and its first arc doubled (a duplicate to be summed)."""
    rng = np.random.default_rng(seed)
    used = np.unique(den.ilabel)
    ilabel = den.ilabel.copy()
    ilabel[1::2] = rng.choice(used, len(ilabel[1::2]))
    dup = lambda a: np.concatenate([a[:1], a])  # noqa: E731 (src stays non-decreasing)
    return FstArrays(den.start, den.final, dup(den.src), dup(ilabel), dup(ilabel),
                     dup(den.weight), dup(den.dst))


def _g(den, pdfs, dtype=torch.float64):
    init = initial_probs(den).astype(np.float64)
    return DenGraph.from_fst(den, pdfs, init, dtype=dtype), init


def test_entries_are_the_states_or_the_state_pdf_pairs(graphs):
    # kaldi_digits' HMM topology: each state of its den graph is entered with one pdf
    den = graphs["full"]
    g, _ = _g(den, graphs["full_pdfs"])
    assert g.entries_are_states and len(g.entry_pdf) == den.num_states
    assert np.array_equal(g.entry_pdf.numpy()[den.dst], den.ilabel - 1)
    assert g.w.shape == (den.num_states, den.num_states)
    assert g.w._nnz() == len(set(zip(den.dst.tolist(), den.src.tolist())))
    # the chain topology's: minimisation merged states entered with different pdfs
    den = graphs["small"]
    g, _ = _g(den, graphs["pdfs"])
    pairs = sorted(set(zip(den.dst.tolist(), (den.ilabel - 1).tolist())))
    assert not g.entries_are_states and len(pairs) > len(set(den.dst.tolist()))
    assert list(zip(g.entry_dst.tolist(), g.entry_pdf.tolist())) == pairs
    assert g.w.shape == (len(pairs), den.num_states) and g.w_t.shape == (den.num_states,
                                                                         len(pairs))


@pytest.mark.parametrize("leaky", [0.0, 0.1])
def test_states_entered_with_several_pdfs_equal_brute_force(graphs, leaky):
    den = _relabelled(graphs["small"], 4)
    g, init = _g(den, graphs["pdfs"])
    assert not g.entries_are_states  # the (state, pdf) entries are used
    assert len(g.entry_dst) > len(np.unique(den.dst))
    rng = np.random.default_rng(8)
    out = rng.normal(size=(2, 3, graphs["pdfs"]))
    got = den_log_prob(torch.tensor(out), g, leaky_hmm_coefficient=leaky)
    for b in range(2):
        assert float(got[b]) == pytest.approx(brute_force_den(den, init, out[b], leaky),
                                              abs=1e-9)


@pytest.mark.parametrize("relabel", [False, True])
def test_den_posteriors_match_finite_differences(graphs, relabel):
    den = _relabelled(graphs["small"], 5) if relabel else graphs["small"]
    g, _ = _g(den, graphs["pdfs"])
    out = torch.tensor(np.random.default_rng(2).normal(size=(2, 4, graphs["pdfs"])),
                       requires_grad=True)
    assert torch.autograd.gradcheck(lambda o: den_log_prob(o, g, 0.1), (out,), eps=1e-6,
                                    atol=1e-6, fast_mode=True)
    post = torch.autograd.grad(den_log_prob(out, g, 0.1).sum(), out)[0]
    assert torch.allclose(post.sum(2), torch.ones(2, 4, dtype=torch.float64))
    assert float(post.min()) >= 0.0


def test_float32_matches_float64_on_a_whole_real_den_graph(graphs):
    den, pdfs = graphs["full"], graphs["full_pdfs"]
    g64, _ = _g(den, pdfs)
    out = torch.tensor(np.random.default_rng(3).normal(scale=3.0, size=(3, 30, pdfs)),
                       requires_grad=True)
    lp64 = den_log_prob(out, g64)
    post64 = torch.autograd.grad(lp64.sum(), out)[0]
    g32 = DenGraph.from_fst(den, pdfs)  # float32, as the trainer's
    out32 = out.detach().float().requires_grad_(True)
    lp32 = den_log_prob(out32, g32)
    post32 = torch.autograd.grad(lp32.sum(), out32)[0]
    assert lp32.dtype == torch.float32 and post32.dtype == torch.float32
    assert torch.allclose(lp32.double(), lp64.detach(), rtol=1e-5, atol=1e-3)
    assert torch.allclose(post32.double(), post64, atol=1e-4)
    # a float64 graph given float32 outputs computes in float32 (converted once, then kept)
    lp_conv = den_log_prob(out32.detach(), g64)
    assert lp_conv.dtype == torch.float32 and torch.allclose(lp_conv, lp32.detach())
    assert den_log_prob(out32.detach(), g64) is not None and len(g64._converted) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_both_entry_layouts_on_cuda_match_cpu(graphs):
    for den in (graphs["small"], _relabelled(graphs["small"], 6)):
        g, _ = _g(den, graphs["pdfs"])
        out = torch.tensor(np.random.default_rng(1).normal(size=(4, 20, graphs["pdfs"])),
                           requires_grad=True)
        cpu = den_log_prob(out, g, 0.1)
        post = torch.autograd.grad(cpu.sum(), out)[0]
        oc = out.detach().cuda().requires_grad_(True)
        cuda = den_log_prob(oc, g.to("cuda"), 0.1)
        post_c = torch.autograd.grad(cuda.sum(), oc)[0]
        assert torch.allclose(cuda.cpu(), cpu, atol=1e-9)
        assert torch.allclose(post_c.cpu(), post, atol=1e-9)


def _padded(rng, lengths, pdfs, pad=float("nan")):
    """Outputs (B, max(lengths), pdfs) whose frames past each sequence's length are ``pad``
    (NaN: any read of them would show)."""
    out = rng.normal(scale=2.0, size=(len(lengths), max(lengths), pdfs))
    for b, n in enumerate(lengths):
        out[b, n:] = pad
    return out


@pytest.mark.parametrize("which", ["small", "full"])  # (state, pdf) entries; entries = states
@pytest.mark.parametrize("leaky", [0.0, 0.1])
def test_a_padded_batch_equals_each_sequence_alone(graphs, which, leaky):
    pdfs = graphs["pdfs" if which == "small" else "full_pdfs"]
    lengths = [4, 7, 2]
    out = _padded(np.random.default_rng(12), lengths, pdfs)
    for dtype, tol in ((torch.float64, 1e-9), (torch.float32, 1e-5)):
        g = DenGraph.from_fst(graphs[which], pdfs, dtype=dtype)
        x = torch.tensor(out, dtype=dtype, requires_grad=True)
        lp = den_log_prob(x, g, leaky, lengths=torch.tensor(lengths))
        scale = [1.0, 2.0, -0.5]  # each sequence's own gradient, scaled
        (grad,) = torch.autograd.grad((lp * torch.tensor(scale, dtype=dtype)).sum(), x)
        for b, n in enumerate(lengths):
            xb = torch.tensor(out[b:b + 1, :n], dtype=dtype, requires_grad=True)
            alone = den_log_prob(xb, g, leaky)
            (gb,) = torch.autograd.grad(alone.sum(), xb)
            assert float(lp[b].detach()) == pytest.approx(float(alone.detach()), abs=tol,
                                                          rel=tol)
            assert torch.allclose(grad[b, :n], scale[b] * gb[0], atol=tol, rtol=0)
            assert torch.equal(grad[b, n:], torch.zeros_like(grad[b, n:]))  # exactly zero
        assert torch.isfinite(lp).all()
    # lengths of all T: as without lengths
    g, _ = _g(graphs[which], pdfs)
    full = torch.tensor(out[:, :2])
    assert torch.equal(den_log_prob(full, g, leaky, lengths=[2, 2, 2]),
                       den_log_prob(full, g, leaky))


def test_lengths_out_of_range_are_an_error(graphs):
    g, _ = _g(graphs["small"], graphs["pdfs"])
    out = torch.zeros(2, 3, graphs["pdfs"], dtype=torch.float64)
    for bad in ([3, 4], [0, 3], [3]):
        with pytest.raises(FormatError, match="lengths"):
            den_log_prob(out, g, 0.1, lengths=bad)
