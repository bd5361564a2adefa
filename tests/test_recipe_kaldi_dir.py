"""Stage 0 of the recipe: checking and importing a real Kaldi s5 dir (read only)."""
import os
import subprocess
import sys

import kaldiio
import numpy as np
import pytest

from hybridasr.errors import HybridAsrError
from hybridasr.recipe.kaldi_dir import check_kaldi_dir, import_data_dir

ARGS = dict(train="data/train", test="data/test", lang="data/lang", ali="exp/mono_ali",
            graph="exp/mono/graph")


def test_real_kaldi_dir_passes(kaldi_digits):
    facts = check_kaldi_dir(str(kaldi_digits), **ARGS, use_kaldi_feats=True)
    assert facts["num_pdfs_ali"] == 70
    assert facts["num_pdfs_graph"] == 70


def test_missing_final_mdl_is_named(kaldi_digits_copy):
    os.unlink(kaldi_digits_copy / "exp/mono_ali/final.mdl")
    with pytest.raises(HybridAsrError, match=r"missing alignment model: .*exp/mono_ali/final.mdl"):
        check_kaldi_dir(str(kaldi_digits_copy), **ARGS)


def test_mismatched_pdf_counts_are_named(kaldi_digits_copy):
    (kaldi_digits_copy / "exp/mono/graph/num_pdfs").write_text("71\n")
    with pytest.raises(HybridAsrError, match=r"70 pdfs but the graph .* built for 71"):
        check_kaldi_dir(str(kaldi_digits_copy), **ARGS)


def test_several_problems_reported_together(kaldi_digits_copy):
    os.unlink(kaldi_digits_copy / "exp/mono/graph/words.txt")
    os.unlink(kaldi_digits_copy / "data/test/text")
    with pytest.raises(HybridAsrError) as e:
        check_kaldi_dir(str(kaldi_digits_copy), **ARGS)
    assert "graph's word list" in str(e.value) and "data/test/text" in str(e.value)


def test_import_makes_paths_absolute_and_readable(tmp_path, kaldi_digits):
    dst = tmp_path / "data" / "train"
    n = import_data_dir(str(kaldi_digits / "data/train"), str(dst), str(kaldi_digits),
                        keep_feats=True)
    assert n == 120
    wav = dict(line.split(None, 1) for line in open(dst / "wav.scp"))
    assert all(os.path.isabs(v.strip()) and os.path.exists(v.strip()) for v in wav.values())
    # Reading the imported feats.scp from another cwd gives Kaldi's own matrices.
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        ours = kaldiio.load_scp(str(dst / "feats.scp"))
        os.chdir(kaldi_digits)
        theirs = kaldiio.load_scp("data/train/feats.scp")
        np.testing.assert_array_equal(ours["jackson_0_0"], theirs["jackson_0_0"])
    finally:
        os.chdir(cwd)
    assert (dst / "text").read_text() == (kaldi_digits / "data/train/text").read_text()
    assert not (dst.parent / "train.tmp").exists()


def test_import_without_feats_drops_them(tmp_path, kaldi_digits):
    dst = tmp_path / "test"
    import_data_dir(str(kaldi_digits / "data/test"), str(dst), str(kaldi_digits), keep_feats=False)
    assert not (dst / "feats.scp").exists() and not (dst / "cmvn.scp").exists()
    assert (dst / "utt2spk").exists() and (dst / "spk2utt").exists()


def test_pipe_entries_run_from_the_kaldi_dir(tmp_path, kaldi_digits_copy):
    scp = kaldi_digits_copy / "data/test/wav.scp"
    lines = scp.read_text().splitlines()
    key, path = lines[0].split()
    lines[0] = f"{key} cat {path} |"
    scp.write_text("\n".join(lines) + "\n")
    dst = tmp_path / "test"
    import_data_dir(str(kaldi_digits_copy / "data/test"), str(dst), str(kaldi_digits_copy), False)
    wav = kaldiio.load_scp(str(dst / "wav.scp"))
    rate, audio = wav[key]
    assert rate == 8000 and len(audio) > 1000


def test_check_kaldi_dir_cli_exit_code(kaldi_digits_copy, repo_dir, env_with_path):
    os.unlink(kaldi_digits_copy / "exp/mono_ali/final.mdl")
    r = subprocess.run([sys.executable, str(repo_dir / "pybin/check_kaldi_dir.py"),
                        str(kaldi_digits_copy)], capture_output=True, text=True, env=env_with_path)
    assert r.returncode == 1
    assert "final.mdl" in r.stderr
