"""The whole chain of Kaldi's lang and graph tools without Kaldi, run as a user runs it, on the
real kaldi_polish dir: utils/prepare_lang.sh on data/local/dict, utils/format_lm.sh with the
dir's own ARPA (data/local/tmp/lm.arpa) and utils/mkgraph.sh with the tri1 tree and model
rebuild Kaldi's exp/tri1/graph with its exact number of states and arcs; and a trigram
estimated from data/local/corpus.txt (utils/make_ngram_lm.sh) gives a graph that decodes the
test set with the GMM's likelihoods."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from test_graph_mkgraph import _decode_words, const, model_dir


def run(cmd, env, cwd):
    r = subprocess.run(["bash"] + [str(c) for c in cmd], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{cmd[0]}: {r.stderr[-2000:]}"
    return r


@pytest.fixture(scope="module")
def polish_lang(kaldi_polish, repo_dir, tmp_path_factory):
    """data/lang made by utils/prepare_lang.sh from the dir's dict (no Kaldi)."""
    import os

    env = dict(os.environ, PATH=f"{repo_dir}/utils:{repo_dir}/pybin:" + os.environ["PATH"])
    work = tmp_path_factory.mktemp("polish_chain")
    run([repo_dir / "utils/prepare_lang.sh", kaldi_polish / "data/local/dict", "<UNK>",
         "data/local/lang", "data/lang_nolm"], env, work)
    return work, env


def test_prepare_lang_format_lm_mkgraph_rebuild_kaldis_tri1_graph(polish_lang, kaldi_polish,
                                                                   repo_dir):
    work, env = polish_lang
    run([repo_dir / "utils/format_lm.sh", "data/lang_nolm",
         kaldi_polish / "data/local/tmp/lm.arpa", kaldi_polish / "data/local/dict/lexicon.txt",
         "data/lang"], env, work)
    mdir = model_dir(work, kaldi_polish, "tri1", "35.mdl")
    run([repo_dir / "utils/mkgraph.sh", "data/lang", mdir, "exp/tri1/graph"], env, work)
    ours = const(work / "exp/tri1/graph/HCLG.fst")
    kaldi = const(kaldi_polish / "exp/tri1/graph/HCLG.fst")
    assert (len(ours.states), len(ours.arcs)) == (len(kaldi.states), len(kaldi.arcs)) == \
        (28860, 67373)
    for col in (0, 1):
        assert np.array_equal(np.sort(ours.arcs[:, col]), np.sort(kaldi.arcs[:, col]))


def test_estimated_trigram_graph_decodes_the_test_set(polish_lang, kaldi_polish, repo_dir):
    from hybridasr.decode.wer import compute_wer
    from hybridasr.kaldi.io.table import read_text_archive
    from test_decode_pdf_graph import gmm_loglikes

    work, env = polish_lang
    run([repo_dir / "utils/make_ngram_lm.sh", "--order=3", "--vocab=data/lang_nolm/words.txt",
         kaldi_polish / "data/local/corpus.txt", "data/local/lm3.arpa.gz"], env, work)
    run([repo_dir / "utils/format_lm.sh", "data/lang_nolm", "data/local/lm3.arpa.gz",
         kaldi_polish / "data/local/dict/lexicon.txt", "data/lang_lm3"], env, work)
    assert (work / "data/lang_lm3/G.fst").stat().st_size > 0
    mdir = work / "kaldi_polish_tri1"
    if not mdir.exists():
        model_dir(work, kaldi_polish, "tri1", "35.mdl")
    run([repo_dir / "utils/mkgraph.sh", "data/lang_lm3", mdir, "exp/tri1/graph_lm3"], env, work)
    # --remove-oov: G's paths through <UNK> (the trigram's stand-in for words outside the
    # lexicon) are gone from HCLG; without it they are there
    run([repo_dir / "utils/mkgraph.sh", "--remove-oov", "data/lang_lm3", mdir,
         "exp/tri1/graph_lm3_nooov"], env, work)
    oov = int((work / "data/lang_lm3/oov.int").read_text())
    assert (const(work / "exp/tri1/graph_lm3/HCLG.fst").arcs[:, 1] == oov).sum() > 0
    assert (const(work / "exp/tri1/graph_lm3_nooov/HCLG.fst").arcs[:, 1] == oov).sum() == 0
    tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 10)
    hyps = {u: w for u, (w, _) in _decode_words(work / "exp/tri1/graph_lm3", tm, lls).items()}
    refs = read_text_archive(str(kaldi_polish / "data/test/text"))
    stats = compute_wer({u: refs[u] for u in hyps}, hyps)
    assert stats.num_words == 152 and len(hyps) == 10
    # Kaldi's unigram graph scores 63.16% here; the trigram (whose text holds the test
    # sentences, as the dir's corpus does) must do clearly better than that
    print(f"trigram graph WER {100 * stats.word_errs / stats.num_words:.2f}% "
          f"[{stats.word_errs} / {stats.num_words}]")
    assert stats.word_errs / stats.num_words < 0.5, stats
