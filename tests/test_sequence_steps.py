"""steps/nnet/make_denlats.sh and steps/nnet/train_mpe.sh end to end on kaldi_digits, from a
small BLSTM trained for one epoch on its GMM alignment: Kaldi lattice archives made per job
(a removed one is remade alone), sMBR and MMI epochs with nnet1's per-epoch models, the
objective per epoch in metrics.jsonl, the model decodes, and batching that cuts utterances
is refused naming the option."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from hybridasr.kaldi.lattice import read_lattices
from train_helpers import load_pybin, make_tr_cv


def _sh(cmd, env, cwd):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, kaldi_digits, repo_dir, env_with_path):
    root = tmp_path_factory.mktemp("seq")
    tr, cv, ali = make_tr_cv(kaldi_digits, root)
    exp = root / "exp_blstm"
    assert load_pybin("train").main([
        "--model=blstm", "--num-layers=1", "--hidden-size=32", "--seq-ordering=laplace:4",
        "--max-frames=2000", "--num-workers=0", "--learning-rate=0.01", "--max-iters=1",
        "--min-batches-per-epoch=30", "--progress-every=0", "--num-threads=1", str(tr),
        str(cv), str(ali), str(ali), str(exp)]) == 0
    # what steps/nnet/train.sh adds around train.py
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    shutil.copy(kaldi_digits / "exp/mono_ali/tree", exp / "tree")
    shutil.copy(ali / "pdf_counts", exp / "ali_train_pdf.counts")
    data = root / "data_all"
    for name in ("text", "spk2utt"):
        shutil.copy(kaldi_digits / "data/train" / name, data / name)
    with open(kaldi_digits / "data/train/cmvn.scp") as f, open(data / "cmvn.scp", "w") as out:
        for line in f:
            spk, path = line.split()
            out.write(f"{spk} {kaldi_digits / path}\n")
    lang = kaldi_digits / "data/lang"
    p = _sh(f"{repo_dir}/steps/nnet/align.sh --nj 2 {data} {lang} {exp} {root}/exp/blstm_ali",
            env_with_path, root)
    assert p.returncode == 0, p.stderr[-2000:]
    den = root / "exp/blstm_denlats"
    p = _sh(f"{repo_dir}/steps/nnet/make_denlats.sh --nj 2 {data} {lang} {exp} {den}",
            env_with_path, root)
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    return dict(root=root, tr=tr, cv=cv, data=data, lang=lang, exp=exp,
                ali=root / "exp/blstm_ali", den=den)


def test_make_denlats_writes_lattices_per_job(setup, repo_dir, env_with_path):
    den = setup["den"]
    keys = {}
    for job in (1, 2):
        keys[job] = [k for k, lat in read_lattices(f"ark:gunzip -c {den}/lat.{job}.gz|")
                     if lat.num_arcs > 0]
    assert len(keys[1]) + len(keys[2]) == 120 and not set(keys[1]) & set(keys[2])
    for name in ("final.mdl", "num_jobs", "dengraph/HCLG.fst", "lang/G.fst", "denlats.json"):
        assert (den / name).is_file(), name
    assert json.loads((den / "denlats.json").read_text())["lattice_beam"] == 7.0
    # a rerun makes nothing; a removed archive is remade alone, with the same lattices
    cmd = (f"{repo_dir}/steps/nnet/make_denlats.sh --nj 2 {setup['data']} {setup['lang']} "
           f"{setup['exp']} {den}")
    p = _sh(cmd, env_with_path, setup["root"])
    assert p.returncode == 0 and "nothing to do" in p.stdout
    before = (den / "lat.2.gz").stat().st_mtime_ns
    old = {k: lat.num_arcs for k, lat in read_lattices(f"ark:gunzip -c {den}/lat.2.gz|")}
    (den / "lat.2.gz").unlink()
    p = _sh(cmd, env_with_path, setup["root"])
    assert p.returncode == 0, p.stderr[-2000:]
    assert "1 of 2 jobs to run" in p.stdout
    assert "is already made" in (den / "log/decode_den.1.log").read_text()
    assert {k: lat.num_arcs for k, lat in read_lattices(f"ark:gunzip -c {den}/lat.2.gz|")} == old
    assert (den / "lat.2.gz").stat().st_mtime_ns != before


@pytest.mark.parametrize("criterion", ["smbr", "mmi"])
def test_train_mpe(setup, repo_dir, env_with_path, criterion, kaldi_digits):
    s = setup
    out = s["root"] / f"exp/blstm_{criterion}"
    # --dropout=0: the CE model's 0.1 need not be kept (dropout shapes no parameter)
    p = _sh(f"{repo_dir}/steps/nnet/train_mpe.sh --num-iters 2 --learn-rate 0.002 "
            f"--max-frames 1000 --do-smbr {'true' if criterion == 'smbr' else 'false'} "
            f"--cv-data {s['cv']} --train-opts '--num-threads=1 --progress-every=0 --dropout=0' "
            f"{s['tr']} {s['lang']} {s['exp']} {s['ali']} {s['den']} {out}", env_with_path,
            s["root"])
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    for n in (1, 2):
        assert (out / f"{n}.nnet").resolve() == (out / f"nnet/epoch{n}.nnet").resolve()
    assert (out / "final.nnet").resolve() == (out / "nnet/epoch2.nnet").resolve()
    for name in ("final.mdl", "tree", "ali_train_pdf.counts"):
        assert (out / name).read_bytes() == (s["exp"] / name).read_bytes()
    rows = [json.loads(line) for line in open(out / "metrics.jsonl")]
    assert [r["epoch"] for r in rows] == [0, 1, 2]
    conf = (out / "train.conf").read_text()
    assert f"--objective={criterion}" in conf and "--seq-silence-phones=1:2" in conf
    log = (out / "log/train.log").read_text()
    assert "120 denominator lattices" in log and "0 utterances left out" in log
    # the objective improves on the training data from epoch to epoch (the held-out one of
    # 10 digits utterances is too small to rank epochs); sMBR's is the expected frame error
    assert rows[2]["train_loss"] < rows[1]["train_loss"]
    assert all(r["objective"] == criterion for r in rows)
    if criterion == "smbr":
        assert all(0 < r["cv_loss"] < 1 for r in rows)
    # it decodes, as the CE model does (its cv set: absolute paths, writable)
    p = _sh(f"{repo_dir}/steps/nnet/decode.sh --nj 1 --skip-scoring true "
            f"{kaldi_digits}/exp/mono/graph {s['cv']} {out}/decode_cv", env_with_path, s["root"])
    assert p.returncode == 0, p.stderr[-2000:]
    assert list((out / "decode_cv").glob("lat.1.gz")) or list((out / "decode_cv").glob("hyp.1.tra"))


def test_train_mpe_refuses_batches_that_cut_utterances(setup, repo_dir, env_with_path):
    s = setup
    out = s["root"] / "exp/blstm_smbr_bad"
    p = _sh(f"{repo_dir}/steps/nnet/train_mpe.sh --train-opts '--seq-ordering=frame_shuffle' "
            f"{s['tr']} {s['lang']} {s['exp']} {s['ali']} {s['den']} {out}", env_with_path,
            s["root"])
    assert p.returncode != 0
    assert "frame_shuffle" in p.stderr and "whole utterances" in p.stderr
    p = _sh(f"{repo_dir}/steps/nnet/train_mpe.sh {s['tr']} {s['lang']} {s['exp']} {s['ali']} "
            f"{s['root']}/nowhere {out}", env_with_path, s["root"])
    assert p.returncode != 0 and "nowhere/final.mdl" in p.stderr


@pytest.mark.parametrize("model", ["lstm", "mlp"])
def test_sequence_training_of_other_models(setup, model):
    """train.py --objective=smbr trains the LSTM and the MLP (spliced frames) too: the
    lattices are over pdfs, whatever network scores them."""
    s = setup
    exp = s["root"] / f"exp/{model}_smbr"
    extra = ["--splice=2"] if model == "mlp" else []
    assert load_pybin("train").main([
        f"--model={model}", "--num-layers=1", "--hidden-size=32", *extra,
        "--seq-ordering=laplace:4", "--max-frames=1000", "--num-workers=0",
        "--learning-rate=0.002", "--lr-schedule=constant", "--max-iters=2",
        "--progress-every=0", "--num-threads=1", "--objective=smbr",
        f"--seq-denlats={s['den']}", "--seq-silence-phones=1:2:3:4:5",
        f"--seq-class-frame-counts={s['exp']}/ali_train_pdf.counts",
        str(s["tr"]), str(s["cv"]), str(s["root"] / "exp/blstm_smbr/ali_tr"),
        str(s["root"] / "exp/blstm_smbr/ali_cv"), str(exp)]) == 0
    rows = [json.loads(line) for line in open(exp / "metrics.jsonl")]
    assert [r["objective"] for r in rows] == ["smbr"] * 3
    assert all(0 < r["cv_loss"] < 1 for r in rows)
    assert rows[2]["train_loss"] < rows[1]["train_loss"]
