"""GMM-free start: the toolkit's own monophone model (init_mono.py, as
gmm-init-mono), the transition model of any tree, the equal alignment (align_equal.py, as
align-equal-compiled), and the default recipe with ``--ali none`` on a tiny Kaldi dir with only
a dict dir: 10 utterances of one speaker, one transcript with a word outside the lexicon (mapped
to the OOV entry) and one too long for its audio (skipped and counted)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hybridasr.align.equal_align import align_equal_compiled, equal_align, utterance_rng
from hybridasr.kaldi.gmm_model import read_gmm_model
from hybridasr.align.training_graphs import Lexicon, TrainingGraphCompiler, accepts
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.io.matrix_lengths import feat_lengths
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.kaldi.transition_model import read_transition_model, transition_model_to_bytes
from hybridasr.kaldi.tree import read_tree
from hybridasr.tree.model import build_transition_model, init_mono, read_topology
from kaldi_shapes import make_data_dir
from test_recipe_e2e import make_recipe_copy


@pytest.mark.parametrize("name", ["kaldi_digits", "kaldi_polish"])
def test_init_mono_is_gmm_init_mono(name, shared_dir, tmp_path):
    """The tree is byte for byte Kaldi's mono tree; the model file is 0.mdl's TransitionModel
    (tuples, probabilities, layout) without the GMM."""
    src = shared_dir / "data" / name
    lang = src / "data" / "lang"
    tm = init_mono(str(lang / "topo"), str(tmp_path / "final.mdl"), str(tmp_path / "tree"),
                   shared_phones=str(lang / "phones" / "sets.int"))
    assert (tmp_path / "tree").read_bytes() == (src / "exp/mono/tree").read_bytes()
    kaldi0 = read_transition_model(str(src / "exp/mono/0.mdl"))
    assert (tmp_path / "final.mdl").read_bytes() == transition_model_to_bytes(kaldi0)
    kaldi40 = read_transition_model(str(src / "exp/mono/40.mdl"))
    assert np.array_equal(tm.tuples, kaldi40.tuples)
    assert tm.num_pdfs == read_tree(str(src / "exp/mono/tree")).num_pdfs


def test_transition_model_of_a_triphone_tree(kaldi_polish):
    """build_transition_model(tri1's tree) gives the transition-states of tri1's 35.mdl."""
    topo = read_topology(str(kaldi_polish / "data/lang/topo"))
    tm = build_transition_model(read_tree(str(kaldi_polish / "exp/tri1/tree")), topo)
    kaldi = read_transition_model(str(kaldi_polish / "exp/tri1/35.mdl"))
    assert np.array_equal(tm.tuples, kaldi.tuples)
    assert tm.num_transition_ids == kaldi.num_transition_ids == 9588


def test_init_mono_names_phones_outside_the_sets(kaldi_digits, tmp_path):
    sets = tmp_path / "sets.int"
    lines = (kaldi_digits / "data/lang/phones/sets.int").read_text().splitlines()
    sets.write_text("\n".join(lines[1:]) + "\n")  # the silence set left out
    dropped = lines[0].split()
    with pytest.raises(FormatError, match=r"phones \[" + dropped[0]):
        init_mono(str(kaldi_digits / "data/lang/topo"), str(tmp_path / "m"),
                  str(tmp_path / "t"), shared_phones=str(sets))
    assert not (tmp_path / "m").exists() and not (tmp_path / "t").exists()


def _digits_mono(kaldi_digits, tmp_path):
    lang = kaldi_digits / "data/lang"
    tm = init_mono(str(lang / "topo"), str(tmp_path / "final.mdl"), str(tmp_path / "tree"),
                   shared_phones=str(lang / "phones/sets.int"))
    compiler = TrainingGraphCompiler(tm, read_tree(str(tmp_path / "tree")), Lexicon(str(lang)))
    return tm, compiler


def test_equal_alignment_of_real_utterances(kaldi_digits, tmp_path):
    """Every training utterance of kaldi_digits: as many transition-ids as feature frames, a
    path of its training graph, the frames shared equally (each HMM state of the path gets
    the same number of frames, give or take one), the same on every run."""
    tm, compiler = _digits_mono(kaldi_digits, tmp_path)
    lex = compiler.lexicon
    text = read_text_archive(str(kaldi_digits / "data/train/text"))
    scp = tmp_path / "feats.scp"  # the shared dir's scp holds paths relative to it
    scp.write_text("".join(f"{u} {kaldi_digits / p}\n" for u, p in (
        line.split() for line in (kaldi_digits / "data/train/feats.scp").read_text().splitlines())))
    lengths = feat_lengths(f"scp:{scp}")
    rep = align_equal_compiled(str(tmp_path / "tree"), str(tmp_path / "final.mdl"),
                               str(kaldi_digits / "data/lang"), f"scp:{scp}",
                               str(kaldi_digits / "data/train/text"), f"ark:{tmp_path}/ali.ark")
    assert rep.aligned == rep.utterances == 120 and not rep.too_short
    alis = dict(read_int_vectors(f"ark:{tmp_path}/ali.ark"))
    assert set(alis) == set(lengths)
    spreads = []
    for utt, ali in alis.items():
        assert len(ali) == lengths[utt]
        graph = compiler.compile(lex.word_ids(text[utt], utt)[0], utt)
        assert accepts(graph, ali), utt
        # frames per visit of an HMM state: a forward transition-id and its self-loops
        starts = np.flatnonzero(~tm.tid_is_self_loop[ali])
        spreads.append(np.ptp(np.diff(np.append(starts, len(ali)))))
    assert max(spreads) <= 1
    rep2 = align_equal_compiled(str(tmp_path / "tree"), str(tmp_path / "final.mdl"),
                                str(kaldi_digits / "data/lang"), f"scp:{scp}",
                                str(kaldi_digits / "data/train/text"), f"ark:{tmp_path}/b.ark")
    assert rep2.to_dict() == rep.to_dict()
    assert (tmp_path / "b.ark").read_bytes() == (tmp_path / "ali.ark").read_bytes()


def test_equal_alignment_too_short_and_seeded(kaldi_digits, tmp_path):
    """A transcript whose every path needs more frames than the utterance has gives None
    (Kaldi: "utterance has too few frames"); the path drawn depends on the seed only."""
    _, compiler = _digits_mono(kaldi_digits, tmp_path)
    ids = compiler.lexicon.word_ids("one two three four five six seven".split())[0]
    graph = compiler.compile(ids)
    # 7 words of 3 to 5 phones of 3 states: at least 60 transitions
    assert equal_align(graph, 40, utterance_rng("u", 0)) is None
    a = equal_align(graph, 300, utterance_rng("u", 0))
    assert a is not None and len(a) == 300 and accepts(graph, a)
    assert np.array_equal(a, equal_align(graph, 300, utterance_rng("u", 0)))
    drawn = {tuple(equal_align(graph, 300, utterance_rng("u", s))) for s in range(20)}
    assert len(drawn) > 1  # optional silences: the seed picks among the paths


@pytest.fixture(scope="module")
def env(env_with_path, repo_dir):
    return dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))


@pytest.mark.slow
def test_recipe_without_gmm_from_a_dict_dir(tmp_path_factory, repo_dir, kaldi_digits, env):
    """./run.sh --ali none on a Kaldi dir with data dirs and a dict dir only (no lang dir, no
    exp/): prepare_lang, an LM from --lm-text, flat start, CD tree, graphs, WERs; and the chain
    model (--chain true) on the flat start's alignment."""
    root = tmp_path_factory.mktemp("flat_tiny")
    kaldi = root / "kaldi"
    kaldi.mkdir()
    train = [f"jackson_0_{i}" for i in range(10)]
    make_data_dir(kaldi_digits, "data/train", kaldi, "data/train", train)
    test = [u for u in (kaldi_digits / "data/test/utt2spk").read_text().split()[::2]
            if u.startswith("jackson_4")]
    make_data_dir(kaldi_digits, "data/test", kaldi, "data/test", test)
    (kaldi / "conf").mkdir()
    shutil.copyfile(kaldi_digits / "conf/mfcc.conf", kaldi / "conf/mfcc.conf")
    # one transcript gets a word outside the lexicon, one is far too long for its audio
    text = kaldi / "data/train/text"
    lines = text.read_text().splitlines()
    lines[3] += " eleven"
    lines[2] = lines[2].split()[0] + " " + " ".join(["seven six"] * 12)
    text.write_text("\n".join(lines) + "\n")
    short_utt = lines[2].split()[0]
    dict_dir = kaldi / "data/local/dict"
    dict_dir.mkdir(parents=True)
    for name in ("lexicon.txt", "nonsilence_phones.txt"):
        shutil.copyfile(kaldi_digits / "data/local/dict" / name, dict_dir / name)
    # a lexicon larger than a pipe's buffer, its OOV entry near the top (as kaldi_polish's):
    # the recipe finds <UNK> in it (a "cat | grep -q" under pipefail did not)
    lex = (dict_dir / "lexicon.txt").read_text().splitlines()
    unk = [x for x in lex if x.startswith("<UNK>")]
    assert unk, "kaldi_digits' lexicon has <UNK>"
    extra = [f"zz{i:05d} z ih r ow" for i in range(4000)]
    (dict_dir / "lexicon.txt").write_text("\n".join(unk + [x for x in lex if x not in unk]
                                                    + extra) + "\n")
    assert (dict_dir / "lexicon.txt").stat().st_size > 65536
    (dict_dir / "silence_phones.txt").write_text("sil\nspn\n")
    (dict_dir / "optional_silence.txt").write_text("sil\n")
    shutil.copyfile(kaldi_digits / "data/local/corpus.txt", kaldi / "data/local/corpus.txt")
    before = sorted(str(p.relative_to(kaldi)) for p in kaldi.rglob("*"))

    s5 = make_recipe_copy(repo_dir, root / "s5")
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--ali", "none", "--lang", "data/local/dict",
         "--lm-text", "data/local/corpus.txt", "--lm-order", "1", "--flat-objective", "fullsum",
         "--flat-rounds", "0", "--flat-first-subset", "6",
         "--num-leaves", "40", "--model-config", "conf/tiny_model.conf",
         "--flat-train-opts", "--fullsum-prior-scale=0.7",
         "--train-opts", "--max-iters=1", "--nj", "1", "--chain", "true", "--chain-opts",
         "--schedule-config conf/tiny_schedule.conf"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    assert sorted(str(p.relative_to(kaldi)) for p in kaldi.rglob("*")) == before

    # the lang dirs made here, from the dict dir and the corpus
    assert (s5 / "data/lang/L.fst").is_file() and not (s5 / "data/lang/G.fst").exists()
    assert (s5 / "data/lang_test/G.fst").is_file()
    assert (s5 / "data/lang/oov.txt").read_text().split() == ["<UNK>"]
    # the equal alignment: the too-short utterance skipped and named, the OOV word counted
    # (the 10% cv split is one utterance, not the skipped one: a cv set without targets stops
    # the training with an error naming it)
    assert short_utt in (s5 / "data/train_tr90/text").read_text()
    rep = json.loads((s5 / "exp/flat/ali0/log/align_report.1.json").read_text())
    assert rep["utterances"] == 10 and rep["aligned"] == 9
    assert rep["too_short"] == [short_utt] and rep["oov_words"] == 1
    assert "1 too short for their transcript" in out
    with gzip.open(s5 / "exp/flat/ali0/ali.1.gz") as f:
        assert short_utt.encode() not in f.read()
    # the monophone model, the CD tree (at most --num-leaves; on 9 utterances fewer leaves than
    # the monophone's 70 pdfs: its roots share their pdf-classes until the data splits them)
    mono = read_transition_model(str(s5 / "exp/flat/mono/final.mdl"))
    # --flat-train-opts override the step's own full-sum options (its prior scale 0.5)
    conf0 = (s5 / "exp/flat/nnet0/train.conf").read_text()
    assert "--fullsum-prior-scale=0.7\n" in conf0 and "--objective=fullsum\n" in conf0
    # nnet0 trained on the 6 shortest of the 9 training utterances
    short = (s5 / "exp/flat/data_tr_short6/utt2spk").read_text().split()[::2]
    frames = dict(line.split() for line in (s5 / "data/train_tr90/utt2num_frames").open())
    assert len(short) == 6 and max(int(frames[u]) for u in short) <= min(
        int(n) for u, n in frames.items() if u not in short)
    assert "data_tr_short6" in (s5 / "exp/flat/nnet0/log/train.log").read_text()
    assert (s5 / "exp/flat/final_nnet_dir").read_text().strip() == "nnet0"
    # nnet0 by full-sum training (the default), aligning with equal pdf counts (no prior)
    assert "--objective=fullsum" in (s5 / "exp/flat/nnet0/train.conf").read_text()
    counts = (s5 / "exp/flat/nnet0/ali_train_pdf.counts").read_text().split()
    assert counts[0] == "[" and counts[-1] == "]" and set(counts[1:-1]) == {"1"}
    assert len(counts) == 2 + 70
    cd = read_transition_model(str(s5 / "exp/tri_ali/final.mdl"))
    assert read_tree(str(s5 / "exp/tri_ali/tree")).context_width == 3
    assert mono.num_pdfs == 70 and 0 < cd.num_pdfs <= 40
    assert json.loads((s5 / "exp/tri_ali/tree_report.json").read_text())
    assert int((s5 / "exp/ali_train/num_pdfs").read_text()) == cd.num_pdfs
    assert np.array_equal(read_transition_model(str(s5 / "exp/blstm/final.mdl")).tuples,
                          cd.tuples)
    # both networks decoded on their own graphs, and named in the summary
    for d in ("exp/flat/nnet0/decode_test", "exp/blstm/decode_test"):
        assert any(n.startswith("wer_") for n in os.listdir(s5 / d)), d
    assert (s5 / "exp/blstm/graph/HCLG.fst").is_file()
    assert (s5 / "exp/flat/mono/graph/HCLG.fst").is_file()
    assert "model:         flat-start monophone network (round 0 of 0)" in out
    assert "model:         context-dependent network (exp/tri_ali: " in out
    summary = json.loads((s5 / "exp/blstm/summary.json").read_text())
    assert summary["model"].startswith("context-dependent network") and "wer" in summary
    # --chain true without a GMM: the chain tree, den.fst and TDNN-F from the flat start's CD
    # alignment (exp/tri_ali), its graph on data/lang_test (the LM made here), decoded and
    # summed up beside the CD network
    chain = s5 / "exp/chain/tdnn"
    assert "--chain-model-config conf/model/tdnnf_small.conf  (0.0" in out  # under 5 hours
    assert "exp/tri_ali" in (chain / "log/train.log").read_text()
    assert "the chain numerator is the alignment, not lattices of a GMM: there is no GMM" in out
    assert (s5 / "exp/chain/tree/graph/HCLG.fst").is_file()
    assert any(n.startswith("wer_") for n in os.listdir(chain / "decode_test"))
    assert "chain model:   %WER" in out and "(hybrid exp/blstm | chain exp/chain/tdnn)" in out

    # the default flat start (--flat-objective gmm): no flat-start network; a monophone GMM
    # (steps/train_mono.sh) gives the alignment the CD tree grows from; stages 4 and 5 have no
    # flat network to decode
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--ali", "none", "--lang", "data/local/dict",
         "--lm-text", "data/local/corpus.txt", "--lm-order", "1",
         "--num-leaves", "40", "--model-config", "conf/tiny_model.conf",
         "--train-opts", "--max-iters=1", "--nj", "1", "--stage", "2", "--exp-name", "blstm_gmm"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    assert not (s5 / "exp/flat/nnet0").exists() and not (s5 / "exp/flat/final_nnet_dir").exists()
    gmm_tm, gmm = read_gmm_model(str(s5 / "exp/flat/mono/final.mdl"))
    assert gmm.num_pdfs == 70 and "--boost-silence 1.25" in out
    assert "no GMM given: a flat start (gmm) into exp/flat" in out
    report = json.loads((s5 / "exp/flat/mono/log/train_report.json").read_text())
    assert report["used"] == 9 and report["no_alignment"] == [short_utt]
    assert (s5 / "exp/flat/ali_final/ali.1.gz").is_file()
    assert "exp/flat/ali_final/ali.1.gz" in (s5 / "exp/tri_ali/log/acc_tree.1.log").read_text()
    assert any(n.startswith("wer_") for n in os.listdir(s5 / "exp/blstm_gmm/decode_test"))
    assert "model:         context-dependent network (exp/tri_ali: " in out
    assert "flat-start monophone network" not in out

    # a GMM on the shortest utterances only (--flat-first-subset; by default above 10,000 of
    # them, Kaldi's recipes' mono subsets), then steps/align_si.sh aligns all of data/train
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--ali", "none", "--lang", "data/local/dict",
         "--lm-text", "data/local/corpus.txt", "--lm-order", "1", "--flat-first-subset", "6",
         "--num-leaves", "40", "--model-config", "conf/tiny_model.conf", "--nj", "1",
         "--stage", "2", "--stop-stage", "2"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    assert "the monophone GMM trains on the 6 shortest of data/train's 10 utterances" in out
    assert len((s5 / "data/train_mono_subset/utt2spk").read_text().splitlines()) == 6
    report = json.loads((s5 / "exp/flat/mono/log/train_report.json").read_text())
    assert report["utterances"] == 6
    aligned = json.loads((s5 / "exp/flat/ali_final/log/align_report.1.json").read_text())
    assert aligned["utterances"] == 10 and aligned["aligned"] >= 9  # (one is too short)
    assert "steps/align_si.sh" in out and "--boost-silence 1.25" in out
    assert "exp/flat/ali_final/ali.1.gz" in (s5 / "exp/tri_ali/log/acc_tree.1.log").read_text()
