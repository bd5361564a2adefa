"""experiments.chain_seeds: the inputs of the chain model and the CE model's graph on the GMM
path and on the GMM-free one (--ali none), as run.sh --chain true picks them."""
from __future__ import annotations

import os

from experiments import chain_seeds as cs


def test_the_gmm_path_reads_the_kaldi_dirs_alignment_lang_and_graph(tmp_path):
    kaldi, work = str(tmp_path / "kaldi"), str(tmp_path / "work")
    assert cs.chain_inputs(work, kaldi, "exp/tri1") == (os.path.join(kaldi, "data", "lang"),
                                                        os.path.join(kaldi, "exp/tri1"))
    assert cs.ce_graph(work, kaldi, "exp/tri1", "exp/tri1/graph", 7) == \
        os.path.join(kaldi, "exp/tri1/graph")


def test_the_gmm_free_path_reads_the_flat_starts_alignment_and_its_own_graph(tmp_path):
    kaldi, work = tmp_path / "kaldi", tmp_path / "work"
    (kaldi / "data" / "lang").mkdir(parents=True)
    (work / "exp" / "flat" / "ali_final").mkdir(parents=True)
    # a dict dir only (no L.fst in the Kaldi dir's lang): the recipe's data/lang; no CD tree:
    # the flat start's own alignment
    assert cs.chain_inputs(str(work), str(kaldi), "none") == (
        str(work / "data" / "lang"), str(work / "exp" / "flat" / "ali_final"))
    (kaldi / "data" / "lang" / "L.fst").write_bytes(b"")
    (work / "exp" / "tri_ali").mkdir()
    assert cs.chain_inputs(str(work), str(kaldi), "none") == (
        str(kaldi / "data" / "lang"), str(work / "exp" / "tri_ali"))
    assert cs.ce_graph(str(work), str(kaldi), "none", "exp/mono/graph", 7) == \
        str(work / "exp" / "blstm_s7" / "graph")
