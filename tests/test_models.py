"""hybridasr.models: padded-batch exactness (blstm, lstm), truncated-BPTT state carry (lstm),
save/load round trips with weights-only loading, clear errors on bad files and options, and
the model options read from conf/model/*.conf through a cli parser.

The inputs are kaldi_digits' real MFCC features where the shared folder is there (else a
seeded random stand-in of the same shape, so the exactness checks always run)."""
from __future__ import annotations

import json
import pickle

import pytest
import torch

from hybridasr.cli import add_options, make_parser
from hybridasr.errors import ConfigError, FormatError
from hybridasr.models import (MODEL_CONFIG, build_model, load_model, model_config_from_args,
                              model_options, reset_state, save_model)
from hybridasr.models.blstm import reverse_index, reverse_within
from tests.conftest import REPO, SHARED

torch.set_num_threads(2)
DIGITS = SHARED / "data" / "kaldi_digits"
TOL = 1e-5

BLSTM = {"model": "blstm", "num_layers": 2, "hidden_size": 24, "proj_size": 0, "dropout": 0.3}
BLSTMP = {"model": "blstm", "num_layers": 2, "hidden_size": 24, "proj_size": 8, "dropout": 0.0}
LSTM = {"model": "lstm", "num_layers": 2, "hidden_size": 20, "proj_size": 0, "dropout": 0.0}
LSTMP = {"model": "lstm", "num_layers": 3, "hidden_size": 20, "proj_size": 6, "dropout": 0.2}
MLP = {"model": "mlp", "num_layers": 2, "hidden_size": 32, "activation": "relu",
       "dropout": 0.1}


@pytest.fixture(scope="module")
def utterances():
    """Five utterances of different lengths (real 13-dim MFCCs where available)."""
    try:
        import kaldiio

        scp = DIGITS / "data" / "train" / "feats.scp"
        feats = []
        for line in scp.read_text().splitlines()[:5]:
            key, ark = line.split(" ", 1)
            if not ark.startswith("/"):
                ark = str(DIGITS / ark)
            feats.append(torch.from_numpy(kaldiio.load_mat(ark).copy()).float())
    except (ImportError, OSError):
        g = torch.Generator().manual_seed(1)
        feats = [torch.randn(n, 13, generator=g) for n in (61, 87, 40, 73, 55)]
    # different lengths, the longest not first: padding on every other row
    feats = [f[: 30 + 9 * i] if len(f) > 30 + 9 * i else f for i, f in enumerate(feats)]
    assert len({len(f) for f in feats}) > 1
    return feats


def pad(feats):
    lens = torch.tensor([len(f) for f in feats], dtype=torch.int64)
    x = torch.zeros(len(feats), int(lens.max()), feats[0].shape[1])
    for i, f in enumerate(feats):
        x[i, : len(f)] = f
    return x, lens


def alone(model, f):
    return model(f.unsqueeze(0), torch.tensor([len(f)]))[0]


def new(config, dim=13, out=11, seed=0):
    torch.manual_seed(seed)
    return build_model(config, dim, out).eval()


def test_reverse_within_length():
    lens = torch.tensor([3, 5, 1])
    x = torch.arange(5, dtype=torch.float32).view(1, 5, 1).repeat(3, 1, 1)
    idx = reverse_index(lens, 5, "cpu")
    r = reverse_within(x, idx)[..., 0]
    assert r.tolist() == [[2, 1, 0, 3, 4], [4, 3, 2, 1, 0], [0, 1, 2, 3, 4]]
    assert torch.equal(reverse_within(reverse_within(x, idx), idx), x)
    assert reverse_index(torch.tensor([5, 5]), 5, "cpu") is None  # flip suffices


@pytest.mark.parametrize("config", [BLSTM, BLSTMP, LSTM, LSTMP, MLP],
                         ids=["blstm", "blstmp", "lstm", "lstmp", "mlp"])
