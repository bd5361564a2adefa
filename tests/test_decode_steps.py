"""steps/nnet/decode.sh: input checks, and (once a model can be built) the whole embedded path
forward.py -> decode_faster_mapped.py -> steps/score.sh on kaldi_digits."""
from __future__ import annotations

import shutil
import subprocess

import pytest


def _sh(cmd, env, cwd):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def exp_dir(tmp_path, kaldi_digits):
    exp = tmp_path / "exp/dnn"
    exp.mkdir(parents=True)
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    (exp / "ali_train_pdf.counts").write_text("[ " + " ".join(["10"] * 70) + " ]\n")
    return exp


def test_graph_dir_without_words_txt(exp_dir, kaldi_digits, repo_dir, env_with_path, tmp_path):
    (exp_dir / "final.nnet").write_bytes(b"placeholder")
    graph = tmp_path / "graph"
    graph.mkdir()
    shutil.copy(kaldi_digits / "exp/mono/graph/HCLG.fst", graph / "HCLG.fst")
    p = _sh(f"{repo_dir}/steps/nnet/decode.sh --nj 1 {graph} {kaldi_digits}/data/test "
            f"{exp_dir}/decode", env_with_path, tmp_path)
    assert p.returncode != 0
    assert f"graph dir {graph} has no words.txt" in p.stderr


def test_missing_network(exp_dir, kaldi_digits, repo_dir, env_with_path, tmp_path):
    p = _sh(f"{repo_dir}/steps/nnet/decode.sh --nj 1 {kaldi_digits}/exp/mono/graph "
            f"{kaldi_digits}/data/test {exp_dir}/decode", env_with_path, tmp_path)
    assert p.returncode != 0 and f"missing file {exp_dir}/final.nnet" in p.stderr
    (exp_dir / "final.nnet").write_bytes(b"placeholder")
    p = _sh(f"{repo_dir}/steps/nnet/decode.sh --decoder magic {kaldi_digits}/exp/mono/graph "
            f"{kaldi_digits}/data/test {exp_dir}/decode", env_with_path, tmp_path)
    assert p.returncode != 0 and "bad --decoder magic" in p.stderr
