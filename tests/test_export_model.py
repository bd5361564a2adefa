"""export_model.py: a model dir as one TorchScript file. With a tiny BLSTM that steps/nnet/train.sh
trains on kaldi_digits (once per module): the exported module's log-likelihoods equal
forward.py's on real test utterances of different lengths (per-speaker CMVN outside, as
documented); transcribe.py from the file gives the words and CTM of the model dir, importing
no model code; torch alone (no hybridasr importable) runs the file; the metadata reads back;
bad input is named. A TDNN-F chain model (conf/model/tdnnf_small.conf, untrained, random
weights) equals forward.py's chain outputs, and an MLP with every transform step (deltas,
global normalisation, splicing, stacking, subsampling, label delay) the PyTorch path's."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr.decode.export import (EXPORT_FORMAT, PytorchLoglikes, load_exported,
                                     run_exported)
from hybridasr.decode.model_dir import read_feature_conf
from hybridasr.errors import FormatError
from hybridasr.features.cmvn import apply_cmvn
from hybridasr.features.online_cmvn import read_stats
from hybridasr.features.transform import FeatureTransform
from hybridasr.kaldi.transition_model import read_transition_model
from train_helpers import _abs_scp, load_pybin, make_tr_cv

TRAIN_OPTS = ("--max-iters=8 --num-layers=1 --hidden-size=64 --learning-rate=0.01 "
              "--keep-lr-iters=8 --progress-every=0 --num-workers=0")
PRIOR_SCALE = 0.7  # not the default: the exported scale must be the one asked for


def run(args, env, cwd, **kw):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, kaldi_digits, repo_dir, env_with_path):
    """(work dir, model dir, exported file, data/test with absolute paths, test wav.scp)."""
    work = tmp_path_factory.mktemp("export")
    tr, cv, ali = make_tr_cv(kaldi_digits, work)
    (tr / "conf").mkdir()
    shutil.copy(kaldi_digits / "conf/mfcc.conf", tr / "conf/mfcc.conf")
    p = run(["bash", repo_dir / "steps/nnet/train.sh", "--train-opts", TRAIN_OPTS, tr.name,
             cv.name, kaldi_digits / "data/lang", ali.name, ali.name, "exp/blstm"],
            env_with_path, work)
    assert p.returncode == 0, p.stdout + p.stderr
    model = work / "exp/blstm"
    out = work / "blstm.pt"
    assert load_pybin("export_model").main([f"--prior-scale={PRIOR_SCALE}", str(model),
                                            str(out)]) == 0
    src, test = kaldi_digits / "data/test", work / "data_test"
    test.mkdir()
    for name in ("feats.scp", "cmvn.scp"):
        _abs_scp(src / name, test / name, kaldi_digits, lambda k: True)
    for name in ("utt2spk", "spk2utt"):
        shutil.copy(src / name, test / name)
    scp = work / "test_wav.scp"
    scp.write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in (
        line.split() for line in (src / "wav.scp").read_text().splitlines())))
    return work, model, out, test, scp


def _cmvn_feats(data: Path, norm_vars: bool):
    """{utt: features after per-speaker CMVN} of a data dir (what forward.py's dataset does)."""
    spk = dict(line.split() for line in (data / "utt2spk").read_text().splitlines())
    stats = kaldiio.load_scp(str(data / "cmvn.scp"))
    return {u: apply_cmvn(np.asarray(m, np.float32), stats[spk[u]], True, norm_vars)
            for u, m in kaldiio.load_scp(str(data / "feats.scp")).items()}


def _forward_py(model_dir: Path, data: Path, out: Path, *opts) -> dict:
    assert load_pybin("forward").main([*opts, str(model_dir / "final.nnet"), str(data),
                                       f"ark:{out}"]) == 0
    return dict(kaldiio.load_ark(str(out)))


def test_loglikes_equal_forward_py_on_utterances_of_different_lengths(setup):
    work, model, out, test, _ = setup
    want = _forward_py(model, test, work / "fw.ark",
                       f"--class-frame-counts={model / 'ali_train_pdf.counts'}",
                       f"--prior-scale={PRIOR_SCALE}")
    module = torch.jit.load(str(out))
    feats = _cmvn_feats(test, norm_vars=False)
    lengths = {len(f) for f in feats.values()}
    assert len(want) == len(feats) == 30 and len(lengths) >= 10
    num_pdfs = read_transition_model(str(model / "final.mdl")).num_pdfs
    worst = 0.0
    for utt, f in feats.items():
        got = run_exported(module, f)
        assert got.shape == want[utt].shape == (len(f), num_pdfs)
        worst = max(worst, float(np.abs(got - want[utt]).max()))
    assert worst < 1e-5


def test_metadata_reads_back(setup, kaldi_digits):
    _, model, out, _, _ = setup
    module, meta, mdl = load_exported(str(out))
    assert meta["format"] == EXPORT_FORMAT
    tm = read_transition_model(str(model / "final.mdl"))
    assert meta["num_pdfs"] == tm.num_pdfs and mdl == (model / "final.mdl").read_bytes()
    assert meta["chain"] is False and meta["frame_subsampling_factor"] == 1
    assert meta["output_rate"] == "input" and meta["prior_scale"] == PRIOR_SCALE
    conf = read_feature_conf(str(model / "conf/mfcc.conf"))
    assert meta["feature_type"] == "mfcc" and meta["feature_dim"] == conf.feature_dim == 13
    assert meta["feature_options"] == json.loads(json.dumps(conf.__dict__))
    assert meta["feature_conf"] == (kaldi_digits / "conf/mfcc.conf").read_text()
    np.testing.assert_array_equal(np.asarray(meta["cmvn"]["global_stats"]),
                                  read_stats(str(model / "global_cmvn.stats")))
    assert meta["cmvn"]["norm_means"] is True and meta["cmvn"]["norm_vars"] is False
    transform = FeatureTransform.from_dict(meta["transform"])
    assert meta["input_dim"] == transform.output_dim(13)
    assert module(torch.zeros(0, 13)).shape == (0, tm.num_pdfs)
    with pytest.raises(Exception, match=r"expected features \[frames, 13\]"):
        module(torch.zeros(5, 12))


def test_torch_alone_runs_the_file(setup, tmp_path):
    """No hybridasr importable (isolated mode, another cwd): the file loads and gives the
    same log-likelihoods, and its extra files read back."""
    _, _, out, test, _ = setup
    utt, f = next(iter(_cmvn_feats(test, False).items()))
    torch.save(torch.from_numpy(f), tmp_path / "x.pt")
    code = ("import json, sys, torch\n"
            "extra = {'hybridasr_export.json': '', 'final.mdl': ''}\n"
            f"m = torch.jit.load({str(out)!r}, _extra_files=extra)\n"
            f"y = m(torch.load({str(tmp_path / 'x.pt')!r}))\n"
            f"torch.save(y, {str(tmp_path / 'y.pt')!r})\n"
            "assert not any(k.startswith('hybridasr') for k in sys.modules)\n"
            "print(json.loads(extra['hybridasr_export.json'])['format'], len(extra['final.mdl']))")
    p = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [EXPORT_FORMAT, str(len(load_exported(str(out))[2]))]
    np.testing.assert_allclose(torch.load(tmp_path / "y.pt").numpy(),  # other threads
                               run_exported(torch.jit.load(str(out)), f), rtol=0, atol=1e-5)


def test_transcribe_from_the_file_gives_the_model_dirs_words(setup, kaldi_digits, repo_dir,
                                                             env_with_path):
    work, model, out, _, scp = setup
    graph = kaldi_digits / "exp/mono/graph"
    p = run([sys.executable, repo_dir / "pybin/transcribe.py", f"--prior-scale={PRIOR_SCALE}",
             f"--ctm={work}/dir.ctm", "--wav-scp", scp, model, graph], env_with_path, work)
    assert p.returncode == 0, p.stderr
    want = p.stdout
    # from the file, in a process that reports the model code it imported
    code = ("import sys, runpy\n"
            f"sys.argv = ['transcribe.py', '--ctm={work}/pt.ctm', '--wav-scp', {str(scp)!r}, "
            f"{str(out)!r}, {str(graph)!r}]\n"
            "try:\n"
            f"    runpy.run_path({str(repo_dir / 'pybin/transcribe.py')!r}, "
            "run_name='__main__')\n"
            "finally:\n"
            "    print('imported:', *sorted(m for m in sys.modules if m.startswith("
            "('hybridasr.models', 'hybridasr.train'))), file=sys.stderr)\n")
    p = run([sys.executable, "-c", code], env_with_path, work)
    assert p.returncode == 0, p.stderr
    assert p.stdout == want
    lines = want.splitlines()
    assert len(lines) == 30 and sum(len(line.split()) - 1 for line in lines) >= 12
    assert (work / "pt.ctm").read_text() == (work / "dir.ctm").read_text() != ""
    imported = [line for line in p.stderr.splitlines() if line.startswith("imported:")]
    assert imported == ["imported:"]


def _fake_model_dir(path: Path, trained: Path, config: dict, transform: dict,
                    objective: str, scale_weights: float, seed: int = 0):
    """A model dir with a fresh model of ``config`` (random weights of ``scale_weights``) and
    the trained dir's final.mdl, counts, feature conf and global stats."""
    from hybridasr.models import build_model, save_model

    path.mkdir()
    for name in ("final.mdl", "ali_train_pdf.counts", "global_cmvn.stats"):
        shutil.copy(trained / name, path / name)
    shutil.copytree(trained / "conf", path / "conf")
    num_pdfs = read_transition_model(str(trained / "final.mdl")).num_pdfs
    t = FeatureTransform.from_dict(transform)
    torch.manual_seed(seed)
    model = build_model(config, t.output_dim(13), num_pdfs)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, scale_weights)
        for name, b in model.named_buffers():
            if name.endswith("running_var"):
                b.uniform_(0.5, 2.0)
            elif name.endswith("running_mean"):
                b.normal_(0.0, 0.1)
    save_model(str(path / "final.nnet"), model, config,
               {"transform": t.to_dict(), "num_pdfs": num_pdfs, "objective": objective})
    return model


