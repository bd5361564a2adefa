"""One label delay: the training transform's ``--label-delay``, stored with the model and undone
at decoding; the frames it leaves without a label are out of the loss (the ignore index), never
given a repeated label. Trained on kaldi_digits' real features and GMM alignments."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hybridasr.data.config import DataConfig
from hybridasr.data.dataset import UtteranceDataset
from hybridasr.data.loader import make_batch_iterator
from hybridasr.decode.forward import (ChunkOptions, load_model_and_data, model_logits,
                                      to_input_rate)
from hybridasr.decode.frame_error import FrameErrors, frame_errors
from hybridasr.features.transform import IGNORE_INDEX, FeatureTransform, TransformOptions
from hybridasr.train.distributed import DistInfo
from hybridasr.train.loop import run_epoch

from train_helpers import load_pybin, make_tr_cv

DELAY = 5


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("delay"))


class DelayLine(torch.nn.Module):
    """What a network trained with a label delay of ``d`` output frames does, exactly: output
    t names the frame whose index is the input feature at output t - d (zeros before)."""

    def __init__(self, d, num_outputs):
        super().__init__()
        self.d, self.num_outputs = d, num_outputs

    def forward(self, x, lengths):
        idx = x[..., 0].round().long()
        T = idx.shape[1]
        idx = torch.cat([torch.full_like(idx[:, :min(self.d, T)], -1),
                         idx[:, :max(T - self.d, 0)]], dim=1)
        out = torch.zeros(*idx.shape, self.num_outputs)
        rows = idx >= 0
        out[rows, idx[rows]] = 1.0
        return out


@pytest.mark.parametrize("delay,subsample", [(DELAY, 1), (3, 2), (0, 3), (2, 1)])
def test_delay_then_undo_maps_each_output_to_its_own_frame(delay, subsample):
    """Features that name their own frame (feature = frame index) and labels alike: the
    training targets are every label, ``delay`` output frames late, after ``delay`` ignore
    labels (never a frame's label); a network that has learnt exactly those targets, forwarded
    for decoding, gives every input frame its own frame back (the first of its subsampling
    group), the last frames included."""
    t = FeatureTransform.from_dict({"label_delay": delay, "subsample": subsample,
                                    "norm_means": False})
    for T in (1, 4, 37, 62):
        frames = np.arange(T)
        y = t.targets(frames)
        n_out = t.output_length(T)
        assert len(y) == n_out == -(-T // subsample) + delay
        assert (y[:delay] == IGNORE_INDEX).all()
        # output t is trained on the label of output frame t - delay: input frame (t-d)*s
        np.testing.assert_array_equal(y[delay:], frames[::subsample])
        feats = frames[:, None].astype(np.float32)
        x = t(feats)
        net = DelayLine(delay, T)
        logits = model_logits(net, x, torch.device("cpu"))
        assert logits.shape == (n_out, T)
        np.testing.assert_array_equal(logits.argmax(1)[delay:], y[delay:])  # learnt exactly
        # decoding: each input frame gets its own frame's output
        out = to_input_rate(logits, t, T).argmax(1)
        np.testing.assert_array_equal(out, frames // subsample * subsample)
        # chunked forward (with enough context for the delay line) gives the same
        chunked = model_logits(net, x, torch.device("cpu"), ChunkOptions(7, delay))
        np.testing.assert_array_equal(chunked, logits)


def test_delayed_frames_are_out_of_the_loss(digits):
    """Batches of real targets with --label-delay: each row's first frames are the ignore
    index, then every label of the utterance; the loss counts exactly the frames with a label
    (a model's outputs on the others change nothing)."""
    tr, _, ali = digits
    c = DataConfig(transform=TransformOptions(label_delay=DELAY), seq_ordering="sorted",
                   max_frames=1000, num_workers=0)
    ds = UtteranceDataset.from_data_dir(str(tr), str(ali / "targets.scp"),
                                        FeatureTransform.from_options(c.transform))
    raw = {k: ds.raw_targets(k) for k in ds.keys}
    batches = list(make_batch_iterator(ds, c, epoch=0))
    for b in batches:
        for i, (k, n) in enumerate(zip(b.keys, b.lengths.tolist())):
            assert n == len(raw[k]) + DELAY
            assert (b.targets[i, :DELAY] == IGNORE_INDEX).all()
            np.testing.assert_array_equal(b.targets[i, DELAY:n].numpy(), raw[k])

    class Probe(torch.nn.Module):  # outputs depend on the frame's position only
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        def forward(self, x, lengths):
            B, T, _ = x.shape
            pos = torch.arange(T, dtype=torch.float32)[None, :, None].expand(B, T, 1)
            out = torch.zeros(B, T, 70)
            out[:, :, :1] = torch.where(pos < DELAY, self.scale, 0.0)
            return out

    info = DistInfo()
    a = run_epoch(Probe(0.0), batches, info, progress_every=0)
    b = run_epoch(Probe(50.0), batches, info, progress_every=0)
    assert a.frames == b.frames == sum(len(v) for v in raw.values())
    assert a.loss_sum == pytest.approx(b.loss_sum, rel=1e-9) and a.errors == b.errors


def _train(digits, exp, delay):
    mod = load_pybin("train")
    tr, cv, ali = digits
    # an MLP on 21 spliced frames: with the delay, the labelled frame is still in its window
    # with 5 frames either side (it sees frames t-5..t+15 for the label of frame t), so both
    # models see what a frame's label depends on; frame-shuffled, it trains in seconds
    args = ["--model=mlp", "--num-layers=1", "--hidden-size=128", "--activation=relu",
            "--dropout=0", "--splice=10", "--seq-ordering=frame_shuffle", "--max-frames=256",
            "--randomizer-size=100000", "--num-workers=0", "--optimizer=adam",
            "--learning-rate=0.002", "--lr-schedule=constant", "--max-iters=4",
            "--progress-every=0", "--num-threads=1", f"--label-delay={delay}",
            str(tr), str(cv), str(ali), str(ali), str(exp)]
    assert mod.main(args) == 0
    return exp / "final.nnet"


def test_delayed_model_is_aligned_with_the_features_after_the_undo(digits, tmp_path):
    """A model trained with --label-delay=5 and one without: the model file carries the delay,
    and after the decode-time undo its outputs line up with the features: its frame error
    against the undelayed alignment is the undelayed model's, and far below what the same
    outputs score without the undo (what an import-time delay used to give the decoder)."""
    tr, _, ali = digits
    scp = str(ali / "targets.scp")
    cpu = torch.device("cpu")
    fer = {}
    for delay in (0, DELAY):
        model, meta, ds = load_model_and_data(str(_train(digits, tmp_path / f"d{delay}", delay)),
                                              str(tr), cpu, scp)
        assert meta["transform"]["label_delay"] == delay  # stored with the model
        assert ds.transform.label_delay == delay
        fer[delay] = frame_errors(model, ds, cpu, at_input_rate=True)
        if delay:  # the same outputs without the undo, against the same targets
            no_undo = FeatureTransform.from_dict(dict(meta["transform"], label_delay=0))
            fer["no_undo"] = FrameErrors()
            for utt in ds:
                x, _ = ds.load(utt)
                y = ds.raw_targets(utt)
                fer["no_undo"].add(to_input_rate(model_logits(model, x, cpu), no_undo,
                                                 len(x))[:len(y)], y)
    assert fer[0].frames == fer[DELAY].frames == fer["no_undo"].frames == sum(ds.lengths.values())
    rates = {k: round(v.rate, 2) for k, v in fer.items()}
    print("frame error rates on the training set (%):", rates)
    assert rates[0] < 20.0, rates  # the models learnt the task
    # aligned: measured 0.0 to 0.2 points apart (train set, 3,700 frames, several settings);
    # 2 points leaves room for another machine's arithmetic and training trajectory while
    # staying far below the ~58 points of a 5-frame misalignment
    assert abs(rates[DELAY] - rates[0]) < 2.0, rates
    # misaligned by 5 frames (about one phone state sequence) without the undo
    assert rates["no_undo"] > rates[DELAY] + 40.0, rates
