"""Export of a trained MLP to Kaldi nnet1 text (pybin/nnet_to_kaldi.py): the text has Kaldi's
layout, and Kaldi's decoding pipeline, repeated here in numpy from the exported files
(apply-cmvn with cmvn_opts, add-deltas with delta_opts, final.feature_transform, final.nnet),
gives our PyTorch forward's outputs on kaldi_digits' real test features. What cannot leave
PyTorch is refused with the reason."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr.errors import ConfigError
from train_helpers import load_pybin as _pybin, make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- a reader of nnet1 text, written from Kaldi's readers (src/nnet/*.h ReadData) ---------
class Nnet1Text:
    """Tokens of an nnet1 text file; a matrix's rows end at newlines, as in Kaldi."""

    def __init__(self, text: str):
        self.toks = re.findall(r"[^ \t\n]+|\n", text)
        self.i = 0

    def next(self, keep_newline=False) -> str:
        while not keep_newline and self.toks[self.i] == "\n":
            self.i += 1
        self.i += 1
        return self.toks[self.i - 1]

    def peek(self) -> str:
        j = self.i
        while self.toks[j] == "\n":
            j += 1
        return self.toks[j]

    def expect(self, tok: str) -> None:
        got = self.next()
        assert got == tok, f"expected {tok}, got {got} (token {self.i})"

    def vector(self, dtype=float) -> np.ndarray:
        self.expect("[")
        vals = []
        while (t := self.next()) != "]":
            vals.append(dtype(t))
        return np.array(vals, dtype=np.float32 if dtype is float else np.int64)

    def matrix(self) -> np.ndarray:
        self.expect("[")
        rows, row = [], []
        while True:
            t = self.next(keep_newline=True)
            if t in ("\n", "]"):
                if row:
                    rows.append(row)
                row = []
                if t == "]":
                    break
            else:
                row.append(float(t))
        assert len({len(r) for r in rows}) == 1, "ragged matrix rows"
        return np.array(rows, dtype=np.float32)


def read_nnet1(path):
    """[(marker, output_dim, input_dim, data dict)] of an nnet1 text file."""
    with open(path, encoding="ascii") as f:
        r = Nnet1Text(f.read())
    r.expect("<Nnet>")
    comps = []
    while (marker := r.next()) != "</Nnet>":
        out_dim, in_dim = int(r.next()), int(r.next())
        d = {}
        while r.peek() not in ("[", "<!EndOfComponent>") and r.peek().startswith("<"):
            tok = r.next()
            d[tok] = float(r.next())
        if marker == "<AffineTransform>":
            assert set(d) == {"<LearnRateCoef>", "<BiasLearnRateCoef>", "<MaxNorm>"}
            d["W"], d["b"] = r.matrix(), r.vector()
            assert d["W"].shape == (out_dim, in_dim) and d["b"].shape == (out_dim,)
        elif marker == "<ParametricRelu>":
            d["alpha"], d["beta"] = r.vector(), r.vector()
        elif marker == "<Splice>":
            d["offsets"] = r.vector(int)
            assert len(d["offsets"]) * in_dim == out_dim
        elif marker in ("<AddShift>", "<Rescale>"):
            assert set(d) == {"<LearnRateCoef>"}
            d["v"] = r.vector()
            assert len(d["v"]) == in_dim == out_dim
        else:
            assert marker in ("<Sigmoid>", "<Softmax>") and in_dim == out_dim, marker
        r.expect("<!EndOfComponent>")
        comps.append((marker, out_dim, in_dim, d))
    for a, b in zip(comps, comps[1:]):
        assert a[1] == b[2], "dims do not chain"
    return comps