def test_chain_model_gives_forward_pys_chain_outputs(setup, tmp_path, repo_dir):
    """conf/model/tdnnf_small.conf with random weights, saved as a chain model (objective
    lfmmi, a frame_subsampling_factor file): no priors, no log-softmax, one row per output
    frame, as forward.py's chain outputs."""
    from hybridasr.kaldi.conf import read_config_file

    _, trained, _, test, _ = setup
    config = {e.name.replace("-", "_"): e.value
              for e in read_config_file(str(repo_dir / "conf/model/tdnnf_small.conf"))}
    chain_dir = tmp_path / "chain"
    _fake_model_dir(chain_dir, trained, config, {}, "lfmmi", 0.05)
    (chain_dir / "frame_subsampling_factor").write_text("3\n")
    out = tmp_path / "chain.pt"
    assert load_pybin("export_model").main([str(chain_dir), str(out)]) == 0
    module, meta, _ = load_exported(str(out))
    assert meta["chain"] is True and meta["frame_subsampling_factor"] == 3
    assert meta["prior_scale"] is None and meta["output_rate"] == "model"
    want = _forward_py(chain_dir, test, tmp_path / "chain.ark")
    feats = _cmvn_feats(test, norm_vars=False)
    for utt in sorted(feats, key=lambda u: len(feats[u]))[::6]:  # 5 lengths
        got = run_exported(module, feats[utt])
        assert got.shape == want[utt].shape == (-(-len(feats[utt]) // 3), meta["num_pdfs"])
        assert np.abs(got).max() > 0.1  # not the zero-initialised output layer
        np.testing.assert_allclose(got, want[utt], rtol=0, atol=1e-5)
    (chain_dir / "frame_subsampling_factor").write_text("2\n")
    with pytest.raises(FormatError, match="frame_subsampling_factor says '2'"):
        load_pybin("export_model").main([str(chain_dir), str(tmp_path / "bad.pt")])


def test_every_transform_step(setup, tmp_path):
    """An MLP over deltas, global normalisation, splicing, stacking, subsampling and a label
    delay: the exported module equals the PyTorch path at several lengths (1 frame too)."""
    _, trained, _, _, _ = setup
    rng = np.random.default_rng(1)
    dim = 13 * 3
    transform = {"delta_order": 2, "splice": 2, "stack_frames": 2, "subsample": 2,
                 "label_delay": 1, "global_norm": True,
                 "global_mean": rng.normal(0, 1, dim).tolist(),
                 "global_std": rng.uniform(0.5, 2, dim).tolist()}
    _fake_model_dir(tmp_path / "mlp", trained, {"model": "mlp", "num_layers": 2,
                                                "hidden_size": 32}, transform, "xent", 0.2)
    out = tmp_path / "mlp.pt"
    assert load_pybin("export_model").main(["--trace-frames=40", str(tmp_path / "mlp"),
                                            str(out)]) == 0
    from hybridasr.align.counts import load_log_priors
    from hybridasr.models import load_model

    model, meta = load_model(str(tmp_path / "mlp/final.nnet"))
    ref = PytorchLoglikes(model, FeatureTransform.from_dict(meta["transform"]),
                          load_log_priors(str(trained / "ali_train_pdf.counts"),
                                          meta["num_pdfs"]), False, meta["num_pdfs"])
    module = torch.jit.load(str(out))
    for n in (1, 2, 3, 40, 77):
        x = rng.normal(0, 1, (n, 13)).astype(np.float32)
        want, got = ref(x), run_exported(module, x)
        assert want.shape == got.shape == (n, meta["num_pdfs"])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_bad_input_is_named(setup, tmp_path, repo_dir, env_with_path, kaldi_digits):
    _, model, out, _, scp = setup
    export = load_pybin("export_model")
    no_nnet = tmp_path / "no_nnet"
    shutil.copytree(model, no_nnet)
    (no_nnet / "final.nnet").unlink()
    with pytest.raises(FormatError, match=f"has no final.nnet \\({no_nnet}/final.nnet\\)"):
        export.main([str(no_nnet), str(tmp_path / "x.pt")])
    with pytest.raises(FormatError, match=f"no such directory {tmp_path}/missing"):
        export.main([str(model), str(tmp_path / "missing/x.pt")])
    assert not (tmp_path / "x.pt").exists()
    # the command line: exit 1 and the file named
    p = run([sys.executable, repo_dir / "pybin/export_model.py", no_nnet, tmp_path / "x.pt"],
            env_with_path, tmp_path)
    assert p.returncode == 1 and f"{no_nnet}/final.nnet" in p.stderr
    not_pt = tmp_path / "model.pt"
    not_pt.write_text("not a model\n")
    p = run([sys.executable, repo_dir / "pybin/transcribe.py", not_pt,
             kaldi_digits / "exp/mono/graph", "--wav-scp", scp], env_with_path, tmp_path)
    assert p.returncode == 1 and f"{not_pt}: not an exported model" in p.stderr
