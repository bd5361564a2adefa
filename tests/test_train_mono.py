"""The monophone GMM (steps/train_mono.sh: hybridasr.gmm.diag_gmm, train_mono_gmm) and the
equal alignment's edge silences: the GMM's statistics and updates against their closed form,
the model file read back, and Kaldi's own monophone alignment of kaldi_digits as reference."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.gmm.diag_gmm import DiagGmmSet, split_targets, write_gmm_model
from hybridasr.align.equal_align import (EqualAlignOptions, align_equal_compiled,
                                         silence_transition_ids)
from hybridasr.gmm.train_mono import update_transitions
from hybridasr.kaldi.gmm_model import read_gmm_model
from hybridasr.kaldi.transition_model import read_transition_model


def _two_pdf_set(rng):
    gmms = DiagGmmSet.init_global(2, np.zeros(3), np.ones(3))
    x = np.concatenate([rng.normal(1.0, 2.0, (400, 3)), rng.normal(-2.0, 0.5, (300, 3))])
    pdfs = np.array([0] * 400 + [1] * 300)
    return gmms, x, pdfs


def test_one_gaussian_a_pdf_is_the_sample_mean_and_variance():
    rng = np.random.default_rng(0)
    gmms, x, pdfs = _two_pdf_set(rng)
    stats = gmms.new_stats()
    gmms.accumulate(gmms.to_am(), x, pdfs, stats)
    assert stats.frames == 700 and stats.pdf_occupancy().tolist() == [400.0, 300.0]
    gmms.update(stats)
    for p, rows in ((0, x[:400]), (1, x[400:])):
        assert np.allclose(gmms.means[p][0], rows.mean(0))
        assert np.allclose(gmms.variances[p][0], rows.var(0))
        assert gmms.weights[p].tolist() == [1.0]
    # the log-likelihood is the Gaussian's: numpy's closed form at the estimate
    am = gmms.to_am()
    ll = am.log_likelihoods(x[:5])[:, 0]
    m, v = gmms.means[0][0], gmms.variances[0][0]
    want = (-0.5 * (np.log(2 * np.pi * v) + (x[:5] - m) ** 2 / v)).sum(1)
    assert np.allclose(ll, want, atol=1e-4)


def test_mixing_up_splits_by_occupancy_and_keeps_the_weights_summing_to_one():
    assert split_targets(np.array([1000.0, 10.0, 0.0]), 8, power=1.0, min_count=20.0) \
        == [6, 1, 1]  # the 10-frame pdf cannot keep 20 frames a Gaussian; the empty one none
    assert sum(split_targets(np.array([500.0, 400.0]), 6, 0.25, 20.0)) == 6
    rng = np.random.default_rng(1)
    gmms, x, pdfs = _two_pdf_set(rng)
    for it in range(4):
        stats = gmms.new_stats()
        gmms.accumulate(gmms.to_am(), x, pdfs, stats)
        before = stats.log_like
        gmms.update(stats)
        gmms.split_by_count(stats.pdf_occupancy(), 2 + 2 * it, rng, power=0.25, min_count=20)
        if it:
            assert stats.log_like >= before - 1e-6
    assert gmms.num_gauss() == 8
    for w in gmms.weights:
        assert abs(w.sum() - 1.0) < 1e-9 and (w > 0).all()
    # a Gaussian with too few frames keeps its parameters and goes, never a pdf's last
    stats = gmms.new_stats()
    gmms.accumulate(gmms.to_am(), x[:3], pdfs[:3], stats)
    removed = gmms.update(stats, min_gaussian_occupancy=10.0)
    assert removed >= 1 and len(gmms.weights[0]) >= 1 and len(gmms.weights[1]) >= 1


def test_the_model_file_reads_back_as_kaldis(tmp_path, kaldi_digits):
    tm = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    rng = np.random.default_rng(2)
    dim = 39
    gmms = DiagGmmSet.init_global(tm.num_pdfs, rng.normal(size=dim), 1.0 + rng.random(dim))
    gmms.split_by_count(np.full(tm.num_pdfs, 100.0), 3 * tm.num_pdfs, rng)
    write_gmm_model(tm, gmms, str(tmp_path / "final.mdl"))
    tm2, am = read_gmm_model(str(tmp_path / "final.mdl"))
    assert am.num_pdfs == tm.num_pdfs and am.dim == dim
    assert np.array_equal(tm2.log_probs, tm.log_probs) and np.array_equal(tm2.tuples, tm.tuples)
    x = rng.normal(size=(20, dim))
    assert np.allclose(am.log_likelihoods(x), gmms.to_am().log_likelihoods(x), atol=1e-3)


def test_transition_update_is_kaldis_mle_with_its_floor(kaldi_digits):
    tm = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    counts = np.zeros(tm.num_transition_ids + 1)
    s = next(s for s in range(1, tm.num_transition_states + 1)
             if tm.state2id[s + 1] - tm.state2id[s] == 2)  # a loop and a forward transition
    lo, hi = int(tm.state2id[s]), int(tm.state2id[s + 1])
    counts[lo:hi] = [999.0, 1.0]
    before = tm.log_probs.copy()
    skipped = update_transitions(tm, counts, floor=0.01, min_count=5.0)
    assert skipped == tm.num_transition_states - 1  # the others have no counts: kept
    p = np.exp(tm.log_probs[lo:hi])
    assert p[1] == pytest.approx(0.01, abs=1e-4) and p.sum() == pytest.approx(1.0, abs=1e-3)
    assert np.array_equal(tm.log_probs[hi:], before[hi:])
    assert np.array_equal(tm.log_probs[:lo], before[:lo])


def test_edge_silence_begins_and_ends_every_equal_alignment_with_silence(tmp_path, kaldi_digits):
    tm = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    sil = silence_transition_ids(tm, str(kaldi_digits / "data/lang"))
    assert sil.any() and not sil[0]
    feats = f"scp:{tmp_path}/feats.scp"
    (tmp_path / "feats.scp").write_text("".join(
        f"{line.split()[0]} {kaldi_digits / line.split()[1]}\n"
        for line in (kaldi_digits / "data/train/feats.scp").read_text().splitlines()))
    edges = {}
    for edge in (False, True):
        out = tmp_path / f"ali_{edge}"
        rep = align_equal_compiled(str(kaldi_digits / "exp/mono_ali/tree"),
                                   str(kaldi_digits / "exp/mono_ali/final.mdl"),
                                   str(kaldi_digits / "data/lang"), feats,
                                   f"ark:{kaldi_digits}/data/train/text", f"ark:{out}",
                                   EqualAlignOptions(edge_silence=edge))
        assert rep.aligned == 120
        alis = dict(iter_alignment_file(str(out)))
        edges[edge] = sum(bool(sil[a[0]]) and bool(sil[a[-1]]) for a in alis.values())
    assert edges[True] == 120  # every one
    assert edges[False] < 60  # Kaldi's: each optional silence drawn, one in two


def test_train_mono_sh_aligns_kaldi_digits_near_kaldis_own_monophone_gmm(
        kaldi_digits_copy, env_with_path, repo_dir):
    from hybridasr.align.compare import compare_alignment_dirs

    d = kaldi_digits_copy
    cmd = [str(repo_dir / "steps/train_mono.sh"), "--nj", "2", "--boost-silence", "1.25",
           "--num-iters", "12", "--totgauss", "300", "data/train", "data/lang", "exp/mono_ours"]
    p = subprocess.run(cmd, cwd=d, env=env_with_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "trained on and aligning 120 of 120 utterances" in p.stdout
    tm, am = read_gmm_model(str(d / "exp/mono_ours/final.mdl"))
    assert am.num_pdfs == tm.num_pdfs and am.dim == 39
    assert 100 < len(am.gconsts) <= 300
    agree = compare_alignment_dirs(str(d / "exp/mono_ours"), str(kaldi_digits_copy /
                                                                 "exp/mono_ali"))
    assert agree.utterances == 120 and agree.length_differs == 0
    # Kaldi's 40-iteration GMM's phones on 4,485 frames: the equal alignment has 34.8% of
    # them, the default full-sum flat start 63.1% (docs/flatstart.md)
    assert agree.phone_same / agree.frames > 0.55
    import json
    rep = json.loads((d / "exp/mono_ours/log/train_report.json").read_text())
    ll = rep["log_like_per_frame"]
    assert len(ll) == 12 and ll[-1] > ll[0] + 5
    again = subprocess.run(cmd, cwd=d, env=env_with_path, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and "already holds the monophone GMM" in again.stdout


def test_align_si_reproduces_kaldis_alignment(kaldi_digits_copy, repo_dir, env_with_path):
    """steps/align_si.sh with Kaldi's own monophone GMM (kaldi_digits' exp/mono_ali, made by
    Kaldi's align_si.sh) aligns every frame as Kaldi did; --boost-silence moves frames to
    silence; a model of another lang's phones is refused."""
    import json

    d = kaldi_digits_copy
    run = lambda *a: subprocess.run([str(repo_dir / "steps/align_si.sh"), *a], cwd=d,  # noqa
                                    env=env_with_path, capture_output=True, text=True,
                                    timeout=300)
    p = run("--nj", "2", "data/train", "data/lang", "exp/mono_ali", "exp/our_ali")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "aligned 120 of 120 utterances" in p.stdout
    p = subprocess.run(["compare_alignments.py", "exp/mono_ali", "exp/our_ali", "cmp.json"],
                       cwd=d, env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cmp = json.loads((d / "cmp.json").read_text())
    assert cmp["utterances"] == 120 and cmp["pdf_agreement"] == 100.0
    for f in ("final.mdl", "tree", "phones.txt", "num_jobs", "log/align_report.2.json"):
        assert (d / "exp/our_ali" / f).is_file(), f
    # boosting silence's likelihoods gives it frames
    p = run("--nj", "1", "--boost-silence", "1000", "data/train", "data/lang", "exp/mono_ali",
            "exp/boosted")
    assert p.returncode == 0, p.stderr[-3000:]
    tm = read_transition_model(str(d / "exp/mono_ali/final.mdl"))
    sil = set(int(x) for x in (d / "data/lang/phones/optional_silence.csl").read_text()
              .strip().split(":"))
    n_sil = lambda ali: sum(int(np.isin(tm.tid2phone[a], list(sil)).sum())  # noqa: E731
                            for _, a in iter_alignment_file(str(d / ali)))
    assert n_sil("exp/boosted/ali.1.gz") > n_sil("exp/our_ali/ali.1.gz") + n_sil(
        "exp/our_ali/ali.2.gz")
    # phones of another lang dir
    other = d / "lang_other"
    import shutil
    shutil.copytree(d / "data/lang", other)
    lines = (other / "phones.txt").read_text().splitlines()
    (other / "phones.txt").write_text("\n".join([lines[0], lines[2].split()[0] + " 1",
                                                 lines[1].split()[0] + " 2", *lines[3:]]) + "\n")
    p = run("data/train", str(other), "exp/mono_ali", "exp/bad")
    assert p.returncode != 0 and "not a model of" in p.stderr
