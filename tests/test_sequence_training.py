"""Sequence-discriminative training: the lattice forward-backward and the sMBR and
MMI gradients against brute-force enumeration of every path of real lattices (real GMM
log-likelihoods of kaldi_digits and kaldi_polish test utterances decoded on their graphs by
the toolkit's lattice decoder), and against finite differences of the objectives."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hybridasr.data.batch import Batch
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
from hybridasr.errors import ConfigError
from hybridasr.errors import FormatError
from hybridasr.graph.lattice_forward_backward import (LatticeBatch, forward_backward,
                                                      frame_lattice, lattice_to_post,
                                                      path_enumeration)
from hybridasr.kaldi.lattice import CompactLattice, CompactLatticeWriter

sys.path.insert(0, str(Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

ACWT = 0.1


@pytest.fixture(scope="module")
def lattices(kaldi_digits, kaldi_polish):
    """[(transition model, utt, loglikes, CompactLattice)] of small real lattices: digits'
    two shortest test utterances (state-level: thousands of paths, where the determinized
    lattice has one) and polish's shortest (determinized, 485 frames, hundreds of paths)."""
    out = []
    for kdir, model, gdir, n, lbeam, det in (
            (kaldi_digits, "exp/mono_ali/final.mdl", "exp/mono/graph", 2, 8.0, False),
            (kaldi_polish, "exp/tri1/35.mdl", "exp/tri1/graph", 1, 4.0, True)):
        tm, lls = gmm_loglikes(kdir, model, n)
        graph = load_graph_dir(str(kdir / gdir))
        dec = LatticeDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                             LatgenOptions(beam=13, lattice_beam=lbeam,
                                           determinize_lattice=det), graph.max_ilabel,
                             fst_path=graph.path)
        for utt, ll in lls.items():
            r = dec.decode(ll, ACWT, utt)
            assert r.ok and r.reached_final
            out.append((tm, utt, ll, r.lattice))
    return out


def _scores(tm, ll, fl):
    return ACWT * ll[fl.time, tm.tid2pdf[fl.tid]] - fl.graph


def _reference(tm, ll, fl):
    """A numerator alignment in pdfs: the frame-wise best pdf among the lattice's."""
    pdfs = tm.tid2pdf[fl.tid]
    ref = np.zeros(fl.num_frames, dtype=np.int64)
    for t in range(fl.num_frames):
        cand = np.unique(pdfs[fl.time == t])
        ref[t] = cand[np.argmax(ll[t, cand])] if t % 3 else cand[0]
    return ref


def test_frame_lattice_keeps_the_paths(lattices):
    for tm, utt, ll, lat in lattices:
        fl = frame_lattice(lat, utt)
        assert fl.num_frames == ll.shape[0]
        assert np.all(fl.tid > 0)
        # the best path of the frame lattice has the lattice's best cost (graph + acoustic)
        sc = -(fl.graph + lat_acoustic(fl, tm, ll))
        paths = path_enumeration(fl, sc, limit=500000)
        best = max(p[1] for p in paths)
        from hybridasr.decode.lattice_best_path import best_paths
        bp = best_paths(lat, [1.0], [1.0], [0.0])[0]
        assert best == pytest.approx(-(bp.graph_cost + bp.acoustic_cost), abs=1e-3)


def lat_acoustic(fl, tm, ll):
    return -ll[fl.time, tm.tid2pdf[fl.tid]]


def test_forward_backward_against_enumeration(lattices):
    fls = [frame_lattice(lat, utt) for _, utt, _, lat in lattices]
    scores = [_scores(tm, ll, fl) for (tm, _, ll, _), fl in zip(lattices, fls)]
    accs = []
    for (tm, _, ll, _), fl in zip(lattices, fls):
        ref = _reference(tm, ll, fl)
        accs.append((tm.tid2pdf[fl.tid] == ref[fl.time]).astype(np.float64))
    batch = LatticeBatch.of(fls)
    r = forward_backward(batch, np.concatenate(scores), np.concatenate(accs))
    off = 0
    for b, (fl, sc, acc) in enumerate(zip(fls, scores, accs)):
        paths = path_enumeration(fl, sc, acc, limit=500000)
        assert len(paths) > 3
        likes = np.array([p[1] for p in paths])
        logz = np.logaddexp.reduce(likes)
        assert r.logz[b] == pytest.approx(logz, abs=1e-8)
        prob = np.exp(likes - logz)
        expected = float(sum(p * a for p, (_, _, a) in zip(prob, paths)))
        assert r.expected_accuracy[b] == pytest.approx(expected, abs=1e-8)
        post = np.zeros(fl.num_arcs)
        smbr = np.zeros(fl.num_arcs)
        for p, (arcs, _, a) in zip(prob, paths):
            post[arcs] += p
            smbr[arcs] += p * (a - expected)
        n = fl.num_arcs
        np.testing.assert_allclose(r.posterior[off:off + n], post, atol=1e-9)
        np.testing.assert_allclose(r.smbr_posterior[off:off + n], smbr, atol=1e-6)
        # occupancies sum to one per frame; sMBR posteriors to zero
        occ = np.bincount(fl.time, weights=post, minlength=fl.num_frames)
        np.testing.assert_allclose(occ, 1.0, atol=1e-9)
        np.testing.assert_allclose(
            np.bincount(fl.time, weights=r.smbr_posterior[off:off + n]), 0.0, atol=1e-6)
        off += n


