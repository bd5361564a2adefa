"""Full-sum (Baum-Welch) training: the forward-backward over real training graphs against
brute-force enumeration of every path and against finite differences, batched utterances of
different lengths, utterances too short for their graph, and ``--objective=fullsum`` training
on kaldi_digits' real features without any alignment's targets mattering."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from train_helpers import load_pybin, make_tr_cv


@pytest.fixture(scope="module")
def compiler(kaldi_digits):
    from hybridasr.align.training_graphs import Lexicon, TrainingGraphCompiler
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree

    tm = read_transition_model(str(kaldi_digits / "exp/mono/40.mdl"))
    tree = read_tree(str(kaldi_digits / "exp/mono/tree"))
    lex = Lexicon(str(kaldi_digits / "data/lang"))
    return tm, lex, TrainingGraphCompiler(tm, tree, lex)


def graph_of(compiler, words):
    from hybridasr.graph.forward_backward import pdf_graph

    tm, lex, comp = compiler
    ids, _ = lex.word_ids(words)
    fst, local2tid = comp.compile(ids, compact=True)
    return pdf_graph(fst, tm.tid2pdf[local2tid], " ".join(words))


def test_forward_backward_equals_brute_force_on_real_training_graphs(compiler):
    from hybridasr.graph.forward_backward import brute_force, forward_backward, unreachable

    tm = compiler[0]
    one, two_one = graph_of(compiler, ["one"]), graph_of(compiler, ["two", "one"])
    # "one": a word with two pronunciations (hh w ah n / w ah n) and optional silence
    assert one.min_frames() == 9 and two_one.min_frames() == 15
    torch.manual_seed(0)
    scores = torch.log_softmax(torch.randn(3, 13, tm.num_pdfs, dtype=torch.float64), -1)
    lengths = [11, 13, 13]  # "one" in 11 frames, "one" in 13, "two one" in 13: too short
    logz, gamma = forward_backward([one, one, two_one], scores, lengths)
    for b in range(2):
        want_z, want_gamma = brute_force(one, scores[b, :lengths[b]].numpy())
        assert float(logz[b]) == pytest.approx(want_z, abs=1e-9)
        np.testing.assert_allclose(gamma[b, :lengths[b]].numpy(), want_gamma, atol=1e-9)
        assert float(gamma[b, lengths[b]:].abs().sum()) == 0.0  # padding
        # each frame's occupations sum to one
        np.testing.assert_allclose(gamma[b, :lengths[b]].sum(-1).numpy(), 1.0, atol=1e-9)
    assert unreachable(logz).tolist() == [False, False, True]
    assert float(gamma[2].abs().sum()) == 0.0


def test_gradient_is_softmax_minus_occupations(compiler):
    """d(-log Z)/d logits = softmax - gamma, checked by central differences of log Z."""
    from hybridasr.graph.forward_backward import forward_backward

    tm = compiler[0]
    g = graph_of(compiler, ["two", "one"])
    T, P = 18, tm.num_pdfs
    torch.manual_seed(1)
    logits = torch.randn(1, T, P, dtype=torch.float64)

    def neg_logz(x):
        return -float(forward_backward([g], torch.log_softmax(x, -1), [T])[0][0])

    _, gamma = forward_backward([g], torch.log_softmax(logits, -1), [T])
    analytic = torch.softmax(logits, -1) - gamma
    rng = np.random.default_rng(2)
    used = sorted(set(g.pdf.tolist()))
    for _ in range(12):
        t, p = int(rng.integers(T)), int(rng.choice(used + [0, P - 1]))
        eps = 1e-5
        up, down = logits.clone(), logits.clone()
        up[0, t, p] += eps
        down[0, t, p] -= eps
        numeric = (neg_logz(up) - neg_logz(down)) / (2 * eps)
        assert numeric == pytest.approx(float(analytic[0, t, p]), abs=1e-6)


def test_objective_refuses_batches_that_cut_utterances():
    from hybridasr.data.config import DataConfig
    from hybridasr.errors import ConfigError
    from hybridasr.train.objectives import ObjectiveOptions, check_objective

    opts = ObjectiveOptions(objective="fullsum", fullsum_model_dir="exp/flat/mono",
                            fullsum_lang="data/lang")
    check_objective(opts, DataConfig(seq_ordering="laplace:4").strategy, False)
    with pytest.raises(ConfigError, match="frame_shuffle"):
        check_objective(opts, DataConfig(seq_ordering="frame_shuffle").strategy, False)
    with pytest.raises(ConfigError, match="--chunking"):
        check_objective(opts, DataConfig(seq_ordering="laplace:4").strategy, True)
    with pytest.raises(ConfigError, match="--fullsum-lang"):
        check_objective(ObjectiveOptions(objective="fullsum", fullsum_model_dir="exp/flat/mono"),
                        DataConfig(seq_ordering="laplace:4").strategy, False)


def test_fullsum_training_learns_alignments_without_targets(tmp_path, kaldi_digits):
    """A BLSTM trained with --objective=fullsum on kaldi_digits, its targets deliberately
    wrong (every frame pdf 0: they may only give frame counts), lowers its cv loss, and its
    Viterbi alignment puts more frames on the GMM alignment's phones than an equal alignment
    does."""
    from hybridasr.kaldi.io.table_writer import IntVectorWriter
    from hybridasr.tree.model import init_mono

    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path)
    # targets that say nothing: pdf 0 everywhere, the real frame counts
    lengths = dict(line.split() for line in open(ali / "target_lengths", encoding="utf-8"))
    bogus = tmp_path / "bogus"
    bogus.mkdir()
    for name in ("num_pdfs", "target_lengths"):
        (bogus / name).write_text((ali / name).read_text())
    with IntVectorWriter(f"ark,scp:{bogus}/targets.ark,{bogus}/targets.scp") as w:
        for utt, n in lengths.items():
            w.write(utt, np.zeros(int(n), np.int32))
    mono = tmp_path / "mono"
    mono.mkdir()
    lang = kaldi_digits / "data/lang"
    init_mono(str(lang / "topo"), str(mono / "final.mdl"), str(mono / "tree"),
              shared_phones=str(lang / "phones/sets.int"))
    exp = tmp_path / "fullsum"
    argv = ["--model=blstm", "--num-layers=2", "--hidden-size=64", "--dropout=0",
            "--seq-ordering=laplace:4", "--max-frames=2000", "--num-workers=0",
            "--learning-rate=0.004", "--max-iters=4", "--min-batches-per-epoch=60", "--progress-every=0",
            "--num-threads=1", "--objective=fullsum", f"--fullsum-model-dir={mono}",
            f"--fullsum-lang={lang}", "--fullsum-prior-scale=0.5",
            str(tr), str(cv), str(bogus), str(bogus), str(exp)]
    assert load_pybin("train").main(argv) == 0
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert min(x["cv_loss"] for x in h[1:] if x["accepted"]) < 0.5 * h[0]["cv_loss"], h
    assert h[-1]["cv_fer"] < 0.5 < h[0]["cv_fer"], h  # against gamma's best pdf

    # its Viterbi alignment against the GMM's, on the phones
    from hybridasr.align.compare import compare_alignment_dirs
    from hybridasr.align.training_graphs import Lexicon, TrainingGraphCompiler
    from hybridasr.align.viterbi import AlignOptions, align_utterance
    from hybridasr.decode.forward import forward_dataset, load_model_and_data
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.kaldi.tree import read_tree
    from hybridasr.kaldi.io.table import read_text_archive
    from hybridasr.kaldi.io.table_writer import IntVectorWriter as W

    model, meta, data = load_model_and_data(str(exp / "final.nnet"), str(tr),
                                            torch.device("cpu"))
    lls = {}
    forward_dataset(model, data, torch.device("cpu"), lls.__setitem__, meta["num_pdfs"], None)
    tm = read_transition_model(str(mono / "final.mdl"))
    lex = Lexicon(str(lang))
    comp = TrainingGraphCompiler(tm, read_tree(str(mono / "tree")), lex)
    text = read_text_archive(str(tr / "text"))
    out = tmp_path / "ali_fullsum"
    out.mkdir()
    for f in ("final.mdl", "tree"):
        (out / f).write_bytes((mono / f).read_bytes())
    with W(f"ark:|gzip -c > {out}/ali.1.gz") as w:
        for utt, ll in lls.items():
            g, l2t = comp.compile(lex.word_ids(text[utt])[0], utt, compact=True)
            res = align_utterance(g, tm, ll, AlignOptions(), utt, l2t)
            assert res.ok, utt
            w.write(utt, res.alignment)
    (out / "num_jobs").write_text("1\n")
    got = compare_alignment_dirs(str(out), str(kaldi_digits / "exp/mono_ali")).summary()
    assert got["utterances"] == len(lls) > 80
    assert got["phone_agreement"] > 55.0, got


def test_unknown_words_are_looked_up_normalised(kaldi_polish):
    """kaldi_polish's transcripts are the authors' text (capitals, punctuation): 2,011 of the
    6,638 training words are not in words.txt as they stand, 7 once lower-cased and stripped
    of punctuation (89 tokens are punctuation alone)."""
    from hybridasr.align.training_graphs import Lexicon
    from hybridasr.kaldi.io.table import read_text_archive

    lang = str(kaldi_polish / "data/lang")
    text = read_text_archive(str(kaldi_polish / "data/train/text"))
    plain, norm = Lexicon(lang), Lexicon(lang, normalize_unknown=True)
    oov_plain = sum(plain.word_ids(w, u)[1] for u, w in text.items())
    oov_norm = sum(norm.word_ids(w, u)[1] for u, w in text.items())
    assert (oov_plain, oov_norm, norm.dropped) == (2011, 7, 89)
    assert norm.normalized == 2011 - 7 - 89
    ids, n_oov = norm.word_ids(["Nie", ",", "tylko,", "„Boga”", "Xqzzy"], "u1")
    words = {i: w for w, i in norm.word2id.items()}
    assert [words[i] for i in ids] == ["nie", "tylko", "boga", "<UNK>"] and n_oov == 1