def test_padded_batch_equals_each_utterance_alone(config, utterances):
    model = new(config)
    x, lens = pad(utterances)
    with torch.no_grad():
        logits = model(x, lens)
        assert logits.shape == (len(utterances), int(lens.max()), 11)
        for i, f in enumerate(utterances):
            ref = alone(model, f)
            torch.testing.assert_close(logits[i, : len(f)], ref, rtol=0, atol=TOL)
        # the order of the rows does not matter either
        perm = torch.tensor([3, 0, 4, 2, 1])
        again = model(x[perm], lens[perm])
        for j, i in enumerate(perm.tolist()):
            n = int(lens[i])
            torch.testing.assert_close(again[j, :n], logits[i, :n], rtol=0, atol=TOL)


def test_blstm_padding_content_never_reaches_real_frames(utterances):
    model = new(BLSTM)
    x, lens = pad(utterances)
    noisy = x.clone()
    for i, n in enumerate(lens.tolist()):
        noisy[i, n:] = 1e3
    with torch.no_grad():
        a, b = model(x, lens), model(noisy, lens)
    for i, n in enumerate(lens.tolist()):
        torch.testing.assert_close(a[i, :n], b[i, :n], rtol=0, atol=TOL)


def test_blstm_backward_direction_is_used(utterances):
    """The output at frame t depends on later frames (it is bidirectional)."""
    model = new(BLSTM)
    f = utterances[0]
    g = f.clone()
    g[3] += 5.0
    with torch.no_grad():
        a, b = alone(model, f), alone(model, g)
    assert (a[0] - b[0]).abs().max() > 1e-4


def test_blstm_gradients_are_exact_for_padded_batches(utterances):
    """Training on a padded batch = training on the utterances alone (summed losses)."""
    model = new(BLSTM)
    model.eval()  # no dropout noise
    x, lens = pad(utterances[:3])
    targets = [torch.randint(0, 11, (len(f),), generator=torch.Generator().manual_seed(i))
               for i, f in enumerate(utterances[:3])]
    out = model(x, lens)
    loss = sum(torch.nn.functional.cross_entropy(out[i, : len(t)], t, reduction="sum")
               for i, t in enumerate(targets))
    g_batch = torch.autograd.grad(loss, list(model.parameters()))
    loss1 = sum(torch.nn.functional.cross_entropy(alone(model, f), t, reduction="sum")
                for f, t in zip(utterances[:3], targets))
    g_alone = torch.autograd.grad(loss1, list(model.parameters()))
    for a, b in zip(g_batch, g_alone):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("config", [LSTM, LSTMP], ids=["lstm", "lstmp"])
def test_lstm_tbptt_windows_with_carried_state_equal_the_whole_sequence(config, utterances):
    model = new(config)
    x, lens = pad(utterances)
    W = 16
    with torch.no_grad():
        whole = model(x, lens)
        state, outs = None, []
        for s in range(0, x.shape[1], W):
            wl = (lens - s).clamp(0, W)  # rows that ended are length 0 (idle)
            out, state = model(x[:, s:s + W], wl, state=state, return_state=True)
            outs.append(out)
            assert state[0].shape[1] == len(utterances)
        carried = torch.cat(outs, dim=1)
    for i, n in enumerate(lens.tolist()):
        torch.testing.assert_close(carried[i, :n], whole[i, :n], rtol=0, atol=TOL)


def test_lstm_state_is_taken_at_each_rows_own_end(utterances):
    """A row shorter than the window returns its state after its last real frame: the next
    window continues it exactly as if the two windows were one."""
    model = new(LSTMP)
    f = utterances[1]
    with torch.no_grad():
        ref = alone(model, f)
        x, lens = pad([f[:10], f[:25]])  # row 0 padded from frame 10
        _, state = model(x, lens, return_state=True)
        nxt = f[10:25].unsqueeze(0).repeat(2, 1, 1)
        out, _ = model(nxt, torch.tensor([15, 15]), state=state, return_state=True)
        torch.testing.assert_close(out[0], ref[10:25], rtol=0, atol=TOL)
        assert (out[1] - ref[10:25]).abs().max() > 1e-4  # row 1 was at frame 25: different


