"""The embedded decoder on the real Kaldi graph of kaldi_digits (exp/mono/graph/HCLG.fst, const
format) with the alignment model's TransitionModel: pseudo log-likelihoods built from Kaldi's
own alignments of data/train (exp/mono_ali/ali.1.gz) must decode to the reference text."""
from __future__ import annotations

import subprocess
import sys

import kaldiio
import numpy as np
import pytest

from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
from hybridasr.decode.graph import load_graph_dir
from hybridasr.decode.pseudo_loglikes import pseudo_loglikes
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.decode.wer import compute_wer
from hybridasr.errors import FormatError
from hybridasr.kaldi import transition_model as tm_mod
from hybridasr.kaldi.io.table_writer import ArkScpWriter


@pytest.fixture(scope="module")
def digits(kaldi_digits):
    tm = tm_mod.read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    graph = load_graph_dir(str(kaldi_digits / "exp/mono/graph"))
    alis = {}
    with kaldiio.ReadHelper(f"ark:gunzip -c {kaldi_digits}/exp/mono_ali/ali.1.gz |") as r:
        for key, ali in r:
            alis[key] = np.asarray(ali)
    return tm, graph, alis


def test_pseudo_loglikes_decode_to_reference(digits, kaldi_digits):
    tm, graph, alis = digits
    assert tm.num_pdfs == graph.num_pdfs == 70 and graph.max_ilabel <= tm.num_transition_ids
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=13, max_active=7000, min_active=200),
                        max_ilabel=graph.max_ilabel)
    hyps = {}
    for key, ali in alis.items():
        r = dec.decode(pseudo_loglikes(ali, tm.tid2pdf, tm.num_pdfs), acoustic_scale=0.1)
        assert r.ok and r.reached_final, key
        assert r.acoustic_cost == pytest.approx(0.0, abs=1e-4), key  # every frame's pdf matched
        assert np.array_equal(tm.tid2pdf[r.alignment], tm.tid2pdf[ali]), key
        hyps[key] = [graph.words[w] for w in r.words]
    refs = read_text_archive(str(kaldi_digits / "data/train/text"))
    assert len(hyps) == len(refs) == 120
    stats = compute_wer(refs, hyps)
    assert (stats.word_errs, stats.num_words, stats.sent_errs) == (0, 120, 0)


def test_shuffled_frames_do_not_decode_to_reference(digits, kaldi_digits):
    # the check above is not vacuous: the same frames in reverse order give other words
    tm, graph, alis = digits
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs, DecodeOptions(beam=13))
    refs = read_text_archive(str(kaldi_digits / "data/train/text"))
    wrong = 0
    for key in list(alis)[:20]:
        r = dec.decode(pseudo_loglikes(alis[key][::-1], tm.tid2pdf, tm.num_pdfs), 0.1)
        wrong += [graph.words[w] for w in r.words] != refs[key]
    assert wrong >= 10


def test_model_output_dim_mismatch_is_reported(digits):
    tm, graph, alis = digits
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs)
    key = next(iter(alis))
    with pytest.raises(FormatError, match=f"{key}.*71\\).*70 pdfs"):
        dec.decode(np.zeros((len(alis[key]), 71), np.float32), utt=key)


def test_decode_faster_mapped_tool(digits, kaldi_digits, tmp_path, repo_dir, env_with_path):
    tm, graph, alis = digits
    keys = sorted(alis)[:12]
    with ArkScpWriter(str(tmp_path / "ll.ark"), str(tmp_path / "ll.scp")) as w:
        for key in keys:
            w.write(key, pseudo_loglikes(alis[key], tm.tid2pdf, tm.num_pdfs))
        w.write("too_short", pseudo_loglikes(alis[keys[0]][:0], tm.tid2pdf, tm.num_pdfs))
    cmd = [sys.executable, str(repo_dir / "pybin/decode_faster_mapped.py"), "--beam=13",
           "--max-active=7000", f"--word-symbol-table={kaldi_digits}/exp/mono/graph/words.txt",
           str(kaldi_digits / "exp/mono_ali/final.mdl"),
           str(kaldi_digits / "exp/mono/graph/HCLG.fst"), f"scp:{tmp_path}/ll.scp",
           f"ark,t:{tmp_path}/hyp.tra", f"ark,t:{tmp_path}/ali.txt"]
    p = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    hyp = read_text_archive(str(tmp_path / "hyp.tra"))
    assert list(hyp) == keys + ["too_short"] and hyp["too_short"] == []
    words = {v: k for k, v in graph.words.items()}
    refs = read_text_archive(str(kaldi_digits / "data/train/text"))
    assert all(hyp[k] == [str(words[w]) for w in refs[k]] for k in keys)
    ali = read_text_archive(str(tmp_path / "ali.txt"))
    assert len(ali[keys[0]]) == len(alis[keys[0]])
    assert "1 failed" in p.stderr and "jackson_0_0 zero" in p.stderr
    # a loglikes matrix with the wrong number of columns: a clear error, exit 1
    with ArkScpWriter(str(tmp_path / "bad.ark"), str(tmp_path / "bad.scp")) as w:
        w.write("u1", np.zeros((5, 69), np.float32))
    cmd[-3:] = [f"scp:{tmp_path}/bad.scp", f"ark,t:{tmp_path}/bad.tra"]
    p = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "u1" in p.stderr and "70 pdfs" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "bad.tra").exists()
