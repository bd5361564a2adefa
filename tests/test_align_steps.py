"""steps/nnet/align.sh end to end on kaldi_digits with a network trained for one epoch: a
Kaldi alignment dir (binary ali.JOB.gz that kaldiio and our reader read, final.mdl, tree,
num_jobs, logs) that steps/import_ali.sh accepts, and compare_alignments.py's figures."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess

import kaldiio
import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_dir
from train_helpers import load_pybin, make_tr_cv


def _sh(cmd, env, cwd):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def nnet_dir(tmp_path_factory, kaldi_digits):
    root = tmp_path_factory.mktemp("align")
    tr, cv, ali = make_tr_cv(kaldi_digits, root)
    exp = root / "exp_mlp"
    assert load_pybin("train").main([
        "--model=mlp", "--num-layers=2", "--hidden-size=64", "--splice=3",
        "--seq-ordering=frame_shuffle", "--max-frames=256", "--randomizer-size=100000",
        "--num-workers=0", "--learning-rate=0.004", "--max-iters=1", "--progress-every=0",
        "--num-threads=1", str(tr), str(cv), str(ali), str(ali), str(exp)]) == 0
    # what steps/nnet/train.sh adds around train.py
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    shutil.copy(kaldi_digits / "exp/mono_ali/tree", exp / "tree")
    if not (exp / "ali_train_pdf.counts").exists():
        shutil.copy(ali / "pdf_counts", exp / "ali_train_pdf.counts")
    data = root / "data_all"  # feats.scp + utt2spk from make_tr_cv; add what alignment needs
    for name in ("text", "spk2utt"):
        shutil.copy(kaldi_digits / "data/train" / name, data / name)
    with open(kaldi_digits / "data/train/cmvn.scp") as f, open(data / "cmvn.scp", "w") as out:
        for line in f:
            spk, path = line.split()
            out.write(f"{spk} {kaldi_digits / path}\n")
    return exp, data


def test_align_sh_writes_a_kaldi_alignment_dir(nnet_dir, kaldi_digits, repo_dir,
                                                env_with_path, tmp_path):
    exp, data = nnet_dir
    ali = tmp_path / "exp/mlp_ali"
    p = _sh(f"{repo_dir}/steps/nnet/align.sh --nj 2 {data} {kaldi_digits}/data/lang {exp} {ali}",
            env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    assert "aligned 120 of 120 utterances" in p.stdout
    assert (ali / "num_jobs").read_text().strip() == "2"
    for name in ("final.mdl", "tree", "phones.txt"):
        assert (ali / name).is_file() and not (ali / name).is_symlink()
    # binary Kaldi archives: key, space, \0B; kaldiio and our reader agree
    ours = {u: a for _, u, a in iter_alignment_dir(str(ali))}
    assert len(ours) == 120
    for job in (1, 2):
        raw = gzip.open(ali / f"ali.{job}.gz").read()
        assert raw.split(b" ", 1)[1][:2] == b"\0B"
        with gzip.open(ali / f"ali.{job}.gz") as f:
            for utt, vec in kaldiio.load_ark(f):
                assert np.array_equal(vec, ours[utt])
    rep = [json.loads((ali / f"log/align_report.{j}.json").read_text()) for j in (1, 2)]
    assert sum(r["aligned"] for r in rep) == 120 and sum(r["num_failed"] for r in rep) == 0
    # steps/import_ali.sh takes it as it takes Kaldi's
    p = _sh(f"{repo_dir}/steps/import_ali.sh {ali} {data} {tmp_path}/imported", env_with_path,
            tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    imp = json.loads((tmp_path / "imported/import_report.json").read_text())
    assert imp["utterances_imported"] == 120 and imp["exact_length"] == 120
    # agreement with the GMM alignment
    out = tmp_path / "compare.json"
    p = _sh(f"compare_alignments.py --data-dir {data} {kaldi_digits}/exp/mono_ali {ali} {out}",
            env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    cmp = json.loads(out.read_text())
    assert cmp["utterances"] == 120 and cmp["frames"] == 4485
    assert cmp["num_only_in_first"] == cmp["num_only_in_second"] == 0
    assert 30 < cmp["phone_agreement"] <= 100 and cmp["pdf_agreement"] <= cmp["phone_agreement"]
    assert len(cmp["per_utterance"]) == 120


def test_align_sh_input_checks(nnet_dir, kaldi_digits, repo_dir, env_with_path, tmp_path):
    exp, data = nnet_dir
    p = _sh(f"{repo_dir}/steps/nnet/align.sh {data} {kaldi_digits}/data/lang", env_with_path,
            tmp_path)
    assert p.returncode != 0 and "Usage:" in p.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("final.nnet", "final.mdl", "ali_train_pdf.counts"):
        shutil.copy(exp / name, bare / name)
    p = _sh(f"{repo_dir}/steps/nnet/align.sh {data} {kaldi_digits}/data/lang {bare} "
            f"{tmp_path}/ali", env_with_path, tmp_path)
    assert p.returncode != 0 and f"missing file {bare}/tree" in p.stderr


def test_compare_identical_dirs(kaldi_digits, env_with_path, tmp_path):
    p = _sh(f"compare_alignments.py --per-utterance=false {kaldi_digits}/exp/mono_ali "
            f"{kaldi_digits}/exp/mono_ali", env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["phone_agreement"] == out["pdf_agreement"] == 100.0
    assert out["utterances"] == 120 and "per_utterance" not in out