def test_lattice_to_post_against_enumeration(lattices):
    """Kaldi's lattice-to-post: each (frame, transition-id)'s posterior is the probability of
    the paths through it, the lattice's graph costs at scale 1 and the acoustic ones scaled."""
    for tm, utt, ll, lat in lattices:
        frames, tids, post = lattice_to_post(lat, ll, tm.tid2pdf, ACWT, utt)
        fl = frame_lattice(lat, utt)
        sc = ACWT * ll.astype(np.float64)[fl.time, tm.tid2pdf[fl.tid]] - fl.graph
        paths = path_enumeration(fl, sc, limit=500000)
        likes = np.array([p[1] for p in paths])
        prob = np.exp(likes - np.logaddexp.reduce(likes))
        want = {}
        for p, (arcs, _, _) in zip(prob, paths):
            for a in arcs:
                key = (int(fl.time[a]), int(fl.tid[a]))
                want[key] = want.get(key, 0.0) + p
        got = dict(zip(zip(frames.tolist(), tids.tolist()), post.tolist()))
        assert set(got) == {k for k, v in want.items() if v > 0}
        for k, v in got.items():
            assert v == pytest.approx(want[k], abs=1e-9)
        np.testing.assert_allclose(np.bincount(frames, weights=post), 1.0, atol=1e-9)
        assert len(set(frames.tolist())) == ll.shape[0] and len(frames) > ll.shape[0]
    with pytest.raises(FormatError, match=r"toy: .* frames, its log-likelihoods"):
        lattice_to_post(lat, ll[:-1], tm.tid2pdf, ACWT, "toy")


def test_epsilon_word_arcs_and_final_strings():
    """A lattice with an empty-string word arc and a final weight with transition-ids: the
    frame lattice has the same paths and weights (log semiring)."""
    from hybridasr.kaldi.lattice import Arc

    lat = CompactLattice()
    for _ in range(4):
        lat.add_state()
    lat.start = 0
    lat.arcs[0].append(Arc(5, 1.0, 0.0, (1, 2), 1))
    lat.arcs[0].append(Arc(6, 2.0, 0.0, (3,), 2))
    lat.arcs[1].append(Arc(7, 0.5, 0.0, (), 3))        # no frames
    lat.arcs[2].append(Arc(8, 0.25, 0.0, (4,), 3))
    lat.finals[3] = (0.125, 0.0, (5,))                  # one more frame in the final weight
    fl = frame_lattice(lat, "toy")
    assert fl.num_frames == 3
    paths = path_enumeration(fl, -fl.graph)
    got = sorted((tuple(int(fl.tid[i]) for i in arcs), round(-like, 6)) for arcs, like, _ in paths)
    assert got == [((1, 2, 5), 1.625), ((3, 4, 5), 2.375)]


def _objective(tmp_path, tm_path, lattices, criterion, **extra):
    from hybridasr.train.objectives import ObjectiveOptions
    from hybridasr.train.sequence import SequenceObjective

    tm, _, _, _ = lattices[0]
    den = tmp_path / "denlats"
    den.mkdir(exist_ok=True)
    with CompactLatticeWriter(f"ark:|gzip -c > {den}/lat.1.gz") as w:
        for tmx, utt, _, lat in lattices:
            w.write(utt, lat)
    opts = ObjectiveOptions(objective=criterion, seq_denlats=str(den),
                            seq_transition_model=str(tm_path), seq_acwt=ACWT, **extra)
    keys = [u for _, u, _, _ in lattices]
    lengths = {u: ll.shape[0] for _, u, ll, _ in lattices}
    return SequenceObjective(opts, keys, lengths, tm.num_pdfs)


def _batch(lattices, refs):
    T = max(ll.shape[0] for _, _, ll, _ in lattices)
    tg = torch.full((len(lattices), T), -100, dtype=torch.long)
    for i, (_, _, ll, _) in enumerate(lattices):
        tg[i, :ll.shape[0]] = torch.as_tensor(refs[i])
    lengths = torch.tensor([ll.shape[0] for _, _, ll, _ in lattices])
    return Batch(torch.zeros(len(lattices), T, 1), tg, lengths,
                 [u for _, u, _, _ in lattices])