def nnet1_forward(comps, x: np.ndarray, no_softmax=False) -> np.ndarray:
    """What nnet-forward computes (float32, utterance at once; Splice clamps at the edges)."""
    x = x.astype(np.float32)
    for i, (marker, _, in_dim, d) in enumerate(comps):
        assert x.shape[1] == in_dim
        if marker == "<Splice>":
            T = len(x)
            idx = np.clip(np.arange(T)[:, None] + d["offsets"][None, :], 0, T - 1)
            x = x[idx].reshape(T, -1)
        elif marker == "<AddShift>":
            x = x + d["v"]
        elif marker == "<Rescale>":
            x = x * d["v"]
        elif marker == "<AffineTransform>":
            x = x @ d["W"].T + d["b"]
        elif marker == "<Sigmoid>":
            x = 1.0 / (1.0 + np.exp(-x))
        elif marker == "<ParametricRelu>":
            x = np.where(x >= 0, d["alpha"] * x, d["beta"] * x)
        elif marker == "<Softmax>":
            if no_softmax and i == len(comps) - 1:
                break
            e = np.exp(x - x.max(1, keepdims=True))
            x = e / e.sum(1, keepdims=True)
    return x


# --- the text layout ------------------------------------------------------------------------
def test_nnet1_text_has_kaldis_layout(tmp_path):
    from hybridasr.kaldi import nnet1

    comps = [nnet1.splice(2, [-1, 0, 1]),
             nnet1.add_shift(np.full(6, -0.5)), nnet1.rescale(np.full(6, 2.0)),
             nnet1.affine_transform(np.array([[1, 0.5, 0, 0, 0, -2],
                                              [0.1, 0, 0, 0, 0, 1e-5]], np.float32),
                                    np.array([0.25, -3.0], np.float32)),
             nnet1.parametric_relu(np.ones(2), np.zeros(2)), nnet1.sigmoid(2), nnet1.softmax(2)]
    nnet1.write_nnet(str(tmp_path / "x.nnet"), comps)
    text = (tmp_path / "x.nnet").read_text()
    # Component::Write: marker, OUTPUT dim, input dim; WriteData; <!EndOfComponent>
    assert text == (
        "<Nnet> \n"
        "<Splice> 6 2 \n[ -1 0 1 ]\n<!EndOfComponent> \n"
        "<AddShift> 6 6 \n<LearnRateCoef> 0  [ -0.5 -0.5 -0.5 -0.5 -0.5 -0.5 ]\n"
        "<!EndOfComponent> \n"
        "<Rescale> 6 6 \n<LearnRateCoef> 0  [ 2 2 2 2 2 2 ]\n<!EndOfComponent> \n"
        "<AffineTransform> 2 6 \n<LearnRateCoef> 1 <BiasLearnRateCoef> 1 <MaxNorm> 0 \n"
        " [\n  1 0.5 0 0 0 -2 \n  0.100000001 0 0 0 0 9.99999975e-06 ]\n [ 0.25 -3 ]\n"
        "<!EndOfComponent> \n"
        "<ParametricRelu> 2 2 \n<AlphaLearnRateCoef> 0 <BetaLearnRateCoef> 0 \n"
        " [ 1 1 ]\n [ 0 0 ]\n<!EndOfComponent> \n"
        "<Sigmoid> 2 2 \n<!EndOfComponent> \n"
        "<Softmax> 2 2 \n<!EndOfComponent> \n"
        "</Nnet> \n")
    got = read_nnet1(tmp_path / "x.nnet")
    assert np.float32(got[3][3]["W"][1, 5]) == np.float32(1e-5)  # 9 digits: exact float32
    with pytest.raises(ValueError, match="input dim 3 but the <Splice> before it outputs 6"):
        nnet1.format_nnet([nnet1.splice(2, [-1, 0, 1]), nnet1.sigmoid(3)])
    from hybridasr.errors import FormatError

    with pytest.raises(FormatError, match="NaN or infinite"):
        nnet1.add_shift(np.array([0.0, np.nan]))


# --- a trained MLP, exported and run as Kaldi would ----------------------------------------
@pytest.fixture(scope="module")
def trained(tmp_path_factory, kaldi_digits):
    """Two MLPs trained for one epoch by train.py on kaldi_digits: sigmoid with CMVN, deltas,
    global normalisation and splice 5; relu with CMVN of means and variances, splice 2 and a
    label delay of 2."""
    root = tmp_path_factory.mktemp("nnet1")
    tr, cv, ali = make_tr_cv(kaldi_digits, root)
    common = ["--model=mlp", "--num-layers=2", "--hidden-size=48", "--dropout=0.1",
              "--seq-ordering=frame_shuffle", "--max-frames=256", "--randomizer-size=100000",
              "--num-workers=0", "--learning-rate=0.002", "--max-iters=1",
              "--progress-every=0", "--num-threads=1"]
    settings = {"sigmoid": ["--activation=sigmoid", "--splice=5", "--delta-order=2",
                            "--global-norm=true"],
                "relu": ["--activation=relu", "--splice=2", "--norm-vars=true",
                         "--label-delay=2"]}
    train = _pybin("train")
    out = {}
    for name, extra in settings.items():
        exp = root / f"exp_{name}"
        assert train.main([*common, *extra, str(tr), str(cv), str(ali), str(ali), str(exp)]) == 0
        out[name] = exp
    return out


