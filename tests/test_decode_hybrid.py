"""A whole hybrid system without the training issue's code: a small MLP frame classifier
trained here (a few seconds) on kaldi_digits' train features and Kaldi's alignments
(exp/mono_ali), run over data/test with forward_dataset (what forward.py does: the feature
transform, log-softmax minus log-priors from the alignment's pdf counts), decoded with the
embedded decoder on the real graph: at most 5% WER (the issue's bar; Kaldi's GMM gets 0%)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

kaldiio = pytest.importorskip("kaldiio")
pytest.importorskip("kaldi_decoder")

from hybridasr.data.dataset import UtteranceDataset  # noqa: E402
from hybridasr.data.transform import FeatureTransform  # noqa: E402
from hybridasr.decode.decoder import DecodeOptions, MappedDecoder  # noqa: E402
from hybridasr.decode.forward import forward_dataset  # noqa: E402
from hybridasr.decode.graph import load_graph_dir  # noqa: E402
from hybridasr.decode.loglikes import load_log_priors  # noqa: E402
from hybridasr.decode.text_archive import read_text_archive  # noqa: E402
from hybridasr.decode.wer import compute_wer  # noqa: E402
from hybridasr.kaldi.transition_model import read_transition_model  # noqa: E402


class FrameMLP(torch.nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(dim, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, out))

    def forward(self, x, lengths):  # the models' interface: [B, T, D], [B] -> [B, T, P]
        return self.net(x)


def test_small_hybrid_model_decodes_test_set(kaldi_digits, monkeypatch, tmp_path):
    monkeypatch.chdir(kaldi_digits)  # the scp paths are relative to the experiment dir
    tm = read_transition_model("exp/mono_ali/final.mdl")
    transform = FeatureTransform(norm_means=True, delta_order=2, splice=4)
    train = UtteranceDataset.from_data_dir("data/train", transform=transform)
    with kaldiio.ReadHelper("ark:gunzip -c exp/mono_ali/ali.1.gz |") as r:
        alis = {k: np.asarray(a) for k, a in r}
    x = torch.from_numpy(np.concatenate([train.load(u)[0] for u in train]))
    y = torch.from_numpy(np.concatenate([tm.tid2pdf[alis[u]] for u in train])).long()
    assert len(x) == len(y) == sum(len(a) for a in alis.values())

    torch.manual_seed(0)
    model = FrameMLP(x.shape[1], tm.num_pdfs)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        idx = torch.randint(0, len(x), (512,), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x[idx], None), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5

    counts = np.bincount(y.numpy(), minlength=tm.num_pdfs)
    (tmp_path / "ali_train_pdf.counts").write_text(
        "[ " + " ".join(str(c) for c in counts) + " ]\n")
    log_priors = load_log_priors(str(tmp_path / "ali_train_pdf.counts"), tm.num_pdfs)
    assert np.sum(counts == 0) == np.sum(log_priors > 1e10)  # unseen pdfs disabled
    test = UtteranceDataset.from_data_dir("data/test", transform=transform)
    lls = {}
    summary = forward_dataset(model, test, torch.device("cpu"), lls.__setitem__, tm.num_pdfs,
                              log_priors)
    assert summary.num_utts == 30 == len(lls)

    graph = load_graph_dir("exp/mono/graph")
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=13, max_active=7000, min_active=200),
                        max_ilabel=graph.max_ilabel)
    hyps = {u: [graph.words[w] for w in dec.decode(ll, 0.1, u).words] for u, ll in lls.items()}
    stats = compute_wer(read_text_archive("data/test/text"), hyps)
    assert stats.num_words == 30 and stats.num_absent == 0
    assert stats.wer <= 5.0, stats.format()