def test_reset_state_zeros_rows_and_detaches(utterances):
    model = new(LSTM)
    x, lens = pad(utterances[:3])
    _, state = model(x, lens, return_state=True)
    assert state[0].requires_grad
    h, c = reset_state(state, torch.tensor([False, True, False]))
    assert not h.requires_grad and not c.requires_grad
    assert h[:, 1].abs().max() == 0 and c[:, 1].abs().max() == 0
    assert torch.equal(h[:, 0], state[0][:, 0].detach())
    assert reset_state(None, torch.tensor([True])) is None
    # a reset row behaves as a fresh start
    with torch.no_grad():
        f = utterances[1]
        out, _ = model(f.unsqueeze(0).repeat(3, 1, 1), torch.full((3,), len(f)),
                       state=(h, c), return_state=True)
        torch.testing.assert_close(out[1], alone(model, f), rtol=0, atol=TOL)
    # an idle row (length 0) keeps its state
    with torch.no_grad():
        _, s2 = model(x[:, :4], torch.tensor([4, 0, 4]), state=(h, c), return_state=True)
        assert torch.equal(s2[0][:, 1], h[:, 1]) and torch.equal(s2[1][:, 1], c[:, 1])


@pytest.mark.parametrize("config", [BLSTM, MLP], ids=["blstm", "mlp"])
def test_stateless_models_return_none_state(config, utterances):
    x, lens = pad(utterances[:2])
    out, state = new(config)(x, lens, return_state=True)
    assert state is None and out.shape[:2] == x.shape[:2]


def test_mlp_works_frame_by_frame(utterances):
    model = new(MLP, dim=13 * 11)
    x = torch.randn(7, 1, 13 * 11)  # frame-shuffled: T = 1
    with torch.no_grad():
        a = model(x, torch.ones(7, dtype=torch.int64))
        b = model(x.view(1, 7, -1), torch.tensor([7])).view(7, 1, -1)
    assert a.shape == (7, 1, 11)
    torch.testing.assert_close(a, b, rtol=0, atol=TOL)
    sig = new(dict(MLP, activation="sigmoid"), dim=13 * 11)
    assert isinstance(sig.hidden[1], torch.nn.Sigmoid)


@pytest.mark.parametrize("config", [BLSTMP, LSTMP, MLP], ids=["blstm", "lstm", "mlp"])
def test_save_load_round_trip_is_bit_exact(config, utterances, tmp_path):
    model = new(config, seed=3)
    meta = {"transform": {"norm_means": True, "delta_order": 1}, "epoch": 2,
            "cv_loss": 1.25}
    path = tmp_path / "m.nnet"
    save_model(str(path), model, config, meta)
    assert [p.name for p in tmp_path.iterdir()] == ["m.nnet"]  # no temporary left behind
    loaded, got = load_model(str(path))
    assert not loaded.training
    assert got["transform"] == meta["transform"] and got["epoch"] == 2
    assert got["model_config"] == config and got["input_dim"] == 13
    assert got["num_outputs"] == 11 and got["num_pdfs"] == 11
    x, lens = pad(utterances)
    with torch.no_grad():
        assert torch.equal(model(x, lens), loaded(x, lens))
    # the file is plain types + tensors: weights_only loading, and the documented layout
    raw = torch.load(str(path), weights_only=True)
    assert raw["format"] == "hybridasr-nnet-1" and set(raw) == {
        "format", "model_config", "input_dim", "num_outputs", "meta", "state_dict"}
    json.dumps({k: v for k, v in raw.items() if k != "state_dict"})


def test_load_keeps_num_pdfs_from_meta_and_plain_types(tmp_path):
    import numpy as np

    model = new(MLP, out=5)
    path = tmp_path / "m.nnet"
    save_model(str(path), model, MLP, {"num_pdfs": 4, "loss": np.float32(0.5),
                                       "priors": np.arange(3)})
    _, meta = load_model(str(path), torch.device("cpu"))
    assert meta["num_pdfs"] == 4 and meta["num_outputs"] == 5
    assert meta["loss"] == 0.5 and meta["priors"] == [0, 1, 2]


