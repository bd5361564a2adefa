"""The chain CLIs and steps on a copy of kaldi_digits: chain_gen_topo.py, the chain tree
(steps/nnet/chain/build_tree.sh --frame-subsampling-factor 3), chain_est_phone_lm.py and
chain_make_den_fst.py (steps/nnet/chain/make_den_fst.sh), outputs read back."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hybridasr.chain.phone_lm import alignment_phone_sequences, estimate_phone_lm
from hybridasr.graph.arrays import FstArrays
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree

TOOLS = ["chain_gen_topo.py", "chain_num_leaves.py", "chain_est_phone_lm.py",
         "chain_make_den_fst.py"]


@pytest.mark.parametrize("tool", TOOLS)
def test_help(tool, repo_dir, env_with_path):
    r = subprocess.run([sys.executable, str(repo_dir / "pybin" / tool), "--help"],
                       env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 0 and "e.g." in r.stdout and "usage" in r.stdout.lower()


def test_chain_steps_on_digits(kaldi_digits_copy, repo_dir, env_with_path):
    d = kaldi_digits_copy
    run = lambda *cmd: subprocess.run(list(cmd), cwd=d, env=env_with_path,  # noqa: E731
                                      capture_output=True, text=True)
    r = run(sys.executable, str(repo_dir / "pybin/chain_gen_topo.py"), "--lang-in=data/lang",
            "--lang-out=data/lang_chain")
    assert r.returncode == 0, r.stderr
    r = run(str(repo_dir / "steps/nnet/chain/build_tree.sh"), "--frame-subsampling-factor", "3",
            "auto", "data/train", "data/lang_chain", "exp/mono_ali", "exp/chain/tree")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "number of leaves from the data size: 177" in r.stdout
    t = d / "exp/chain/tree"
    tree, tm = read_tree(str(t / "tree")), read_transition_model(str(t / "final.mdl"))
    assert tree.num_pdfs == tm.num_pdfs and not tm.topology.is_hmm()
    assert (t / "frame_subsampling_factor").read_text().strip() == "3"
    old = dict(read_int_vectors(f"ark:gunzip -c {d / 'exp/mono_ali/ali.1.gz'}|"))
    new = dict(read_int_vectors(f"ark:gunzip -c {t / 'ali.1.gz'}|"))
    assert new.keys() == old.keys() and len(new) == 120
    assert all(len(new[u]) == (len(old[u]) + 2) // 3 for u in old)
    for u in new:
        tm.check_alignment(new[u], u)

    r = run(str(repo_dir / "steps/nnet/chain/make_den_fst.sh"), "exp/chain/tree",
            "exp/mono_ali", "exp/chain/den")
    assert r.returncode == 0, r.stdout + r.stderr
    import kaldifst

    out = d / "exp/chain/den"
    lm = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(out / "phone_lm.fst")))
    seqs = [s for _, s in alignment_phone_sequences(
        str(d / "exp/mono_ali/final.mdl"), f"ark:gunzip -c {d / 'exp/mono_ali/ali.1.gz'}|")]
    from hybridasr.chain.phone_lm import PhoneLmOptions
    want = estimate_phone_lm(seqs, PhoneLmOptions(num_extra_lm_states=2000))
    assert lm.num_states == want.num_states and np.array_equal(lm.ilabel, want.ilabel)
    assert np.allclose(lm.weight, want.weight)
    den = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(out / "den.fst")))
    norm = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(out / "normalization.fst")))
    assert den.num_arcs > 0 and np.all((den.ilabel >= 1) & (den.ilabel <= tm.num_pdfs))
    assert norm.num_states == den.num_states and np.all(np.isfinite(norm.final))
    # a bad input: an alignment dir without alignments
    (d / "exp/mono_ali/ali.1.gz").unlink()
    r = run(str(repo_dir / "steps/nnet/chain/make_den_fst.sh"), "exp/chain/tree",
            "exp/mono_ali", "exp/chain/den2")
    assert r.returncode != 0 and "missing file exp/mono_ali/ali.1.gz" in r.stderr