def _kaldi_side_feats(kaldi_dir, utt, spk, exported):
    """copy-feats | apply-cmvn $(cat cmvn_opts) | add-deltas $(cat delta_opts), as Kaldi's
    steps/nnet/decode.sh builds it from the exported directory (our implementations of the
    two Kaldi tools, which the feature tests compare with Kaldi's own output)."""
    from hybridasr.features.cmvn import apply_cmvn, read_cmvn_opts
    from hybridasr.features.context import add_deltas

    x = kaldiio.load_mat(_scp(kaldi_dir / "data/test/feats.scp")[utt])
    if (exported / "cmvn_opts").exists():
        stats = kaldiio.load_mat(_scp(kaldi_dir / "data/test/cmvn.scp")[spk])
        x = apply_cmvn(x, stats, **read_cmvn_opts(str(exported / "cmvn_opts")))
    if (exported / "delta_opts").exists():
        opts = dict(w.lstrip("-").split("=") for w in (exported / "delta_opts").read_text().split())
        x = add_deltas(x, int(opts["delta-order"]), int(opts["delta-window"]))
    return x


def _scp(path):
    return dict(line.split(None, 1) for line in path.read_text().splitlines())


@pytest.mark.parametrize("name", ["sigmoid", "relu"])
def test_exported_mlp_gives_our_outputs_on_real_features(trained, kaldi_digits, tmp_path,
                                                         monkeypatch, name):
    from hybridasr.decode.forward import forward_dataset, load_model_and_data

    exp = trained[name]
    src = tmp_path / "src"
    src.mkdir()
    (src / "final.mdl").write_bytes(b"stand-in transition model")
    (src / "ali_train_pdf.counts").write_text("[ 1 2 3 ]\n")
    out = tmp_path / "nnet1"
    assert _pybin("nnet_to_kaldi").main([f"--srcdir={src}", str(exp / "final.nnet"),
                                         str(out)]) == 0
    assert (out / "final.mdl").read_bytes() == b"stand-in transition model"
    assert (out / "ali_train_pdf.counts").read_text() == "[ 1 2 3 ]\n"
    net, ft = read_nnet1(out / "final.nnet"), read_nnet1(out / "final.feature_transform")
    act = "<Sigmoid>" if name == "sigmoid" else "<ParametricRelu>"
    assert [c[0] for c in net] == ["<AffineTransform>", act, "<AffineTransform>", act,
                                   "<AffineTransform>", "<Softmax>"]
    assert net[-1][1] == 70  # kaldi_digits' pdfs
    if name == "sigmoid":
        assert [c[0] for c in ft] == ["<Splice>", "<AddShift>", "<Rescale>"]
        assert ft[0][3]["offsets"].tolist() == list(range(-5, 6)) and ft[0][2] == 39
        assert (out / "cmvn_opts").read_text() == "--norm-means=true --norm-vars=false\n"
        assert (out / "delta_opts").read_text() == "--delta-order=2 --delta-window=2\n"
    else:
        assert [c[0] for c in ft] == ["<Splice>"]
        assert ft[0][3]["offsets"].tolist() == [0, 1, 2, 3, 4]  # splice 2 moved by delay 2
        assert net[1][3]["alpha"].tolist() == [1.0] * 48 and not net[1][3]["beta"].any()
        assert (out / "cmvn_opts").read_text() == "--norm-means=true --norm-vars=true\n"
        assert not (out / "delta_opts").exists()

    monkeypatch.chdir(kaldi_digits)  # data/test's scp paths are relative to it
    model, meta, ds = load_model_and_data(str(exp / "final.nnet"), "data/test",
                                          torch.device("cpu"))
    ds.keys = ds.keys[::6]  # 5 of the 30 test utterances
    ours = {}  # forward.py's log-posteriors (no priors), one row per input frame
    forward_dataset(model, ds, torch.device("cpu"), ours.__setitem__, 70)
    utt2spk = _scp(kaldi_digits / "data/test/utt2spk")
    for utt in ds.keys:
        x = _kaldi_side_feats(kaldi_digits, utt, utt2spk[utt].strip(), out)
        kaldi_in = nnet1_forward(ft, x)
        assert kaldi_in.shape[0] == ours[utt].shape[0] == ds.lengths[utt]
        # nnet-forward --no-softmax (decode.sh's default) outputs the pre-softmax activations:
        # the same log-posteriors up to one constant per frame
        pre = nnet1_forward(net, kaldi_in, no_softmax=True)
        logpost = pre - np.log(np.exp(pre - pre.max(1, keepdims=True)).sum(1, keepdims=True)) \
            - pre.max(1, keepdims=True)
        np.testing.assert_allclose(logpost, ours[utt], atol=1e-4, rtol=0)
        np.testing.assert_allclose(nnet1_forward(net, kaldi_in), np.exp(ours[utt]), atol=1e-4,
                                   rtol=0)


