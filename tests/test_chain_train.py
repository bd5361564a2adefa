"""LF-MMI training (--objective=lfmmi, hybridasr.train.lfmmi) and chain decoding on a copy of
kaldi_digits: the chain tree and den.fst of its monophone alignment (steps/nnet/chain/), a
tiny TDNN-F (conf/model/tdnnf_small.conf) trained 2 epochs through pybin/train.py, a graph
with --self-loop-scale 1.0, and steps/nnet/decode.sh --acwt 1.0 --post-decode-acwt 10.0.
The objective's loss against chain_loss on hand-made batches, its xent branch and its
cross-validation figures."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hybridasr.errors import ConfigError
from train_helpers import REPO, load_pybin, make_tr_cv


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory, kaldi_digits, env_with_path):
    tmp = tmp_path_factory.mktemp("lfmmi")
    d = tmp / "digits"
    shutil.copytree(kaldi_digits, d, symlinks=True)
    run = lambda *cmd: subprocess.run([str(c) for c in cmd], cwd=d,  # noqa: E731
                                      env=env_with_path, capture_output=True, text=True)
    for cmd in ([sys.executable, REPO / "pybin/chain_gen_topo.py", "--lang-in=data/lang",
                 "--lang-out=data/lang_chain"],
                [REPO / "steps/nnet/chain/build_tree.sh", "--frame-subsampling-factor", "3",
                 "auto", "data/train", "data/lang_chain", "exp/mono_ali", "exp/chain/tree"],
                [REPO / "steps/nnet/chain/make_den_fst.sh", "exp/chain/tree", "exp/mono_ali",
                 "exp/chain/den"]):
        r = run(*cmd)
        assert r.returncode == 0, r.stdout + r.stderr
    tr, cv, _ = make_tr_cv(kaldi_digits, tmp)
    exp = tmp / "tdnn"
    argv = [f"--model-config={REPO / 'conf/model/tdnnf_small.conf'}",
            "--seq-ordering=laplace:4", "--max-frames=2000", "--num-workers=0",
            "--learning-rate=0.003", "--lr-schedule=exponential", "--max-iters=2",
            "--final-learning-rate=0.001", "--dropout-schedule=0.1,0.3",
            "--tdnnf-xent-lr-factor=0.5",
            "--min-batches-per-epoch=8", "--progress-every=0", "--num-threads=1",
            "--objective=lfmmi", f"--lfmmi-den-fst={d / 'exp/chain/den'}", str(tr), str(cv),
            str(d / "exp/mono_ali"), str(d / "exp/mono_ali"), str(exp)]
    assert load_pybin("train").main(argv) == 0
    return SimpleNamespace(d=d, tr=tr, cv=cv, exp=exp, run=run, argv=argv)


def test_lfmmi_training_lowers_the_cv_objective(chain_run):
    exp = chain_run.exp
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [x["objective"] for x in h] == ["lfmmi"] * 3 and all(x["accepted"] for x in h)
    # minus (num - den) per output frame: the weighted numerator never exceeds the den
    assert h[0]["cv_loss"] > 0
    assert h[1]["cv_loss"] < h[0]["cv_loss"] and h[2]["cv_loss"] < h[1]["cv_loss"], h
    assert h[2]["train_loss"] < h[1]["train_loss"], h
    # Kaldi's chain schedule: the rate decays 0.003 -> 0.001, the dropout schedule at each
    # epoch's midpoint (1/4, 3/4 of 0.1 -> 0.3), the xent output layer at half the rate (the
    # optimizer state saved with epoch 2)
    assert [x["lr"] for x in h] == pytest.approx([0.003, 0.003, 0.001])
    assert [x.get("dropout") for x in h] == [None, pytest.approx(0.15), pytest.approx(0.25)]
    opt = torch.load(exp / "nnet/epoch2.opt", weights_only=True)
    assert [(g["lr_factor"], g["lr"]) for g in opt["param_groups"]] == [
        (1.0, pytest.approx(0.001)), (1.0, pytest.approx(0.001)), (0.5, pytest.approx(0.0005))]
    report = json.loads((exp / "lfmmi_report.json").read_text())
    assert report["training"]["utterances"] + report["cross-validation"]["utterances"] == 120
    assert report["training"]["length_mismatch"] == report["training"]["no_path"] == \
        report["training"]["not_in_den"] == 0
    # what decoding takes from a chain dir
    assert (exp / "frame_subsampling_factor").read_text().strip() == "3"
    assert (exp / "final.mdl").read_bytes() == \
        (chain_run.d / "exp/chain/den/0.trans_mdl").read_bytes()
    from hybridasr.models import load_model

    _, meta = load_model(str(exp / "final.nnet"))
    assert meta["objective"] == "lfmmi"


def test_final_combination_of_a_finished_training(chain_run, tmp_path):
    """--combine-models=2 given to the finished training again (a resume): Kaldi's final
    combination, the average of the last 2 epochs' models chosen where its cv objective is
    better than the last model's; the state records it, so a third run does not combine."""
    from hybridasr.models import load_model

    exp = tmp_path / "tdnn"
    shutil.copytree(chain_run.exp, exp, symlinks=True)
    argv = chain_run.argv[:-1] + ["--combine-models=2", str(exp)]
    assert load_pybin("train").main(argv) == 0
    report = json.loads((exp / "combine.json").read_text())
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [c["epochs"] for c in report["candidates"]] == [[2], [2, 1]]
    assert report["criterion"] == "cv_loss"
    assert report["candidates"][0]["cv_loss"] == pytest.approx(h[2]["cv_loss"], rel=1e-5)
    best = min(report["candidates"], key=lambda c: c["cv_loss"])
    assert report["chosen_models"] == best["models"] and report["cv_loss"] == best["cv_loss"]
    e1, _ = load_model(str(exp / "nnet/epoch1.nnet"))
    e2, _ = load_model(str(exp / "nnet/epoch2.nnet"))
    final, meta = load_model(str(exp / "final.nnet"))
    state = json.loads((exp / "train_state.json").read_text())
    assert state["combined"]["models"] == report["chosen_models"]
    if report["chosen_models"] == 2:
        assert (exp / "final.nnet").resolve() == (exp / "nnet/combined.nnet").resolve()
        assert meta["combined_epochs"] == [2, 1]
        want = {k: (v + e1.state_dict()[k]) / 2 for k, v in e2.state_dict().items()}
    else:
        assert (exp / "final.nnet").resolve() == (exp / "nnet/epoch2.nnet").resolve()
        want = e2.state_dict()
    got = final.state_dict()
    for k, v in want.items():
        if v.is_floating_point():
            assert torch.allclose(got[k], v, atol=1e-6), k
    # resumed again: the combination is not made twice
    stamp = (exp / "combine.json").stat().st_mtime_ns
    assert load_pybin("train").main(argv) == 0
    assert (exp / "combine.json").stat().st_mtime_ns == stamp


