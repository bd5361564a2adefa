"""run.sh --fmllr's stage-1 step (egs/kaldi_dir/s5/local/make_fmllr_data.sh) on kaldi_hindi_sat
without its SAT system's decode dirs (no fMLLR transforms of the test speakers anywhere, as for
a test set Kaldi never decoded): data/train gets the fMLLR features of exp/tri3b_ali's
transforms; the test speakers' transforms are estimated as Kaldi's decode_fmllr.sh does
(estimate_fmllr.py into exp/make_fmllr/test_trans, with a note), and data/test holds the
features of those; data/fmllr_gmm names the GMM (what train.sh copies into the model dir)."""
from __future__ import annotations

import os
import subprocess

import kaldiio
import numpy as np

from hybridasr.features.fmllr import FmllrPipeline, read_transforms
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.kaldi.io.table import read_map
from test_recipe_e2e import make_recipe_copy


def _without_decode_dirs(src, dst):
    """``src`` as symlinks, but exp/tri3b without its decode dirs."""
    dst.mkdir()
    for entry in os.listdir(src):
        if entry != "exp":
            os.symlink(src / entry, dst / entry)
    (dst / "exp").mkdir()
    for entry in os.listdir(src / "exp"):
        if entry != "tri3b":
            os.symlink(src / "exp" / entry, dst / "exp" / entry)
    (dst / "exp/tri3b").mkdir()
    for entry in os.listdir(src / "exp/tri3b"):
        if not entry.startswith("decode"):
            os.symlink(src / "exp/tri3b" / entry, dst / "exp/tri3b" / entry)
    return dst


def test_test_speakers_transforms_are_estimated(shared_dir, repo_dir, tmp_path, env_with_path):
    hindi = shared_dir / "data" / "kaldi_hindi_sat"
    kaldi = _without_decode_dirs(hindi, tmp_path / "kaldi")
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    p = subprocess.run(
        ["bash", str(repo_dir / "egs/kaldi_dir/s5/local/make_fmllr_data.sh"), "--nj", "2",
         "--mfcc-config", str(hindi / "conf/mfcc.conf"), str(kaldi), "data/train", "data/test",
         "exp/tri3b_ali", "exp/tri3b/graph", "exp/tri3b/decode"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-5000:]
    assert "note: no fMLLR transforms for the speakers of data/test" in out
    tdir = s5 / "exp/make_fmllr/test_trans"
    assert (s5 / "data/test/fmllr_from").read_text().strip() == "exp/make_fmllr/test_trans"
    assert (s5 / "data/train/fmllr_from").read_text().strip() == f"{kaldi}/exp/tri3b_ali"
    assert (s5 / "data/fmllr_gmm").read_text().strip() == f"{kaldi}/exp/tri3b_ali"
    # one job a speaker (--nj 2), each its speaker's transform, as Kaldi's trans.JOB
    assert (tdir / "num_jobs").read_text().strip() == "2"
    assert [sorted(dict(kaldiio.load_ark(str(tdir / f"trans.{j}")))) for j in (1, 2)] == \
        [["pramod"], ["srihari"]]
    # data/test: the GMM's pipeline with those transforms, on data/test_gmm's MFCCs
    pipe = FmllrPipeline.from_gmm_dir(str(kaldi / "exp/tri3b_ali"))
    pipe.transforms = read_transforms([f"ark:{tdir}/trans.{j}" for j in (1, 2)])
    u2s = read_map(str(s5 / "data/test_gmm/utt2spk"))
    cmvn = {k: kaldiio.load_mat(v if os.path.isabs(v) else str(s5 / v)) for k, v in
            read_map(str(s5 / "data/test_gmm/cmvn.scp")).items()}
    got = dict(iter_feature_scp(str(s5 / "data/test/feats.scp"), base=str(s5)))
    assert len(got) == 20
    for utt, raw in list(iter_feature_scp(str(s5 / "data/test_gmm/feats.scp"),
                                          base=str(s5)))[::7]:
        want = pipe(raw, cmvn[u2s[utt]], u2s[utt])
        assert got[utt].shape == want.shape == (len(raw), 40)
        np.testing.assert_allclose(got[utt], want, atol=1e-3, rtol=0)
