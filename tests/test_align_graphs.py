"""Training graphs (hybridasr.align.training_graphs) against Kaldi's own alignments: the GMM's
alignment of an utterance (the transition-ids in the real ali.1.gz) must be a path of the
graph compiled from that utterance's transcript, for the monophone (kaldi_digits) and the
context-dependent tri1 system (kaldi_polish); another transcript's graph must reject it."""
from __future__ import annotations

import itertools

import pytest

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.training_graphs import (GraphOptions, Lexicon, TrainingGraphCompiler,
                                             accepts, graph_path_cost)
from hybridasr.errors import FormatError
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree


def _text(data_dir):
    out = {}
    for line in open(data_dir / "text", encoding="utf-8"):
        w = line.split()
        out[w[0]] = w[1:]
    return out


def _setup(kaldi_dir, sys_dir, mdl):
    tm = read_transition_model(str(kaldi_dir / sys_dir / mdl))
    lex = Lexicon(str(kaldi_dir / "data/lang"))
    return tm, lex, TrainingGraphCompiler(tm, read_tree(str(kaldi_dir / sys_dir / "tree")), lex)


@pytest.mark.parametrize("corpus,sys_dir,mdl,n", [("kaldi_digits", "exp/mono", "40.mdl", 30),
                                                  ("kaldi_polish", "exp/tri1", "35.mdl", 12)])
def test_gmm_alignment_is_a_path_of_the_training_graph(corpus, sys_dir, mdl, n, request):
    kaldi_dir = request.getfixturevalue(corpus)
    tm, lex, comp = _setup(kaldi_dir, sys_dir, mdl)
    text = _text(kaldi_dir / "data/train")
    pairs = [(u, a) for u, a in itertools.islice(iter_alignment_file(
        str(kaldi_dir / sys_dir / "ali.1.gz")), 4 * n) if u in text][:n]
    assert len(pairs) == n
    for (utt, ali), (other, other_ali) in zip(pairs, pairs[1:] + pairs[:1]):
        ids, _ = lex.word_ids(text[utt], utt)
        graph = comp.compile(ids, utt)
        assert accepts(graph, ali), utt
        if text[other] != text[utt]:
            assert not accepts(graph, other_ali), (utt, other)
        # the alignment's cost on the graph: finite, and the self-loop scale shows in it
        assert 0 <= graph_path_cost(graph, ali) < float("inf")


def test_path_cost_follows_the_scales(kaldi_digits):
    tm, lex, comp = _setup(kaldi_digits, "exp/mono", "40.mdl")
    utt, ali = next(iter_alignment_file(str(kaldi_digits / "exp/mono/ali.1.gz")))
    ids, _ = lex.word_ids(_text(kaldi_digits / "data/train")[utt])
    c01 = graph_path_cost(comp.compile(ids), ali)
    comp0 = TrainingGraphCompiler(tm, comp.tree, lex, GraphOptions(transition_scale=0.0,
                                                                   self_loop_scale=0.0))
    c0 = graph_path_cost(comp0.compile(ids), ali)
    comp1 = TrainingGraphCompiler(tm, comp.tree, lex, GraphOptions(transition_scale=1.0,
                                                                   self_loop_scale=1.0))
    c1 = graph_path_cost(comp1.compile(ids), ali)
    # with scales 1/1 the HMM part of the cost is -log of the product of the alignment's
    # transition probabilities; with 0/0 only the lexicon's costs are left
    hmm_cost = -float(tm.log_probs[ali].sum())
    assert c1 - c0 == pytest.approx(hmm_cost, rel=1e-4)
    assert c0 < c01 < c1


def test_oov_words_map_to_oov_int(kaldi_digits):
    lex = Lexicon(str(kaldi_digits / "data/lang"))
    ids, n = lex.word_ids(["one", "NOTAWORD", "two", "ALSONOT"], "u1")
    assert n == 2 and ids[1] == ids[3] == lex.oov_id
    assert ids[0] == lex.word2id["one"] and ids[2] == lex.word2id["two"]
    lex.oov_id = None
    with pytest.raises(FormatError, match="u1: word 'NOTAWORD' is not in"):
        lex.word_ids(["NOTAWORD"], "u1")


def test_tree_and_model_mismatch(kaldi_digits, kaldi_polish):
    tm = read_transition_model(str(kaldi_digits / "exp/mono/40.mdl"))
    with pytest.raises(FormatError, match="do not belong together"):
        TrainingGraphCompiler(tm, read_tree(str(kaldi_polish / "exp/tri1/tree")),
                              Lexicon(str(kaldi_digits / "data/lang")))
