"""The forward path with a real (small, untrained) network from ``hybridasr.models``: forward.py
over kaldi_digits' data/test (the model's own feature transform, per-speaker CMVN), its checks
of the pdf count against the transition model and the counts file, frame_error_rate.py, and
steps/nnet/decode.sh end to end with the real forward.py (embedded decoder, and the Kaldi pipe
into a stand-in latgen-faster-mapped that reads the archive from stdin).

Decoding quality with a trained model is the training tests' check; the decoder itself is
checked without a network in test_decode_kaldi_graph.py, test_decode_gmm.py and
test_decode_recipe.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr import models
from hybridasr.features.transform import FeatureTransform
from hybridasr.kaldi.lattice import read_lattices
from hybridasr.kaldi.io.table import read_text_archive

CONFIG = {"model": "blstm", "num_layers": 2, "hidden_size": 32, "proj_size": 0, "dropout": 0.0}
TRANSFORM = FeatureTransform(norm_means=True, delta_order=1)  # 13 -> 26 dims


def save_tiny_model(path: Path, num_outputs: int = 70) -> None:
    torch.manual_seed(0)
    model = models.build_model(dict(CONFIG), 26, num_outputs)
    models.save_model(str(path), model, dict(CONFIG),
                      {"transform": TRANSFORM.to_dict(), "num_pdfs": num_outputs,
                       "input_dim": 26})


def copy_data_dir(kaldi_digits: Path, name: str, dst: Path) -> Path:
    """data/<name> with absolute feats/cmvn paths (usable from any directory)."""
    src = kaldi_digits / "data" / name
    dst.mkdir(parents=True)
    for f in ("feats.scp", "cmvn.scp"):
        lines = (src / f).read_text().splitlines()
        (dst / f).write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in
                                     (line.split(" ", 1) for line in lines)))
    for f in ("text", "utt2spk", "spk2utt"):
        (dst / f).write_text((src / f).read_text())
    return dst


@pytest.fixture
def exp(tmp_path, kaldi_digits):
    """An s5-like dir: data/test, exp/dnn/{final.nnet, final.mdl, ali_train_pdf.counts}."""
    copy_data_dir(kaldi_digits, "test", tmp_path / "data/test")
    d = tmp_path / "exp/dnn"
    d.mkdir(parents=True)
    save_tiny_model(d / "final.nnet")
    (d / "final.mdl").write_bytes((kaldi_digits / "exp/mono_ali/final.mdl").read_bytes())
    counts = np.arange(1, 71)
    (d / "ali_train_pdf.counts").write_text("[ " + " ".join(map(str, counts)) + " ]\n")
    return tmp_path


def _run(args, env, cwd):
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_forward_tool_matches_in_process(exp, repo_dir, env_with_path):
    from hybridasr.decode.forward import load_model_and_data, model_logits
    from hybridasr.decode.loglikes import scaled_loglikes

    p = _run([sys.executable, str(repo_dir / "pybin/forward.py"),
              "--class-frame-counts=exp/dnn/ali_train_pdf.counts",
              "--transition-model=exp/dnn/final.mdl", "exp/dnn/final.nnet", "data/test",
              f"ark,scp:{exp}/ll.ark,{exp}/ll.scp"], env_with_path, exp)
    assert p.returncode == 0, p.stderr
    got = dict(kaldiio.load_scp(str(exp / "ll.scp")))
    assert len(got) == 30
    model, meta, ds = load_model_and_data(str(exp / "exp/dnn/final.nnet"),
                                          str(exp / "data/test"), torch.device("cpu"))
    log_priors = np.log(np.arange(1, 71) / np.arange(1, 71).sum())
    for utt in ds.keys[:4]:
        x, _ = ds.load(utt)
        want = scaled_loglikes(model_logits(model, x, torch.device("cpu")),
                               log_priors.astype(np.float32))
        assert got[utt].shape == (ds.lengths[utt], 70)
        np.testing.assert_allclose(got[utt], want, atol=1e-4)


def test_forward_tool_pdf_mismatches(exp, repo_dir, env_with_path):
    save_tiny_model(exp / "exp/dnn/wide.nnet", num_outputs=71)
    tool = [sys.executable, str(repo_dir / "pybin/forward.py")]
    p = _run(tool + ["--transition-model=exp/dnn/final.mdl", "exp/dnn/wide.nnet", "data/test",
                     "ark:x.ark"], env_with_path, exp)
    assert p.returncode != 0 and "71 outputs" in p.stderr and "70 pdfs" in p.stderr
    assert "Traceback" not in p.stderr and not (exp / "x.ark").exists()
    (exp / "short.counts").write_text("[ " + " ".join(["5"] * 69) + " ]\n")
    p = _run(tool + ["--class-frame-counts=short.counts", "exp/dnn/final.nnet", "data/test",
                     "ark:x.ark"], env_with_path, exp)
    assert p.returncode != 0 and "69 pdf counts" in p.stderr and "70 outputs" in p.stderr


def test_frame_error_rate_tool(exp, repo_dir, env_with_path):
    lengths = {k: len(m) for k, m in kaldiio.load_scp(str(exp / "data/test/feats.scp")).items()}
    with kaldiio.WriteHelper(f"ark,scp:{exp}/t.ark,{exp}/t.scp") as w:
        for k, n in lengths.items():
            w[k] = np.zeros(n, np.int32)
    p = _run([sys.executable, str(repo_dir / "pybin/frame_error_rate.py"), "exp/dnn/final.nnet",
              "data/test", "scp:t.scp"], env_with_path, exp)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("%FER ") and f"/ {sum(lengths.values())} frames, 30 utt" in p.stdout


def test_decode_sh_with_real_forward(exp, repo_dir, kaldi_digits, env_with_path):
    graph = kaldi_digits / "exp/mono/graph"
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "2", "--scoring-opts",
              "--min-lmwt 10 --max-lmwt 10", str(graph), "data/test", "exp/dnn/decode_test"],
             env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "embedded decoder, lattices, 2 jobs" in p.stdout
    dec = exp / "exp/dnn/decode_test"
    # the C++ lattice decoder writes lat.JOB.gz itself: one search per utterance, no 1-best pass
    assert sorted(x.name for x in dec.glob("lat.*.gz")) == ["lat.1.gz", "lat.2.gz"]
    assert not list(dec.glob("hyp.*")) and not (dec / "log/latgen.1.log").exists()
    keys = sorted(k for k, _ in read_lattices(f"ark:gunzip -c {dec}/lat.*.gz|"))
    assert len(keys) == 30  # every utterance has a lattice (partial where no final state)
    # lattices: score.sh's default word insertion penalties, as Kaldi's score_kaldi.sh
    assert sorted(x.name for x in dec.glob("wer_*")) == ["wer_10_0.0", "wer_10_0.5", "wer_10_1.0"]
    lines = (dec / "wer_10_0.0").read_text().splitlines()
    assert lines[-1] == "Scored 30 sentences, 0 not present in hyp."
    assert lines[-3].startswith("%WER ") and "/ 30, " in lines[-3]
    # more jobs than speakers: one job a speaker (utils/jobs_for_speakers.sh), said
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "99", "--skip-scoring", "true",
              str(graph), "data/test", "exp/dnn/decode_test_99"], env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    spk = len((exp / "data/test/spk2utt").read_text().splitlines())
    assert f"data/test has only {spk} speaker(s): using --nj {spk} instead of 99" in p.stderr
    assert (exp / "exp/dnn/decode_test_99/num_jobs").read_text().strip() == str(spk)
    assert len(list((exp / "exp/dnn/decode_test_99").glob("lat.*.gz"))) == spk
    # --lattices false: the 1-best decoder (hyp.JOB.tra), and scoring decodes again per weight
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "2", "--lattices", "false",
              "--scoring-opts", "--min-lmwt 10 --max-lmwt 10", str(graph), "data/test",
              "exp/dnn/decode_test_1best"], env_with_path, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    one = exp / "exp/dnn/decode_test_1best"
    hyps = {**read_text_archive(str(one / "hyp.1.tra")),
            **read_text_archive(str(one / "hyp.2.tra"))}
    assert len(hyps) == 30  # every utterance has an entry, decodable or not
    assert not list(one.glob("lat.*"))
    # the same search; 1-best re-decoding has no penalty to sweep: the default is 0.0 there
    assert [x.name for x in one.glob("wer_*")] == ["wer_10"]
    assert (one / "wer_10").read_text().splitlines()[-3:] == lines[-3:]
    # without the C++ lattice decoder (a python3 whose helper check fails, as without a
    # compiler): --lattices auto decodes as --lattices false, with one warning; true fails
    env = dict(env_with_path, PATH=f"{no_native_python3(exp / 'stub')}:{env_with_path['PATH']}")
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "2", "--scoring-opts",
              "--min-lmwt 10 --max-lmwt 10", str(graph), "data/test",
              "exp/dnn/decode_test_fallback"], env, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stderr.count("warning") == 1, p.stderr
    assert f"warning: {NO_NATIVE}: decoding 1-best, and scoring decodes again once per LM " \
           f"weight (as --lattices false)" in p.stderr
    fb = exp / "exp/dnn/decode_test_fallback"
    assert sorted(x.name for x in fb.glob("hyp.*.tra")) == ["hyp.1.tra", "hyp.2.tra"]
    assert not list(fb.glob("lat.*"))
    assert (fb / "wer_10").read_text().splitlines()[-3:] == lines[-3:]
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "2", "--lattices", "true",
              str(graph), "data/test", "exp/dnn/decode_test_true"], env, exp)
    assert p.returncode == 1 and f"--lattices true: {NO_NATIVE} (use --lattices auto or " \
                                 f"false" in p.stderr
    # score.sh alone on a 1-best dir: the same fallback, the same one warning
    p = _run([str(repo_dir / "steps/score.sh"), "--min-lmwt", "10", "--max-lmwt", "10",
              "data/test", str(graph), str(one)], env, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stderr.count("warning") == 1 and f"warning: {NO_NATIVE}: scoring decodes " \
                                               f"again once per LM weight" in p.stderr
    assert not list(one.glob("lat.*"))
    # the Kaldi pipe: forward.py's archive on stdin of latgen-faster-mapped (a stand-in)
    bin_dir = exp / "bin"
    bin_dir.mkdir()
    (bin_dir / "latgen-faster-mapped").write_text(
        f"#!{sys.executable}\nimport sys, kaldiio\n"
        "mats = list(kaldiio.load_ark(sys.stdin.buffer))\n"
        "open('latgen.seen', 'w').write(' '.join(sys.argv[1:]) + '\\n' + "
        "''.join('%s %d %d\\n' % (k, m.shape[0], m.shape[1]) for k, m in mats))\n")
    (bin_dir / "latgen-faster-mapped").chmod(0o755)
    env = dict(env_with_path, PATH=f"{bin_dir}:{env_with_path['PATH']}")
    p = _run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "1", "--skip-scoring", "true",
              str(graph), "data/test", "exp/dnn/decode_kaldi"], env, exp)
    assert p.returncode == 0, p.stdout + p.stderr
    seen = (exp / "latgen.seen").read_text().splitlines()
    assert seen[0].startswith("--min-active=200 --max-active=7000 --beam=13.0 "
                              "--lattice-beam=8.0 --acoustic-scale=0.10 ")
    shapes = {line.split()[0]: line.split()[1:] for line in seen[1:]}
    assert len(shapes) == 30 and all(s[1] == "70" for s in shapes.values())


NO_NATIVE = "the toolkit's C++ lattice decoder cannot be built (no C++ compiler)"


def no_native_python3(stub: Path) -> Path:
    """A dir with a python3 that answers utils/lattice_decoder_built.sh's check as where the
    C++ library cannot be built, and runs everything else with this interpreter."""
    stub.mkdir(exist_ok=True)
    (stub / "python3").write_text(
        f"#!/bin/sh\ncase \"$2\" in *native.load*) echo \"{NO_NATIVE}\"; exit 1 ;; esac\n"
        f"exec {sys.executable} \"$@\"\n")
    (stub / "python3").chmod(0o755)
    return stub


def test_lattice_decoder_built_helper(repo_dir, env_with_path, tmp_path, monkeypatch):
    """utils/lattice_decoder_built.sh, what --lattices auto|true of decode.sh and score.sh
    ask: 0 and silent where the C++ lattice decoder loads (install.sh builds it); 1 with one
    line on stderr saying why where it cannot be built, or where the python3 on PATH cannot
    load hybridasr. The reason is the library's own (no compiler, here)."""
    from hybridasr.decode import lattice_faster, native

    helper = str(repo_dir / "utils/lattice_decoder_built.sh")
    p = subprocess.run([helper], env=env_with_path, capture_output=True, text=True)
    assert p.returncode == (0 if lattice_faster.available() else 1)
    assert p.stdout == "" and (p.returncode or p.stderr == "")
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python3").write_text("#!/bin/sh\necho 'ModuleNotFoundError: hybridasr' >&2\nexit 1\n")
    (stub / "python3").chmod(0o755)
    env = dict(env_with_path, PATH=f"{stub}:{env_with_path['PATH']}")
    p = subprocess.run([helper], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == ("the toolkit's C++ lattice decoder cannot be loaded (python3 on PATH "
                        "cannot import hybridasr)\n")
    # no library built and no compiler: load() gives None, quietly, and says why
    monkeypatch.setattr(native, "_candidates", lambda: iter([tmp_path / "none"]))
    monkeypatch.setattr(native, "_compiler", lambda: None)
    monkeypatch.setattr(native, "_LIB", None)
    monkeypatch.setattr(native, "_TRIED", False)
    monkeypatch.setattr(native, "_REASON", "")
    assert native.load(quiet=True) is None
    assert native.unavailable_reason() == "no C++ compiler (g++, c++ or clang++; or set CXX)"
