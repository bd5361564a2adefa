"""Forward pass to scaled log-likelihoods: log-softmax minus scaled log-priors, chunked versus
whole-utterance forward, the input frame rate restored, on kaldi_digits' real features."""
from __future__ import annotations

import kaldiio
import numpy as np
import pytest
import torch

from hybridasr.data.dataset import UtteranceDataset
from hybridasr.features.transform import FeatureTransform
from hybridasr.decode.forward import ChunkOptions, forward_dataset, model_logits
from hybridasr.decode.loglikes import scaled_loglikes
from hybridasr.kaldi.io.table_writer import MatrixWriter
from hybridasr.errors import FormatError  # noqa: E402


class ConvModel(torch.nn.Module):
    """Context of 2 frames each side: chunked forward with overlap >= 2 is exact."""

    def __init__(self, dim, out):
        super().__init__()
        torch.manual_seed(0)
        self.c1 = torch.nn.Conv1d(dim, 16, 3, padding=1)
        self.c2 = torch.nn.Conv1d(16, out, 3, padding=1)

    def forward(self, x, lengths):
        return self.c2(torch.tanh(self.c1(x.transpose(1, 2)))).transpose(1, 2)


class BLSTM(torch.nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = torch.nn.LSTM(dim, 8, batch_first=True, bidirectional=True)
        self.out = torch.nn.Linear(16, out)

    def forward(self, x, lengths):
        return self.out(self.lstm(x)[0])


def test_scaled_loglikes_are_log_posteriors_minus_scaled_priors():
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    priors = np.log(np.array([0.5, 0.25, 0.25], np.float32))
    out = scaled_loglikes(logits, priors, prior_scale=0.5)
    logpost = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(out, logpost - 0.5 * priors, rtol=1e-6)
    assert out.dtype == np.float32
    # a disabled pdf (Kaldi nnet1: log-prior sqrt(FLT_MAX)) is never the best
    disabled = priors.copy()
    disabled[2] = np.sqrt(np.finfo(np.float32).max)
    assert scaled_loglikes(logits, disabled).argmax(1).tolist() == [1, 1]  # pdf 1: rarest left
    with pytest.raises(FormatError, match="2 log-priors for 3 outputs"):
        scaled_loglikes(logits, priors[:2])


def test_chunk_windows_cover_every_frame_once():
    for n, size, ov in [(10, 3, 1), (7, 7, 2), (5, 10, 0), (1, 1, 1)]:
        kept = [k for lo, hi, a, b in ChunkOptions(size, ov).windows(n) for k in range(a, b)]
        assert kept == list(range(n))
        for lo, hi, a, b in ChunkOptions(size, ov).windows(n):
            assert lo == max(0, a - ov) and hi == min(n, b + ov)


def test_chunked_forward_equals_whole_with_enough_overlap():
    x = np.random.default_rng(0).standard_normal((50, 13)).astype(np.float32)
    m = ConvModel(13, 5)
    whole = model_logits(m, x, torch.device("cpu"))
    chunked = model_logits(m, x, torch.device("cpu"), ChunkOptions(7, 2))
    np.testing.assert_allclose(chunked, whole, atol=1e-5)
    short = model_logits(m, x, torch.device("cpu"), ChunkOptions(7, 0))
    assert not np.allclose(short, whole, atol=1e-5)  # without overlap the edges differ
    b = BLSTM(13, 5)
    np.testing.assert_allclose(model_logits(b, x, torch.device("cpu"), ChunkOptions(25, 25)),
                               model_logits(b, x, torch.device("cpu")), atol=1e-5)


@pytest.mark.parametrize("subsample,delay", [(1, 0), (2, 1)])
def test_forward_dataset_real_features(kaldi_digits, monkeypatch, tmp_path, subsample, delay):
    monkeypatch.chdir(kaldi_digits)  # scp paths are relative to the experiment dir
    t = FeatureTransform(norm_means=True, delta_order=1, splice=1, subsample=subsample,
                         label_delay=delay)
    ds = UtteranceDataset.from_data_dir("data/test", transform=t)
    dim = t.output_dim(ds.feature_dim())
    priors = np.log(np.full(4, 0.25, np.float32))
    spec = f"ark,scp:{tmp_path}/ll.ark,{tmp_path}/ll.scp"
    with MatrixWriter(spec) as w:
        s = forward_dataset(ConvModel(dim, 4), ds, torch.device("cpu"), w.write, 4, priors)
    assert s.num_utts == len(ds) == 30
    got = dict(kaldiio.load_scp(f"{tmp_path}/ll.scp"))
    assert list(got) == ds.keys
    for utt in ds.keys[:5]:
        m = got[utt]
        assert m.shape == (ds.lengths[utt], 4)
        # rows are log-posteriors + log(4): they exponentiate to probabilities * 4
        np.testing.assert_allclose(np.exp(m).sum(1), 4.0, rtol=1e-4)
        if subsample == 2:
            np.testing.assert_array_equal(m[0], m[1])
    with pytest.raises(FormatError, match="gave 4 outputs, expected 5"):
        with MatrixWriter(f"ark:{tmp_path}/x.ark") as w:
            forward_dataset(ConvModel(dim, 4), ds, torch.device("cpu"), w.write, 5)
    assert not (tmp_path / "x.ark").exists()


def test_frame_error_rate_on_real_features(kaldi_digits, monkeypatch, tmp_path):
    from hybridasr.decode.frame_error import FrameErrors, frame_errors

    monkeypatch.chdir(kaldi_digits)
    lengths = UtteranceDataset.from_data_dir("data/test").lengths
    rng = np.random.default_rng(0)
    with kaldiio.WriteHelper(f"ark,scp:{tmp_path}/t.ark,{tmp_path}/t.scp") as w:
        for utt, n in list(lengths.items())[:6]:
            w[utt] = rng.integers(0, 4, n).astype(np.int32)
    t = FeatureTransform(norm_means=True, label_delay=2)
    ds = UtteranceDataset.from_data_dir("data/test", targets_scp=f"{tmp_path}/t.scp",
                                        transform=t)
    assert len(ds) == 6
    model = ConvModel(13, 4)
    fe = frame_errors(model, ds, torch.device("cpu"))
    expect = FrameErrors()
    for utt in ds:
        x, y = ds.load(utt)
        logits = model_logits(model, x, torch.device("cpu"))
        keep = y >= 0
        expect.errors += int((logits.argmax(1)[keep] != y[keep]).sum())
        expect.frames += int(keep.sum())
    assert (fe.errors, fe.frames, fe.utts) == (expect.errors, expect.frames, 6)
    # every label counted once (the delay's first 2 outputs per utterance have none)
    assert fe.frames == sum(ds.lengths.values())
    # as the decoder sees it: delay undone, one row per input frame, against the alignment
    fi = frame_errors(model, ds, torch.device("cpu"), at_input_rate=True)
    errors = 0
    for utt in ds:
        x, _ = ds.load(utt)
        logits = model_logits(model, x, torch.device("cpu"))[2:]  # output t+2 is frame t's
        errors += int((logits.argmax(1) != ds.raw_targets(utt)).sum())
    assert (fi.errors, fi.frames) == (errors, sum(ds.lengths.values()))
    assert fe.format().startswith(f"%FER {100 * fe.errors / fe.frames:.2f} [ {fe.errors} / ")
    with pytest.raises(FormatError, match="target pdf 3 but the model has 3 outputs"):
        frame_errors(ConvModel(13, 3), ds, torch.device("cpu"))
