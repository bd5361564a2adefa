"""Viterbi alignment (hybridasr.align.viterbi, align_mapped): with the GMM's own
log-likelihoods (gmm_compute_likes.py on Kaldi's features) the alignment of kaldi_digits is
Kaldi's gmm-align-compiled output frame for frame; with 'oracle' log-likelihoods made from the
GMM alignment (monophone and tri1) the phones come back; failures are reported and skipped."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from hybridasr.align.align_mapped import align_mapped
from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.compare import phone_agreement
from hybridasr.align.training_graphs import Lexicon, TrainingGraphCompiler
from hybridasr.align.viterbi import AlignOptions, align_utterance
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.io.table_writer import MatrixWriter
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from train_helpers import load_pybin


def _oracle(tm, ali, rng):
    """Log-likelihoods favouring each frame's aligned pdf (plus noise)."""
    ll = rng.normal(-12.0, 1.0, size=(len(ali), tm.num_pdfs)).astype(np.float32)
    ll[np.arange(len(ali)), tm.tid2pdf[ali]] = 0.0
    return ll


@pytest.mark.parametrize("corpus,sys_dir,mdl,n", [("kaldi_digits", "exp/mono", "40.mdl", 20),
                                                  ("kaldi_polish", "exp/tri1", "35.mdl", 6)])
def test_oracle_loglikes_give_back_the_phones(corpus, sys_dir, mdl, n, request):
    kaldi_dir = request.getfixturevalue(corpus)
    tm = read_transition_model(str(kaldi_dir / sys_dir / mdl))
    lex = Lexicon(str(kaldi_dir / "data/lang"))
    comp = TrainingGraphCompiler(tm, read_tree(str(kaldi_dir / sys_dir / "tree")), lex)
    text = {ln.split()[0]: ln.split()[1:] for ln in open(kaldi_dir / "data/train/text",
                                                           encoding="utf-8")}
    rng = np.random.default_rng(0)
    same = total = 0
    done = 0
    for utt, ali in iter_alignment_file(str(kaldi_dir / sys_dir / "ali.1.gz")):
        if utt not in text:
            continue
        ids = lex.word_ids(text[utt])[0]
        ll = _oracle(tm, ali, rng)
        res = align_utterance(comp.compile(ids), tm, ll, AlignOptions(), utt)
        assert res.ok and len(res.alignment) == len(ali)
        # the compact graph (labels 1..K for the utterance's transition-ids) aligns the same
        graph, local2tid = comp.compile(ids, compact=True)
        assert len(local2tid) < tm.num_transition_ids
        same_res = align_utterance(graph, tm, ll, AlignOptions(), utt, local2tid)
        assert np.array_equal(same_res.alignment, res.alignment)
        assert same_res.cost == pytest.approx(res.cost, rel=1e-5)
        same += phone_agreement(tm, ali, res.alignment) * len(ali)
        total += len(ali)
        done += 1
        if done == n:
            break
    assert same / total > 0.99


def test_gmm_loglikes_reproduce_kaldis_alignment(kaldi_digits, tmp_path, monkeypatch):
    monkeypatch.chdir(kaldi_digits)  # the scp paths are relative to the Kaldi dir
    likes = tmp_path / "gmm.ark"
    assert load_pybin("gmm_compute_likes").main(
        ["exp/mono_ali/final.mdl", "data/train", f"ark:{likes}"]) == 0
    ali_out = tmp_path / "ali.1.gz"
    rep = align_mapped("exp/mono_ali/tree", "exp/mono/40.mdl", "data/lang", f"ark:{likes}",
                       "data/train/text", f"ark:| gzip -c > {ali_out}")
    assert rep.utterances == rep.aligned == 120 and not rep.failed and rep.oov_words == 0
    ours = dict(read_int_vectors(f"ark:gunzip -c {ali_out} |"))
    kaldi = dict(iter_alignment_file("exp/mono_ali/ali.1.gz"))
    assert ours.keys() == kaldi.keys()
    assert all(np.array_equal(ours[u], kaldi[u]) for u in kaldi)  # every frame, every utterance


def test_failures_are_reported_and_skipped(kaldi_digits, tmp_path):
    tm = read_transition_model(str(kaldi_digits / "exp/mono/40.mdl"))
    rng = np.random.default_rng(1)
    alis = list(itertools.islice(iter_alignment_file(str(kaldi_digits / "exp/mono/ali.1.gz")), 4))
    likes = tmp_path / "ll.ark"
    with MatrixWriter(f"ark:{likes}") as w:
        for i, (utt, ali) in enumerate(alis):
            ll = _oracle(tm, ali, rng)
            w.write(utt, ll[:2] if i == 1 else ll)  # 2 frames: too short for any path
    text = tmp_path / "text"
    lines = open(kaldi_digits / "data/train/text", encoding="utf-8").read().splitlines()
    keep = {u for u, _ in alis[:3]}  # the 4th has no transcript
    text.write_text("".join(ln + "\n" for ln in lines if ln.split()[0] in keep) +
                    f"{alis[0][0]}x one\n", encoding="utf-8")
    report = tmp_path / "report.json"
    out = tmp_path / "ali.ark"
    assert load_pybin("align_mapped").main(
        ["--beam=10", "--retry-beam=40", f"--report={report}",
         str(kaldi_digits / "exp/mono/tree"), str(kaldi_digits / "exp/mono/40.mdl"),
         str(kaldi_digits / "data/lang"), f"ark:{likes}", str(text), f"ark:{out}"]) == 0
    rep = json.loads(report.read_text())
    assert rep["aligned"] == 2 and rep["failed"] == [alis[1][0]]
    assert rep["no_transcript"] == [alis[3][0]] and rep["retried"] == 1
    got = dict(read_int_vectors(f"ark:{out}"))
    assert sorted(got) == sorted([alis[0][0], alis[2][0]])


def test_reordered_alignment_with_self_loops_only_at_the_end(kaldi_digits):
    """An alignment whose only self-loops follow the utterance's last transition (what a
    network's alignment can be): reordered by Kaldi's IsReordered (it looks at the ends), so
    it splits into phones (SplitToPhones)."""
    from hybridasr.align.phones import split_to_phones

    tm = read_transition_model(str(kaldi_digits / "exp/mono/40.mdl"))
    utt, ali = next(iter_alignment_file(str(kaldi_digits / "exp/mono/ali.1.gz")))
    phone = int(tm.tid2phone[ali[len(ali) // 2]])
    fwd = [t for t in range(1, tm.num_transition_ids + 1) if tm.tid2phone[t] == phone
           and not tm.tid_is_self_loop[t] and tm.tid2dest_state[t] == tm.tid2hmm_state[t] + 1]
    last = fwd[-1]
    loop = tm.self_loop_of(int(tm.tid2tstate[last]))
    seq = np.array(fwd + [loop] * 3, dtype=np.int32)
    ends, ok = split_to_phones(tm, seq)
    assert ok and ends.tolist() == [len(seq)]
