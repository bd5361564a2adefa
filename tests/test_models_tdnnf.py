"""The TDNN-F model (Kaldi's tdnnf-layer): output frames and subsampling, time context,
zero-padded batches called as the trainer calls models, the semi-orthogonal constraint,
the parameter count, dropout, and the conf files through the model options."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from hybridasr.cli import add_options, make_parser
from hybridasr.errors import ConfigError
from hybridasr.models import MODEL_CONFIG, build_model, model_config_from_args, model_options
from hybridasr.models.tdnnf import SharedDropout, Tdnnf, TdnnfOptions, constrain_orthonormal
from hybridasr.train.optimizer import make_optimizer, set_learning_rate
from hybridasr.train.options import TrainConfig
from hybridasr.train.schedules.dropout import apply_dropout_schedule, dropout_schedule_value

REPO = Path(__file__).resolve().parents[1]
SMALL = dict(tdnnf_dim=32, tdnnf_bottleneck_dim=8, tdnnf_time_strides="1,1,0,3,3",
             tdnnf_prefinal_dim=16)


def small(factor: int = 3, seed: int = 0, **kw) -> Tdnnf:
    """A small model with random output layers and batchnorm statistics (a trained model's
    shape: the outputs start at 0 otherwise), in eval mode."""
    torch.manual_seed(seed)
    opts = dataclasses.asdict(TdnnfOptions(**{**SMALL, "tdnnf_subsampling_factor": factor,
                                              **kw}))
    m = Tdnnf(13, 20, **opts)
    with torch.no_grad():
        for head in (m.chain, m.xent):
            head.output.weight.normal_()
            head.output.bias.normal_()
        for name, buf in m.named_buffers():
            buf.copy_(torch.rand_like(buf) + (0.5 if name.endswith("var") else -0.5))
    return m.eval()


def test_output_frames_context_and_subsampling_equal_the_full_rate_network():
    m = small(3)
    # tdnn1 (t-1..t+1) and TDNN-F strides 1,1,0,3,3: 1+1+1+0+3+3 frames each side
    assert (m.left_context, m.right_context, m.frame_subsampling_factor) == (9, 9, 3)
    x = torch.randn(2, 31, 13)
    chain, xent = m(x, torch.tensor([31, 31]), return_xent=True)
    assert chain.shape == xent.shape == (2, 11, 20)  # frames 0, 3, ..., 30
    assert not torch.allclose(chain, xent)
    assert m.output_lengths([31, 30, 1]).tolist() == [11, 10, 1]
    # the same weights run at every frame (factor 1, strides as dilations): every 3rd frame
    full = small(1)
    full.load_state_dict(m.state_dict())
    assert full(x).shape == (2, 31, 20)
    assert torch.allclose(full(x)[:, ::3], chain, atol=1e-5)
    # output frame k sees input frames 3k-9 .. 3k+9 and no others
    k = 5
    for t, changes in ((3 * k + 9, True), (3 * k + 10, False), (3 * k - 9, True),
                       (3 * k - 10, False)):
        y = x.clone()
        y[:, t] += 5.0
        assert bool((m(y)[:, k] - chain[:, k]).abs().max() > 1e-4) == changes, t


def test_padded_batch_as_the_trainer_calls_it_equals_each_utterance_alone():
    m = small(3, seed=1)
    lens = torch.tensor([40, 23, 5, 1])
    x = torch.randn(4, 40, 13)
    for b, n in enumerate(lens.tolist()):
        x[b, n:] = 0.0  # zero padding, as data.batch pads
    out = m(x, lens)  # train/loop.py: model(feats, batch.lengths)
    assert out.shape == (4, 14, 20)
    for b, n in enumerate(lens.tolist()):
        alone = m(x[b:b + 1, :n], torch.tensor([n]))
        assert alone.shape == (1, -(-n // 3), 20)
        assert torch.allclose(out[b, :alone.shape[1]], alone[0], atol=1e-5), b
    # training mode: the batchnorm statistics count the real frames only, so more padding
    # changes nothing (and return_state gives the trainer's (logits, None))
    m.train()
    m.orthonormal_every = 10 ** 9
    more = torch.cat([x, torch.zeros(4, 17, 13)], dim=1)
    a = m(x, lens)
    (b_out, state) = m(more, lens, return_state=True)
    assert state is None and b_out.shape == (4, 19, 20)
    assert torch.allclose(a, b_out[:, :14], atol=1e-5)


def _deviation(w: torch.Tensor, scale: float = -1.0) -> float:
    """|| P / a^2 - I ||_F / sqrt(rows), P = M M^T of the wide orientation of ``w``."""
    m = w.detach().reshape(w.shape[0], -1).double()
    if m.shape[0] > m.shape[1]:
        m = m.t()
    p = m @ m.t()
    a2 = float((p * p).sum() / p.trace()) if scale < 0 else scale ** 2
    eye = torch.eye(p.shape[0], dtype=p.dtype)
    return float(torch.linalg.norm(p / a2 - eye) / p.shape[0] ** 0.5)


def test_semi_orthogonal_constraint_drives_m_mt_to_a_scaled_identity():
    m = small(3, seed=2)
    weights = m.semi_orthogonal_weights()
    # each TDNN-F linear (bottleneck x 2 * dim; x dim for stride 0), prefinal-l, and the
    # linear of both prefinal layers (16 x 32, as Kaldi's)
    assert [tuple(w.reshape(w.shape[0], -1).shape) for w in weights] == [
        (8, 64), (8, 64), (8, 32), (8, 64), (8, 64), (16, 32), (16, 32), (16, 32)]
    before = [_deviation(w) for w in weights]
    assert min(before) > 0.2  # a random init is far from it
    for _ in range(30):
        m.constrain_orthonormal()
    after = [_deviation(w) for w in weights]
    assert max(after) < 1e-3, after
    # the floating scale moves M orthogonally to itself: its norm stays about the same
    w = torch.randn(12, 40)
    w0 = w.clone()
    constrain_orthonormal(w, -1.0)
    assert abs(float(w.norm() / w0.norm()) - 1.0) < 0.02
    # a fixed scale: M M^T -> scale^2 I; a tall matrix is constrained as its transpose
    # (from a start near it: Kaldi's update diverges from singular values far from the scale)
    for shape, scale in (((10, 30), 1.0), ((30, 10), 1.0), ((6, 2, 9), 0.5)):
        w = torch.randn(*shape)
        w *= scale / max(shape[0], w.numel() // shape[0]) ** 0.5
        d0 = _deviation(w, scale)
        for _ in range(60):
            constrain_orthonormal(w, scale)
        assert _deviation(w, scale) < 1e-3 < d0, shape


def test_training_forward_applies_the_constraint_every_n_steps():
    m = small(3, seed=3)
    m.train()
    assert m.orthonormal_every == 4
    x, lens = torch.randn(2, 12, 13), torch.tensor([12, 9])
    w = m.blocks[1].linear.weight
    for step in range(1, 9):
        old = w.detach().clone()
        m(x, lens)
        assert (not torch.equal(old, w.detach())) == (step % 4 == 0), step
    with torch.no_grad():  # not a training step
        old = w.detach().clone()
        for _ in range(4):
            m(x, lens)
    assert torch.equal(old, w.detach())
    off = small(3, seed=3, tdnnf_orthonormal_constraint=0.0).train()
    old = off.blocks[1].linear.weight.detach().clone()
    for _ in range(4):
        off(x, lens)
    assert torch.equal(old, off.blocks[1].linear.weight.detach())


def test_parameter_count_of_a_small_config():
    m = build_model({"model": "tdnnf", **SMALL}, 13, 20)
    d, bn, pre, out = 32, 8, 16, 20
    tdnn1 = 3 * 13 * d + d
    tdnnf = sum(k * d * bn + k * bn * d + d for k in (2, 2, 1, 2, 2))  # k: 1 for stride 0
    prefinal = d * pre
    head = (pre * d + d) + d * pre + (pre * out + out)
    want = tdnn1 + tdnnf + prefinal + 2 * head
    assert sum(p.numel() for p in m.parameters()) == want == 9352
    # batchnorm: statistics only (Kaldi's BatchNormComponent has no scale and offset)
    assert len(list(m.buffers())) == 2 * (1 + 5 + 2 * 2)
    # the output layers start at 0, as Kaldi's output-layer
    assert float(m(torch.randn(1, 7, 13)).detach().abs().max()) == 0.0


def test_dropout_is_continuous_shared_over_time_and_scheduled():
    d = SharedDropout(0.25).train()
    x = torch.ones(64, 48, 10)
    y = d(x)
    assert torch.all(y == y[:, :, :1])  # one scale per (row, dim) over time
    assert float(y.min()) >= 0.5 and float(y.max()) <= 1.5 and abs(float(y.mean()) - 1) < 0.05
    assert torch.equal(d.eval()(x), x)
    m = small(3).train()
    m.set_dropout(0.3)
    assert all(b.dropout.p == 0.3 for b in m.blocks)
    sched = "0,0@0.20,0.5@0.50,0"  # Kaldi's usual --trainer.dropout-schedule
    got = [dropout_schedule_value(sched, f) for f in (0.0, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)]
    assert got == pytest.approx([0.0, 0.0, 0.0, 0.25, 0.5, 0.25, 0.0])
    with pytest.raises(ConfigError, match="dropout schedule"):
        dropout_schedule_value("0,0.5@x,0", 0.5)


def test_dropout_schedule_per_epoch_and_models_without_dropout():
    m = small(3)
    sched = "0,0@0.20,0.5@0.50,0"
    got = [apply_dropout_schedule(m, sched, e, 4) for e in (1, 2, 3, 4)]  # at 1/8, 3/8, ...
    assert got == pytest.approx([0.0, 0.5 * 0.175 / 0.3, 0.375, 0.125])
    assert all(b.dropout.p == pytest.approx(0.125) for b in m.blocks)
    # the BLSTM schedules the dropout between its layers (0 in its conf included)
    blstm = build_model({"model": "blstm", "num_layers": 2, "hidden_size": 8, "dropout": 0.0},
                        5, 3)
    assert apply_dropout_schedule(blstm, "0,0.3", 2, 2) == pytest.approx(0.225)
    assert blstm.dropout.p == pytest.approx(0.225)
    lstm = build_model({"model": "lstm", "num_layers": 1, "hidden_size": 8}, 5, 3)
    with pytest.raises(ConfigError,
                       match=r"--dropout-schedule=0,0.3: the model \(Lstm\) has no dropout"):
        apply_dropout_schedule(lstm, "0,0.3", 1, 2)
    with pytest.raises(ConfigError, match="dropout schedule"):  # checked with the options
        TrainConfig(device="cpu", dropout_schedule="0,x")


def test_parameter_groups_kaldis_per_layer_l2_and_xent_rate():
    m = small(3, tdnnf_l2_regularize=0.03, tdnnf_output_l2_regularize=0.015,
              tdnnf_xent_lr_factor=0.5)
    opt = make_optimizer(m, TrainConfig(device="cpu", weight_decay=0.1), 0.002)
    groups = opt.param_groups
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in m.parameters())  # each parameter once
    assert [(g["weight_decay"], g["lr_factor"], g["lr"]) for g in groups] == [
        (0.03, 1.0, 0.002), (0.015, 1.0, 0.002), (0.015, 0.5, 0.001)]
    assert {id(p) for p in groups[2]["params"]} == {id(p) for p in m.xent.output.parameters()}
    set_learning_rate(opt, 0.0004)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.0004, 0.0004, 0.0002])
    # a model with no groups of its own: one group at --weight-decay
    blstm = build_model({"model": "blstm", "num_layers": 1, "hidden_size": 8}, 5, 3)
    (g,) = make_optimizer(blstm, TrainConfig(device="cpu", weight_decay=0.1), 0.1).param_groups
    assert g["weight_decay"] == 0.1 and g["lr"] == 0.1 and len(g["params"]) == len(
        list(blstm.parameters()))


def parser():  # the model options as train.py registers them
    p = make_parser("train.py", "test")
    p.add_config_file_option(*MODEL_CONFIG)
    add_options(p, model_options(), "model")
    return p


@pytest.mark.parametrize("name,context", [("tdnnf", 28), ("tdnnf_small", 12)])
def test_repo_tdnnf_configs_parse_and_build(name, context):
    conf = REPO / "conf" / "model" / f"{name}.conf"
    cfg = model_config_from_args(parser().parse_args([f"--model-config={conf}"]))
    assert cfg["model"] == "tdnnf" and cfg["tdnnf_subsampling_factor"] == 3
    json.dumps(cfg)
    m = build_model(cfg, 40, 30)
    assert m.left_context == m.right_context == context
    assert m(torch.zeros(1, 10, 40), torch.tensor([10])).shape == (1, 4, 30)


@pytest.mark.parametrize("argv,msg", [
    (["--tdnnf-bottleneck-dim=800"], "must be below --tdnnf-dim"),
    (["--tdnnf-time-strides=1,x"], "comma-separated integers"),
    (["--tdnnf-time-strides=1,-3"], "comma-separated integers"),
    (["--tdnnf-orthonormal-constraint=-0.5"], "floating"),
    (["--tdnnf-dropout=0.7"], "<= 0.5"),
])
def test_bad_tdnnf_options_are_config_errors(argv, msg):
    with pytest.raises(ConfigError, match=msg):
        model_config_from_args(parser().parse_args(["--model=tdnnf", *argv]))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_tdnnf_on_cuda_matches_cpu():
    m = small(3, seed=4)
    x, lens = torch.randn(3, 25, 13), torch.tensor([25, 17, 4])
    cpu = m(x, lens)
    gpu = m.cuda()(x.cuda(), lens.cuda())
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-4)
    w = torch.randn(8, 64)
    wc = w.cuda()
    constrain_orthonormal(w, -1.0)
    constrain_orthonormal(wc, -1.0)
    assert torch.allclose(wc.cpu(), w, atol=1e-5)