def test_load_refuses_files_that_are_not_models(tmp_path):
    text = tmp_path / "feats.scp"
    text.write_text("utt1 raw_mfcc.ark:12\n")
    with pytest.raises(FormatError, match="feats.scp"):
        load_model(str(text))
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, str(other))
    with pytest.raises(FormatError, match="other.pt.*not a hybridasr model"):
        load_model(str(other))
    code = tmp_path / "code.pt"
    with open(code, "wb") as f:
        pickle.dump(torch.nn.Linear(2, 2), f, protocol=2)  # pickled code: weights_only refuses it
    with pytest.raises(FormatError, match="code.pt"):
        load_model(str(code))
    with pytest.raises(FormatError, match="missing.nnet"):
        load_model(str(tmp_path / "missing.nnet"))
    # our format, but the weights do not fit the config
    bad = tmp_path / "bad.nnet"
    save_model(str(bad), new(LSTM), LSTM, {})
    raw = torch.load(str(bad), weights_only=True)
    raw["model_config"]["hidden_size"] = 21
    torch.save(raw, str(bad))
    with pytest.raises(FormatError, match="bad.nnet.*cannot rebuild"):
        load_model(str(bad))


def parser():  # the model options as train.py registers them
    p = make_parser("train.py", "test")
    p.add_config_file_option(*MODEL_CONFIG)
    add_options(p, model_options(), "model")
    return p


@pytest.mark.parametrize("name,expect", [
    ("blstm", {"model": "blstm", "num_layers": 3, "hidden_size": 512, "proj_size": 0}),
    ("blstm_small", {"model": "blstm", "num_layers": 2, "hidden_size": 128}),
    ("blstm_medium", {"model": "blstm", "num_layers": 2, "hidden_size": 256}),
    ("lstm", {"model": "lstm"}),
    ("mlp", {"model": "mlp", "activation": "sigmoid"}),
])
def test_repo_model_configs_parse_and_build(name, expect):
    conf = REPO / "conf" / "model" / f"{name}.conf"
    cfg = model_config_from_args(parser().parse_args([f"--model-config={conf}"]))
    assert expect.items() <= cfg.items()
    json.dumps(cfg)
    small = dict(cfg, num_layers=1, hidden_size=16, proj_size=min(cfg.get("proj_size", 0), 8))
    if cfg["model"] == "mlp":
        small.pop("proj_size")
    assert build_model(small, 40, 7)(torch.zeros(1, 3, 40), torch.tensor([3])).shape == (1, 3, 7)


def test_model_config_file_and_command_line(tmp_path):
    conf = tmp_path / "model.conf"
    conf.write_text("# small lstm\n--model=lstm\n--num_layers=2\n--hidden-size=64\n"
                    "--proj-size=32\n--dropout=0.2\n")
    args = parser().parse_args([f"--model-config={conf}", "--hidden-size=48"])
    assert model_config_from_args(args) == {"model": "lstm", "num_layers": 2,
                                            "hidden_size": 48, "proj_size": 32,
                                            "dropout": 0.2}
    args = parser().parse_args(["--model=mlp", "--activation=relu", "--num-layers=0"])
    assert model_config_from_args(args) == {"model": "mlp", "num_layers": 0,
                                            "hidden_size": 512, "activation": "relu",
                                            "dropout": 0.1}
    bad = tmp_path / "bad.conf"
    bad.write_text("--model=blstm\n--hidden-units=3\n")
    with pytest.raises(ConfigError, match=r"bad.conf:2: unknown option --hidden-units"):
        parser().parse_args([f"--model-config={bad}"])


@pytest.mark.parametrize("argv,msg", [
    (["--proj-size=512"], "--proj-size=512"),
    (["--num-layers=0"], "--num-layers=0"),
    (["--dropout=1"], "--dropout=1.0"),
    (["--hidden-size=0"], "--hidden-size=0"),
])
def test_bad_model_options_are_config_errors(argv, msg):
    with pytest.raises(ConfigError, match=msg):
        model_config_from_args(parser().parse_args(argv))


def test_build_model_fills_defaults_and_refuses_unknown_keys():
    m = build_model({"model": "blstm", "num_layers": 1, "hidden_size": 8}, 5, 3)
    assert len(m.layers) == 1 and m.dropout is not None  # default dropout 0.1
    with pytest.raises(ConfigError, match="unknown key.*cells"):
        build_model({"model": "lstm", "cells": 3}, 5, 3)
    with pytest.raises(ConfigError, match="--model=gru"):
        build_model({"model": "gru"}, 5, 3)
