"""The BLSTM as a chain model (--blstm-subsampling-factor): its output every f-th frame, exact
on padded batches, the xent output; cross-entropy refuses it; LF-MMI trains it on a copy of
kaldi_digits (the chain tree and den.fst of test_chain_train's fixture)."""
from __future__ import annotations

import json

import pytest
import torch

from hybridasr.errors import ConfigError
from hybridasr.models import build_model

from test_chain_train import chain_run  # noqa: F401  (the module's fixture)
from train_helpers import REPO, load_pybin


def _blstm(f: int, layers: int = 2):
    torch.manual_seed(0)
    return build_model({"model": "blstm", "num_layers": layers, "hidden_size": 8,
                        "proj_size": 0, "dropout": 0.0, "blstm_subsampling_factor": f}, 5, 7
                       ).eval()


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_output_every_fth_frame_and_exact_on_padded_rows(layers):
    model = _blstm(3, layers)
    x = torch.randn(3, 11, 5, generator=torch.Generator().manual_seed(2))
    lengths = torch.tensor([11, 7, 3])
    with torch.no_grad():
        out = model(x, lengths)
        assert out.shape == (3, 4, 7)  # ceil(11 / 3)
        for b, n in enumerate(lengths.tolist()):
            alone = model(x[b:b + 1, :n], torch.tensor([n]))
            m = -(-n // 3)
            assert alone.shape[1] == m
            assert torch.allclose(out[b, :m], alone[0], atol=1e-6)
        # the first layer at the input rate: frame 3's output depends on frames 1 and 2
        y = x.clone()
        y[0, 1:3] += 1.0
        assert not torch.allclose(model(y, lengths)[0, 1], out[0, 1])


def test_xent_output_only_for_a_subsampling_blstm():
    chain, xent = _blstm(3)(torch.randn(1, 9, 5), return_xent=True)
    assert chain.shape == xent.shape == (1, 3, 7)
    assert not torch.allclose(chain, xent)
    plain = _blstm(1)
    assert plain.xent is None and plain(torch.randn(1, 9, 5)).shape == (1, 9, 7)
    with pytest.raises(ValueError, match="no xent output"):
        plain(torch.randn(1, 9, 5), return_xent=True)
    # a BLSTM saved before the option (no such key) is a plain one
    assert build_model({"model": "blstm", "num_layers": 1, "hidden_size": 4, "proj_size": 0,
                        "dropout": 0.0}, 5, 7).frame_subsampling_factor == 1


def test_cross_entropy_refuses_a_subsampling_model():
    from hybridasr.train.objective import Objective

    assert Objective.model_kwargs(object(), _blstm(1)) == {}
    with pytest.raises(ConfigError, match="every 3th frame.*--objective=lfmmi"):
        Objective.model_kwargs(object(), _blstm(3))


def test_lfmmi_trains_a_chain_blstm(chain_run):  # noqa: F811
    d, exp = chain_run.d, chain_run.d / "blstm_chain"
    argv = ["--model=blstm", "--num-layers=2", "--hidden-size=32", "--dropout=0.1",
            "--blstm-subsampling-factor=3", "--seq-ordering=laplace:4", "--max-frames=2000",
            "--num-workers=0", "--learning-rate=0.003", "--lr-schedule=exponential",
            "--max-iters=2", "--final-learning-rate=0.001", "--min-batches-per-epoch=8",
            "--progress-every=0", "--num-threads=1", "--objective=lfmmi",
            f"--lfmmi-den-fst={d / 'exp/chain/den'}", str(chain_run.tr), str(chain_run.cv),
            str(d / "exp/mono_ali"), str(d / "exp/mono_ali"), str(exp)]
    assert load_pybin("train").main(argv) == 0
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [x["objective"] for x in h] == ["lfmmi"] * 3
    assert h[2]["cv_loss"] < h[0]["cv_loss"], h
    assert (exp / "frame_subsampling_factor").read_text().strip() == "3"
    from hybridasr.decode.export import chain_of
    from hybridasr.models import load_model

    model, meta = load_model(str(exp / "final.nnet"))
    assert chain_of(str(exp), meta, model) == (True, 3)
    # a plain BLSTM is refused by the chain objective, naming the factors
    argv[4] = "--blstm-subsampling-factor=1"
    argv[-1] = str(d / "blstm_plain")
    with pytest.raises(ConfigError, match="every 1th frame.*--blstm-subsampling-factor"):
        load_pybin("train").main(argv)

