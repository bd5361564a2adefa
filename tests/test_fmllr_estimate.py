"""fMLLR estimation (hybridasr/features/fmllr_estimate.py, Kaldi's gmm-est-fmllr
--fmllr-update-type=full) on kaldi_hindi_sat's real SAT system: for training speakers, from
exp/tri3b_ali's alignment (silence left out, as align_fmllr.sh's weight-silence-post 0) on
the speaker-independent features of final.mat, the transform beats both the identity and
Kaldi's own trans.* on the auxiliary function it maximises, sits at a maximum of it, and moves
the features most of the way to Kaldi's (whose statistics came from the first-pass alignment,
not this one)."""
from __future__ import annotations

import kaldiio
import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.features.fmllr import FmllrPipeline, apply_transform
from hybridasr.features.fmllr_estimate import FmllrAccs
from hybridasr.kaldi.gmm_model import read_gmm_model
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.kaldi.io.table import read_map


@pytest.fixture(scope="module")
def speakers(shared_dir):
    """{speaker: (FmllrAccs, [si features], Kaldi's transform)} for two training speakers."""
    h = shared_dir / "data" / "kaldi_hindi_sat"
    gdir = h / "exp" / "tri3b_ali"
    tm, gmm = read_gmm_model(str(gdir / "final.mdl"))
    pipe = FmllrPipeline.from_gmm_dir(str(gdir))
    u2s = read_map(str(h / "data/train/utt2spk"))
    cmvn = read_map(str(h / "data/train/cmvn.scp"))
    wanted = sorted(set(u2s.values()))[1:3]
    sil = [int(x) for x in (h / "data/lang/phones/silence.csl").read_text().split(":")]
    ali = {}
    for f in sorted(gdir.glob("ali.*.gz")):
        ali.update((u, np.asarray(a)) for u, a in iter_alignment_file(str(f)))
    trans = {}
    for f in sorted(gdir.glob("trans.*")):
        trans.update(kaldiio.load_ark(str(f)))
    out = {}
    for utt, m in iter_feature_scp(str(h / "data/train/feats.scp"), base=str(h)):
        spk = u2s[utt]
        if spk not in wanted or utt not in ali:
            continue
        acc, feats, _ = out.setdefault(spk, (FmllrAccs(gmm), [], np.asarray(trans[spk])))
        x = pipe(m, kaldiio.load_mat(str(h / cmvn[spk])), spk)
        a = ali[utt]
        acc.accumulate(x, tm.tid2pdf[a], np.where(np.isin(tm.tid2phone[a], sil), 0.0, 1.0))
        feats.append(x)
    assert sorted(out) == wanted
    return out


def test_estimate_maximises_the_auxiliary_function_near_kaldis(speakers):
    for spk, (acc, feats, kaldi) in speakers.items():
        assert acc.beta > 1000
        W = acc.estimate()
        ident = np.hstack([np.eye(40), np.zeros((40, 1))])
        assert W.shape == kaldi.shape == (40, 41)
        assert acc.objective(W) > acc.objective(kaldi) > acc.objective(ident)
        rng = np.random.default_rng(0)
        for _ in range(3):  # a maximum: small moves lower it
            assert acc.objective(W + 1e-3 * rng.standard_normal(W.shape)) < acc.objective(W)
        x = np.concatenate(feats)
        ours, theirs = apply_transform(x, W), apply_transform(x, kaldi)
        rel = np.sqrt(((ours - theirs) ** 2).mean() / (theirs ** 2).mean())
        rel_identity = np.sqrt(((x - theirs) ** 2).mean() / (theirs ** 2).mean())
        assert rel < 0.3 and rel < 0.4 * rel_identity, (spk, rel, rel_identity)


def test_too_few_frames_keep_the_identity(speakers):
    acc, feats, _ = next(iter(speakers.values()))
    small = FmllrAccs(acc.gmm)
    small.accumulate(feats[0][:15], np.zeros(15, int), np.ones(15))
    W = small.estimate()
    np.testing.assert_array_equal(W, np.hstack([np.eye(40), np.zeros((40, 1))]))
    with pytest.raises(Exception, match="pdf outside"):
        small.accumulate(feats[0][:2], np.array([0, acc.gmm.num_pdfs]), np.ones(2))