def test_chain_decoding_writes_subsampled_loglikes_and_wer(chain_run, monkeypatch):
    from hybridasr.decode.forward import load_model_and_data
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    d, exp = chain_run.d, chain_run.exp
    r = chain_run.run(REPO / "utils/mkgraph.sh", "--self-loop-scale", "1.0", "data/lang",
                      "exp/chain/tree", "exp/chain/tree/graph")
    assert r.returncode == 0, r.stderr
    dec = exp / "decode_test"
    r = chain_run.run(REPO / "steps/nnet/decode.sh", "--nj", "1", "--acwt", "1.0",
                      "--post-decode-acwt", "10.0", "--scoring-opts",
                      "--min-lmwt 9 --max-lmwt 11 --word-ins-penalty 0.0",
                      "exp/chain/tree/graph", "data/test", dec)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--acoustic-scale=0.1 " in (dec / "log/decode.1.log").read_text()
    for lmwt in (9, 10, 11):
        assert "%WER" in (dec / f"wer_{lmwt}").read_text()
    # the chain outputs as they are, times --post-decode-acwt, one row per 3 input frames
    monkeypatch.chdir(d)  # the data dir's scp paths are relative to it
    mats = dict(read_matrices(f"scp:{dec / 'loglikes.1.scp'}"))
    model, _, data = load_model_and_data(str(exp / "final.nnet"), str(d / "data/test"),
                                         torch.device("cpu"))
    assert set(mats) == set(data.keys) and len(mats) == 30
    for utt in data.keys[:3]:
        feats, _ = data.load(utt)
        with torch.no_grad():
            want = model(torch.from_numpy(feats)[None], torch.tensor([len(feats)]))[0].numpy()
        assert mats[utt].shape == ((len(feats) + 2) // 3, want.shape[1])
        assert np.allclose(mats[utt], 10.0 * want, atol=1e-3)
        assert not np.allclose(np.exp(mats[utt] / 10).sum(1), 1.0, atol=1e-2)  # no softmax


# --- the objective on hand-made batches ------------------------------------------------

@pytest.fixture(scope="module")
def chain_data(chain_run):
    """The objective's data (datasets, den graph, supervisions), read once."""
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.train.lfmmi import LfMmiObjective
    from hybridasr.train.objectives import ObjectiveOptions

    o = ObjectiveOptions(objective="lfmmi", lfmmi_den_fst=str(chain_run.d / "exp/chain/den"))
    ali = str(chain_run.d / "exp/mono_ali")
    inputs = SimpleNamespace(data_tr=str(chain_run.tr), data_cv=str(chain_run.cv), ali_tr=ali,
                             ali_cv=ali)
    return LfMmiObjective.read_data(o, inputs, FeatureTransform(), True)


def _objective(chain_data, **opts):
    from hybridasr.train.lfmmi import LfMmiObjective
    from hybridasr.train.objectives import ObjectiveOptions

    o = ObjectiveOptions(objective="lfmmi", lfmmi_den_fst="den", **opts)
    return LfMmiObjective.build(o, chain_data, None), chain_data


def _batch(keys, lengths, spans=(), dim=13):
    from hybridasr.data.batch import Batch

    return Batch(torch.zeros(len(keys), max(lengths), dim), None, torch.tensor(lengths),
                 list(keys), list(spans))


def test_loss_is_chain_loss_of_each_row(chain_data):
    from hybridasr.chain.num_forward_backward import NumGraphs
    from hybridasr.chain.objective import ChainObjectiveOptions, chain_loss

    obj, data = _objective(chain_data)
    keys = data.train.keys[:3]
    lengths = [data.train.lengths[k] for k in keys]
    n_out = [(n + 2) // 3 for n in lengths]
    g = torch.Generator().manual_seed(0)
    p = obj.den.num_pdfs
    chain = torch.randn(3, max(n_out), p, generator=g, dtype=torch.float64).float()
    xent = torch.randn(3, max(n_out), p, generator=g)
    batch = _batch(keys, lengths)
    for with_xent in (False, True):
        out = (chain, xent) if with_xent else chain
        loss, reported, errors, frames = obj(out, batch)
        want, objf = 0.0, 0.0
        for i, k in enumerate(keys):
            num = NumGraphs.from_fsts([obj.sups[k].fst], p)
            r = chain_loss(chain[i:i + 1, :n_out[i]], obj.den, num,
                           xent[i:i + 1, :n_out[i]] if with_xent else None,
                           ChainObjectiveOptions(0.1, 0.1, 0.0))
            want += float(r.loss)
            objf += r.objf * r.frames
        assert frames == sum(n_out) and int(errors) == 0  # errors: cross-validation only
        assert float(loss) == pytest.approx(want, rel=1e-4)
        assert float(reported) == pytest.approx(-objf, rel=1e-4)
        if with_xent:  # the xent term is in the loss, not in the reported objective
            assert float(loss) != pytest.approx(float(obj(chain, batch)[0]), rel=1e-4)
            assert float(reported) == pytest.approx(float(obj(chain, batch)[1]), rel=1e-5)


def test_frame_shift_moves_each_row_and_only_in_training(chain_data):
    """--lfmmi-frame-shift (Kaldi's --frame-shift of the chain egs): in training a batch's rows
    start s = 0..2 frames later, each row's last frame repeated to its own length, padding
    left as it was; every shift is drawn; off in cross-validation and by default."""
    obj, data = _objective(chain_data, lfmmi_frame_shift=True)
    lengths = [7, 4]
    batch = _batch(["a", "b"], lengths, dim=2)
    feats = torch.arange(2 * 7 * 2, dtype=torch.float32).view(2, 7, 2)
    feats[1, 4:] = -1.0  # padding
    seen = set()
    torch.manual_seed(3)
    for _ in range(30):
        got = obj.model_inputs(feats, batch, True)
        s = int((got[0, 0, 0] - feats[0, 0, 0]).item()) // 2
        seen.add(s)
        for i, n in enumerate(lengths):
            want = torch.cat([feats[i, s:n], feats[i, n - 1:n].expand(s, 2)])
            assert torch.equal(got[i, :n], want)
            assert torch.equal(got[i, n:], feats[i, n:])
    assert seen == {0, 1, 2}
    assert obj.model_inputs(feats, batch, False) is feats
    off, _ = _objective(chain_data)
    assert off.model_inputs(feats, batch, True) is feats


def test_cv_figures_and_gradient(chain_data):
    from hybridasr.chain.num_forward_backward import NumGraphs
    from hybridasr.chain.objective import num_posteriors

    obj, data = _objective(chain_data, lfmmi_xent_regularize=0.0)
    keys = data.cv.keys[:2]
    lengths = [data.cv.lengths[k] for k in keys]
    n_out = [(n + 2) // 3 for n in lengths]
    chain = torch.randn(2, max(n_out), obj.den.num_pdfs, generator=torch.Generator()
                        .manual_seed(1))
    batch = _batch(keys, lengths)
    with torch.no_grad():
        loss, reported, errors, frames = obj(chain, batch)
    want = sum(int((chain[i, :n].argmax(-1) != num_posteriors(
        chain[i:i + 1, :n], NumGraphs.from_fsts([obj.sups[k].fst], obj.den.num_pdfs))[0]
        .argmax(-1)).sum()) for i, (k, n) in enumerate(zip(keys, n_out)))
    assert int(errors) == want > 0 and frames == sum(n_out)
    assert float(reported) == pytest.approx(float(loss), rel=1e-5)  # no xent, no l2
    # training: the gradient of each row's real frames is (den - num) posteriors, which
    # sum to 0 per frame; nothing flows into the padding
    x = chain.clone().requires_grad_(True)
    obj(x, batch)[0].backward()
    short = int(np.argmin(n_out))
    assert torch.allclose(x.grad[short, :n_out[short]].sum(-1), torch.zeros(n_out[short]),
                          atol=1e-4)
    assert float(x.grad[short, n_out[short]:].abs().sum()) == 0.0


def test_chunks_use_the_cut_supervision(chain_data):
    from hybridasr.chain.num_forward_backward import NumGraphs
    from hybridasr.chain.objective import ChainObjectiveOptions, chain_loss
    from hybridasr.chain.supervision import split_supervision

    obj, data = _objective(chain_data, lfmmi_xent_regularize=0.0)
    key = max(data.train.keys, key=lambda k: data.train.lengths[k])
    chain = torch.randn(1, 10, obj.den.num_pdfs, generator=torch.Generator().manual_seed(2))
    loss, _, _, frames = obj(chain, _batch([key], [30], [(6, 36)]))
    num = NumGraphs.from_fsts([split_supervision(obj.sups[key], 2, 10)], obj.den.num_pdfs)
    want = chain_loss(chain, obj.den, num, None, ChainObjectiveOptions(0.1, 0.0, 0.0))
    assert frames == 10 and float(loss) == pytest.approx(float(want.loss), rel=1e-5)
    with pytest.raises(ConfigError, match="multiples of 3"):
        obj(chain, _batch([key], [30], [(5, 35)]))
    with pytest.raises(ConfigError, match="expects 10"):  # a model of another factor
        obj(torch.zeros(1, 15, obj.den.num_pdfs), _batch([key], [30], [(6, 36)]))


def test_model_hook_options_and_tree_dir_alignments(chain_run, chain_data):
    from hybridasr.models import build_model
    from hybridasr.chain.supervision_dir import read_supervisions
    from hybridasr.train.objectives import ObjectiveOptions, check_objective

    obj, data = _objective(chain_data)
    model = build_model({"model": "tdnnf", "tdnnf_dim": 32, "tdnnf_bottleneck_dim": 8,
                         "tdnnf_time_strides": "1,0,3", "tdnnf_prefinal_dim": 16}, 13,
                        obj.den.num_pdfs)
    assert obj.model_kwargs(model) == {"return_xent": True}
    assert _objective(chain_data, lfmmi_xent_regularize=0.0)[0].model_kwargs(model) == {}
    model.frame_subsampling_factor = 2
    with pytest.raises(ConfigError, match="every 2th frame"):
        obj.model_kwargs(model)
    with pytest.raises(ConfigError, match="--lfmmi-xent-regularize is for --objective=lfmmi"):
        check_objective(ObjectiveOptions(lfmmi_xent_regularize=0.2), _Whole(), False)
    with pytest.raises(ConfigError, match="needs --lfmmi-den-fst"):
        check_objective(ObjectiveOptions(objective="lfmmi"), _Whole(), False)
    with pytest.raises(ConfigError, match="cuts them"):
        check_objective(ObjectiveOptions(objective="lfmmi", lfmmi_den_fst="x"), _Cuts(), False)
    # the chain tree dir's own (subsampled) alignment gives supervisions of the same frames
    import kaldifst
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree

    t = chain_run.d / "exp/chain/tree"
    wanted = {k: data.cv.lengths[k] for k in data.cv.keys}
    sups, skipped = read_supervisions(
        str(t), wanted, read_tree(str(t / "tree")), read_transition_model(str(t / "final.mdl")),
        ObjectiveOptions(objective="lfmmi"),
        kaldifst.StdVectorFst.read(str(chain_run.d / "exp/chain/den/normalization.fst")))
    assert set(sups) == set(wanted) and not any(skipped.values())
    assert all(sups[k].num_frames == obj.sups[k].num_frames for k in wanted)


class _Whole:
    splits_utterances = per_frame = False

    def describe(self):
        return "whole"


class _Cuts(_Whole):
    splits_utterances = True

    def describe(self):
        return "tbptt"


def test_transcribe_a_chain_model_as_kaldis_chain_decoding(chain_run):
    """transcribe.py with the chain model dir and its --self-loop-scale 1.0 graph: the words of
    decode.sh --acwt 1.0 --post-decode-acwt 10.0 at LMWT 8 (the same features: per-recording
    CMVN), and CTM times at the chain model's frame rate (3 input frames an output frame)."""
    d, exp = chain_run.d, chain_run.exp
    if not (d / "exp/chain/tree/graph/HCLG.fst").exists():
        r = chain_run.run(REPO / "utils/mkgraph.sh", "--self-loop-scale", "1.0", "data/lang",
                          "exp/chain/tree", "exp/chain/tree/graph")
        assert r.returncode == 0, r.stderr
    keys = [ln.split()[0] for ln in (d / "data/test/wav.scp").read_text().splitlines()][:8]
    data = d / "data/test_wav"
    data.mkdir()
    wavs = dict(ln.split(" ", 1) for ln in (d / "data/test/wav.scp").read_text().splitlines())
    (data / "wav.scp").write_text("".join(f"{k} {d / wavs[k]}\n" for k in keys))
    (data / "utt2spk").write_text("".join(f"{k} {k}\n" for k in keys))
    (data / "spk2utt").write_text("".join(f"{k} {k}\n" for k in keys))
    texts = dict(ln.split(" ", 1) for ln in (d / "data/test/text").read_text().splitlines())
    (data / "text").write_text("".join(f"{k} {texts[k]}\n" for k in keys))
    for cmd in (["steps/make_mfcc.sh", "--nj", "1", "--compress", "false", "--mfcc-config",
                 "conf/mfcc.conf", data, "exp/make_mfcc_wav", "mfcc_wav"],
                ["steps/compute_cmvn_stats.sh", data, "exp/make_mfcc_wav", "mfcc_wav"],
                ["steps/nnet/decode.sh", "--nj", "1", "--acwt", "1.0", "--post-decode-acwt",
                 "10.0", "--srcdir", exp, "--scoring-opts",
                 "--min-lmwt 8 --max-lmwt 8 --word-ins-penalty 0.0", "exp/chain/tree/graph",
                 data, exp / "decode_wav"]):
        r = chain_run.run(REPO / cmd[0], *cmd[1:])
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    words = dict(reversed(ln.split()) for ln in
                 (d / "exp/chain/tree/graph/words.txt").read_text().splitlines())
    want = {k: [words[i] for i in v] for k, *v in (
        ln.split() for ln in (exp / "decode_wav/scoring/8.tra").read_text().splitlines())}
    r = chain_run.run(sys.executable, REPO / "pybin/transcribe.py", "--cmvn=utterance",
                      "--lm-weight=8", "--feat-config=conf/mfcc.conf", f"--ctm={d}/t.ctm",
                      "--wav-scp", data / "wav.scp", exp, "exp/chain/tree/graph")
    assert r.returncode == 0, r.stderr[-3000:]
    got = {k: v for k, *v in (ln.split() for ln in r.stdout.splitlines())}
    assert len(want) == 8 and got == want
    assert sum(len(v) for v in got.values()) >= 4, got  # a model that says something
    ctm = [ln.split() for ln in (d / "t.ctm").read_text().splitlines()]
    assert [c[4] for c in ctm] == [w for k in keys for w in got[k]]
    # the same from the exported model (export_model.py: TorchScript, chain outputs)
    e = chain_run.run(sys.executable, REPO / "pybin/export_model.py",
                      "--feat-config=conf/mfcc.conf", exp, d / "chain.pt")
    assert e.returncode == 0, e.stderr[-3000:]
    r2 = chain_run.run(sys.executable, REPO / "pybin/transcribe.py", "--cmvn=utterance",
                       "--lm-weight=8", "--feat-config=conf/mfcc.conf", "--wav-scp",
                       data / "wav.scp", d / "chain.pt", "exp/chain/tree/graph")
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert r2.stdout == r.stdout
    import soundfile as sf

    for c in ctm:  # a word's times are multiples of 30 ms, within its recording
        start, dur = float(c[2]), float(c[3])
        assert round(start / 0.03, 6) == round(start / 0.03) and dur > 0
        assert start + dur <= sf.info(str(d / wavs[c[0]])).duration + 0.03


def test_numerators_outside_the_den_graph_are_refused(chain_run, tmp_path):
    """A numerator dir whose phone sequences the den graph's phone LM never saw (its
    alignment of other transcripts): most utterances have no path through
    normalization.fst, and the training stops, naming why and what to do, instead of
    training on the few left."""
    import kaldifst

    from hybridasr.errors import FormatError

    den = tmp_path / "den"
    shutil.copytree(chain_run.d / "exp/chain/den", den)
    # the phone LM of a den graph that has seen none of these phone sequences: no path
    fst = kaldifst.StdVectorFst()
    fst.add_state()
    fst.start = 0
    fst.write(str(den / "normalization.fst"))
    argv = [a if not a.startswith("--lfmmi-den-fst=") else f"--lfmmi-den-fst={den}"
            for a in chain_run.argv[:-1]] + [str(tmp_path / "exp")]
    with pytest.raises(FormatError, match=r"LF-MMI training set .*: \d+ of \d+ utterances of "
                                          r".*mono_ali have no path through the den graph "
                                          r".*normalization.fst.*same ones"):
        load_pybin("train").main(argv)
    assert not (tmp_path / "exp" / "final.nnet").exists()