def test_what_cannot_leave_pytorch_is_refused(trained, tmp_path, env_with_path):
    from hybridasr.models import build_model, load_model, save_model
    from hybridasr.models.nnet1_export import export_nnet1

    mlp, meta = load_model(str(trained["sigmoid"] / "final.nnet"))
    cfg = meta["model_config"]
    keep = {k: meta[k] for k in ("transform", "num_pdfs")}
    # a BLSTM: refused by the tool, exit 1, the reason on stderr, nothing written
    blstm = tmp_path / "blstm.nnet"
    bcfg = {"model": "blstm", "num_layers": 1, "hidden_size": 8}
    save_model(str(blstm), build_model(bcfg, meta["input_dim"], 70), bcfg, keep)
    p = subprocess.run([sys.executable, os.path.join(REPO, "pybin/nnet_to_kaldi.py"),
                        str(blstm), str(tmp_path / "out")], env=env_with_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "only --model=mlp can leave PyTorch" in p.stderr, p.stderr
    assert not (tmp_path / "out" / "final.nnet").exists()
    # transforms nnet-forward cannot repeat
    for key, value, why in [("subsample", 2, "one output per input frame"),
                            ("stack_frames", 2, "stacks frames"),
                            ("label_delay", 1, "add-deltas and <Splice> cannot repeat")]:
        bad = tmp_path / f"{key}.nnet"
        save_model(str(bad), mlp, cfg, dict(keep, transform={**keep["transform"], key: value}))
        with pytest.raises(ConfigError, match=why):
            export_nnet1(str(bad), str(tmp_path / key))
    # the training dir's own final.nnet (PyTorch) is never overwritten
    before = (trained["sigmoid"] / "final.nnet").read_bytes()
    with pytest.raises(ConfigError, match="not a Kaldi nnet1 text file"):
        export_nnet1(str(trained["sigmoid"] / "final.nnet"), str(trained["sigmoid"]))
    assert (trained["sigmoid"] / "final.nnet").read_bytes() == before


def test_export_again_removes_steps_the_model_does_not_use(trained, tmp_path):
    from hybridasr.models.nnet1_export import export_nnet1

    out = tmp_path / "nnet1"
    ex = export_nnet1(str(trained["sigmoid"] / "final.nnet"), str(out))
    assert (out / "delta_opts").exists() and ex.removed == []
    assert ex.missing == [str(trained["sigmoid"] / n) for n in ("final.mdl",
                                                                "ali_train_pdf.counts")]
    assert "add-deltas --delta-order=2 --delta-window=2" in ex.nnet_forward_command()
    ex = export_nnet1(str(trained["relu"] / "final.nnet"), str(out))
    assert ex.removed == [str(out / "delta_opts")] and not (out / "delta_opts").exists()
    assert "add-deltas" not in ex.nnet_forward_command()
    assert read_nnet1(out / "final.nnet")[1][0] == "<ParametricRelu>"