@pytest.mark.parametrize("criterion", ["smbr", "mmi"])
def test_gradient_against_finite_differences(tmp_path, kaldi_digits, lattices, criterion):
    """The objective's gradient at the logits is Kaldi's nnet_diff: times the acoustic scale
    it is the derivative of the reported loss (expected frame errors; minus MMI)."""
    digits = [x for x in lattices if x[0].num_pdfs == lattices[0][0].num_pdfs][:2]
    tm = digits[0][0]
    obj = _objective(tmp_path, kaldi_digits / "exp/mono_ali/final.mdl", digits, criterion,
                     seq_drop_frames=False)
    refs = [_reference(tm, ll, frame_lattice(lat)) for tm, _, ll, lat in digits]
    batch = _batch(digits, refs)
    T = batch.targets.shape[1]
    gen = torch.Generator().manual_seed(0)
    logits = torch.zeros(len(digits), T, tm.num_pdfs, dtype=torch.float64)
    for i, (_, _, ll, _) in enumerate(digits):
        logits[i, :ll.shape[0]] = torch.as_tensor(ll, dtype=torch.float64)
    logits = logits + 0.1 * torch.randn(logits.shape, generator=gen, dtype=torch.float64)
    x = logits.clone().requires_grad_(True)
    loss, reported, errors, frames = obj(x, batch)
    loss.backward()
    assert frames == sum(ll.shape[0] for _, _, ll, _ in digits)
    grad = x.grad
    # rows of the gradient sum to zero (the softmax's normaliser has no effect)
    assert float(grad.sum(-1).abs().max()) < 1e-9
    # the frame/pdf pairs the lattices hold, where the gradient is largest
    flat = grad.abs().flatten()
    idx = torch.topk(flat, 6).indices.tolist()
    eps = 1e-4
    for k in idx:
        def f(delta):
            y = logits.clone().flatten()
            y[k] += delta
            return float(obj(y.view_as(logits), batch)[1])
        fd = (f(eps) - f(-eps)) / (2 * eps)
        assert fd == pytest.approx(ACWT * float(flat[k]) * math.copysign(1, float(grad.flatten()[k])),
                                   rel=1e-3, abs=1e-6)
    if criterion == "smbr":
        assert 0 < float(reported) < frames  # expected frame errors


def test_frame_smoothing_and_refusals(tmp_path, kaldi_digits, lattices):
    from hybridasr.data.config import DataConfig
    from hybridasr.train.objectives import ObjectiveOptions, check_objective

    digits = [x for x in lattices if x[0].num_pdfs == lattices[0][0].num_pdfs][:2]
    tm = digits[0][0]
    refs = [_reference(tm, ll, frame_lattice(lat)) for tm, _, ll, lat in digits]
    batch = _batch(digits, refs)
    T = batch.targets.shape[1]
    logits = torch.randn(len(digits), T, tm.num_pdfs, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(1))
    grads = {}
    for h in (0.0, 1.0):
        obj = _objective(tmp_path, kaldi_digits / "exp/mono_ali/final.mdl", digits, "smbr",
                         seq_frame_smoothing=h)
        x = logits.clone().requires_grad_(True)
        obj(x, batch)[0].backward()
        grads[h] = x.grad
    # H = 1: cross-entropy's gradient alone (softmax - onehot on the real frames)
    ce = torch.softmax(logits, -1)
    for i, r in enumerate(refs):
        ce[i, np.arange(len(r)), torch.as_tensor(r)] -= 1
        ce[i, len(r):] = 0
    torch.testing.assert_close(grads[1.0], ce)
    assert not torch.allclose(grads[0.0], ce)
    opts = ObjectiveOptions(objective="smbr", seq_denlats="exp/denlats")
    check_objective(opts, DataConfig(seq_ordering="laplace:4").strategy, False)
    for ordering, chunked, name in (("frame_shuffle", False, "frame_shuffle"),
                                    ("laplace:4", True, "--chunking")):
        with pytest.raises(ConfigError, match=name):
            check_objective(opts, DataConfig(seq_ordering=ordering).strategy, chunked)
    with pytest.raises(ConfigError, match="--seq-denlats"):
        check_objective(ObjectiveOptions(objective="mmi"),
                        DataConfig(seq_ordering="laplace:4").strategy, False)


def test_unusable_lattices_are_counted(tmp_path, kaldi_digits, lattices):
    """A lattice of another length and a missing one: left out, named, no gradient."""
    digits = [x for x in lattices if x[0].num_pdfs == lattices[0][0].num_pdfs][:2]
    tm = digits[0][0]
    from hybridasr.train.objectives import ObjectiveOptions
    from hybridasr.train.sequence import SequenceObjective

    den = tmp_path / "den2"
    den.mkdir()
    with CompactLatticeWriter(f"ark:|gzip -c > {den}/lat.1.gz") as w:
        w.write(digits[0][1], digits[0][3])
    opts = ObjectiveOptions(objective="smbr", seq_denlats=str(den),
                            seq_transition_model=str(kaldi_digits / "exp/mono_ali/final.mdl"))
    lengths = {digits[0][1]: digits[0][2].shape[0] + 1, digits[1][1]: digits[1][2].shape[0]}
    obj = SequenceObjective(opts, list(lengths), lengths, tm.num_pdfs)
    assert set(obj.skipped) == set(lengths)
    assert "frames" in obj.skipped[digits[0][1]] and "no lattice" in obj.skipped[digits[1][1]]
    refs = [_reference(tm, ll, frame_lattice(lat)) for tm, _, ll, lat in digits]
    batch = _batch(digits, refs)
    x = torch.zeros(2, batch.targets.shape[1], tm.num_pdfs, requires_grad=True)
    loss, reported, errors, frames = obj(x, batch)
    assert frames == 0 and float(reported) == 0.0
