"""Triphone trees without Kaldi (hybridasr.tree: acc-tree-stats, cluster-phones,
compile-questions, build-tree, convert-ali) on the real kaldi_polish dir: its monophone
alignment (exp/mono_ali) and the toolkit's MFCCs of its training audio. Checked against
Kaldi's own code where it is at hand: the compiled questions byte for byte against Kaldi's
exp/tri1/questions.qst, the Gaussian objective and the tree file through kaldi-hmm-gmm
(Kaldi's GaussClusterable and draw-tree's tree reader, in a child process: kaldi_hmm_gmm hangs
when kaldifst was imported first), and the step script end to end."""
from __future__ import annotations

import ctypes
import gzip
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.phones import phone_segments
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.table import read_int_lists
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import ContextDependency, read_tree, write_tree
from hybridasr.tree.build import (BuildTreeOptions, build_from_lang, map_events,
                                  objf_given_map, read_roots)
from hybridasr.tree.convert import AlignmentConverter, change_reordering
from hybridasr.tree.model import build_transition_model, read_topology
from hybridasr.tree.accumulate import accumulate_tree_stats, iter_tree_features
from hybridasr.tree.phone_clustering import GlibcRand, cluster_phones
from hybridasr.tree.questions import (Questions, compile_questions, read_questions_int,
                                      read_questions_qst, write_questions_qst)
from hybridasr.tree.stats import (TreeStatsOptions, gauss_objf, read_tree_stats, sum_tree_stats,
                                  tid_to_pdf_class, write_tree_stats)

CI_PHONES = "1:2:3:4:5:6:7:8:9:10"  # kaldi_polish's phones/context_indep.csl


def _kaldi_hmm_gmm(script: str, *args) -> str:
    """Runs ``script`` (which imports kaldi_hmm_gmm, never kaldifst) in a child process."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


@pytest.fixture(scope="module")
def polish(kaldi_polish, tmp_path_factory):
    """A data dir of kaldi_polish's 540 training utterances with the toolkit's MFCCs
    (conf/mfcc.conf's settings) and per-speaker CMVN stats."""
    from hybridasr.features.cmvn_table import compute_cmvn_table
    from hybridasr.features.make_feats import compute_feature_table
    from hybridasr.features.options import MfccOptions

    d = tmp_path_factory.mktemp("polish") / "train"
    d.mkdir()
    src = kaldi_polish / "data/train"
    with open(src / "wav.scp") as f, open(d / "wav.scp", "w") as out:
        for line in f:
            utt, path = line.split()
            out.write(f"{utt} {kaldi_polish / path}\n")
    for name in ("utt2spk", "spk2utt", "text"):
        (d / name).write_bytes((src / name).read_bytes())
    compute_feature_table(str(d / "wav.scp"), f"ark,scp:{d}/feats.ark,{d}/feats.scp",
                          MfccOptions(use_energy=False, sample_frequency=16000.0))
    compute_cmvn_table(str(d / "feats.scp"), f"ark,scp:{d}/cmvn.ark,{d}/cmvn.scp",
                       spk2utt=str(d / "spk2utt"))
    return d


@pytest.fixture(scope="module")
def mono(kaldi_polish):
    tm = read_transition_model(str(kaldi_polish / "exp/mono_ali/final.mdl"))
    ali = dict(iter_alignment_file(str(kaldi_polish / "exp/mono_ali/ali.1.gz")))
    return tm, ali


@pytest.fixture(scope="module")
def stats(polish, mono):
    tm, ali = mono
    st, rep = accumulate_tree_stats(tm, str(polish), ali.items(),
                                    TreeStatsOptions(ci_phones=CI_PHONES))
    assert (rep.done, rep.no_alignment, rep.wrong_length, rep.bad_alignment) == (540, 0, 0, 0)
    return st


@pytest.fixture(scope="module")
def built(stats, kaldi_polish):
    tree, qlist, compiled, rep = build_from_lang(stats, str(kaldi_polish / "data/lang"),
                                                 BuildTreeOptions(max_leaves=500))
    return tree, qlist, compiled, rep


# ------------------------------------------------------------------ statistics
def test_stats_counts_match_the_alignment(stats, polish, mono):
    tm, ali = mono
    utts = [line.split()[0] for line in open(polish / "feats.scp")]
    frames = sum(len(ali[u]) for u in utts)
    assert frames == 317070 and stats.total_count() == frames
    assert (stats.context_width, stats.central_position, stats.dim) == (3, 1, 39)
    # per central phone and per (phone, pdf-class): the frames ali-to-phones gives them
    per_phone, per_class = Counter(), Counter()
    pcs = tid_to_pdf_class(tm)
    for u in utts:
        for ph, n in phone_segments(tm, ali[u]):
            per_phone[ph] += n
        for ph, pc in zip(tm.tid2phone[ali[u]].tolist(), pcs[ali[u]].tolist()):
            per_class[ph, pc] += 1
    got = Counter()
    for ph, c in zip(stats.central_phones.tolist(), stats.counts.tolist()):
        got[ph] += c
    assert got == per_phone
    got = Counter()
    for ph, pc, c in zip(stats.central_phones.tolist(), stats.pdf_classes.tolist(),
                         stats.counts.tolist()):
        got[ph, pc] += c
    assert got == per_class
    # context-independent phones (silence, spn) have no context keys; others have all
    ci = np.isin(stats.central_phones, range(1, 11))
    assert (stats.windows[ci][:, [0, 2]] == -1).all()
    assert (stats.windows[~ci] >= 0).all() and (stats.windows[~ci][:, 0] == 0).any()
    # the sums are of the features with CMVN and deltas
    total = sum(x.astype(np.float64).sum(axis=0) for _, x in iter_tree_features(str(polish)))
    np.testing.assert_allclose(stats.sums.sum(axis=0), total, rtol=1e-9, atol=1e-3)
    assert (stats.sumsqs >= 0).all() and stats.num_events > 20000


def test_stats_file_and_sum(stats, polish, mono, tmp_path):
    tm, ali = mono
    utts = [line.split()[0] for line in open(polish / "feats.scp")]
    halves = [accumulate_tree_stats(tm, str(polish), [(u, ali[u]) for u in part],
                                    TreeStatsOptions(ci_phones=CI_PHONES))[0]
              for part in (utts[:200], utts[200:])]
    for i, h in enumerate(halves):
        write_tree_stats(h, str(tmp_path / f"{i}.npz"))
    total = sum_tree_stats([read_tree_stats(str(tmp_path / f"{i}.npz")) for i in range(2)])
    assert np.array_equal(total.events, stats.events)
    assert np.array_equal(total.counts, stats.counts)
    np.testing.assert_allclose(total.sums, stats.sums, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(total.sumsqs, stats.sumsqs, rtol=1e-9, atol=1e-6)
    with pytest.raises(FormatError, match="missing tree statistics file .*nothing.npz"):
        read_tree_stats(str(tmp_path / "nothing.npz"))
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(FormatError, match="bad.npz"):
        read_tree_stats(str(tmp_path / "bad.npz"))


def test_gauss_objective_is_kaldis(stats, built, tmp_path):
    """Kaldi's GaussClusterable (kaldi-hmm-gmm) gives our objective on the same statistics:
    single events, and the pooled statistics of every leaf of the built tree (so the tree's
    objective per frame in the report is Kaldi's)."""
    tree, _, _, rep = built
    rng = np.random.default_rng(0)
    pick = rng.choice(stats.num_events, 40, replace=False)
    leaves = map_events(tree.to_pdf, stats.events)
    assert (leaves >= 0).all()
    rows = stats.stacked()
    pooled = np.zeros((tree.num_pdfs, rows.shape[1]))
    np.add.at(pooled, leaves, rows)
    pooled = pooled[pooled[:, 0] > 0]
    d = stats.dim
    sets = np.concatenate([rows[pick], pooled])
    np.save(tmp_path / "rows.npy", sets)
    out = _kaldi_hmm_gmm("""
        import json, sys
        import numpy as np
        import kaldi_hmm_gmm as k
        rows = np.load(sys.argv[1]); d = int(sys.argv[2]); floor = float(sys.argv[3])
        g = [k.GaussClusterable(r[1:1 + d], r[1 + d:], floor, r[0]) for r in rows]
        print(json.dumps({"objf": [x.objf() for x in g],
                          "dist": g[0].distance(g[1]), "sum": k.sum_clusterable_objf(g[40:])}))
        """, tmp_path / "rows.npy", d, stats.var_floor)
    kaldi = json.loads(out)
    ours = gauss_objf(sets[:, 0], sets[:, 1:1 + d], sets[:, 1 + d:], stats.var_floor)
    np.testing.assert_allclose(ours, kaldi["objf"], rtol=2e-6, atol=1e-3)
    merged = sets[0] + sets[1]
    dist = ours[0] + ours[1] - gauss_objf(merged[0], merged[1:1 + d], merged[1 + d:],
                                          stats.var_floor)
    assert dist == pytest.approx(kaldi["dist"], rel=1e-4, abs=1e-2)
    assert rep.objf_per_frame * rep.frames == pytest.approx(kaldi["sum"], rel=1e-6)
    assert objf_given_map(stats, tree.to_pdf) == pytest.approx(kaldi["sum"], rel=1e-6)


# ------------------------------------------------------------------ questions
def test_glibc_rand_is_the_c_librarys():
    libc = ctypes.CDLL(None)
    libc.srand(1)
    ours = GlibcRand()
    assert [ours() for _ in range(2000)] == [libc.rand() for _ in range(2000)]
    libc.srand(777)
    ours = GlibcRand(777)
    assert [ours() for _ in range(100)] == [libc.rand() for _ in range(100)]


def test_compile_questions_is_byte_exact_with_kaldi(kaldi_polish, tmp_path):
    """Kaldi's own questions.int of exp/tri1, compiled: Kaldi's questions.qst, byte for byte."""
    topo = read_topology(str(kaldi_polish / "data/lang/topo"))
    qs = compile_questions(read_questions_int(str(kaldi_polish / "exp/tri1/questions.int")),
                           topo, 3)
    write_questions_qst(qs, str(tmp_path / "q.qst"))
    assert (tmp_path / "q.qst").read_bytes() == \
        (kaldi_polish / "exp/tri1/questions.qst").read_bytes()
    back = read_questions_qst(str(kaldi_polish / "exp/tri1/questions.qst"))
    assert isinstance(back, Questions) and back == qs
    assert back[-1] == [(0,), (0, 1), (0, 1, 2), (0, 1, 2, 3)]  # 5 pdf-classes (silence)
    assert len(back[0]) == len(back[1]) == len(back[2]) == 83


def test_cluster_phones_covers_the_sets(stats, kaldi_polish, caplog):
    sets = read_int_lists(str(kaldi_polish / "data/lang/phones/sets.int"))
    qs = cluster_phones(stats, sets)
    # every node of the binary tree over 38 sets but the root: 2 * 38 - 2 questions
    assert len(qs) == 2 * len(sets) - 2 == len({tuple(q) for q in qs})
    assert {tuple(s) for s in sets} <= {tuple(q) for q in qs}
    assert all(q == sorted(q) for q in qs)
    # the top-level split is the first (and second) question: together all phones
    assert sorted(qs[0] + qs[1]) == sorted(p for s in sets for p in s)
    # on other data and features than Kaldi's, most of Kaldi's own questions come out again
    kaldi = {tuple(q) for q in read_questions_int(str(kaldi_polish / "exp/tri1/questions.int"))}
    assert len(kaldi & {tuple(q) for q in qs}) >= 40
    assert "no statistics for phone set 39 40 41 42" in caplog.text  # no data with pdf-class 1
    assert cluster_phones(stats, sets) == qs  # deterministic (glibc's rand from seed 1)


# ------------------------------------------------------------------ the tree
def test_built_tree(built, stats, kaldi_polish, tmp_path):
    tree, qlist, compiled, rep = built
    mono_pdfs = read_transition_model(str(kaldi_polish / "exp/mono_ali/final.mdl")).num_pdfs
    assert isinstance(tree, ContextDependency)
    assert (tree.context_width, tree.central_position) == (3, 1)
    assert mono_pdfs < rep.num_leaves == tree.num_pdfs <= 500
    assert rep.num_leaves % 8 == 0 and rep.leaves_after_split == 500
    assert rep.splits == 500 - rep.stub_leaves and rep.stub_leaves == 38
    assert rep.smallest_split > 300 and rep.cluster_thresh == rep.smallest_split
    assert rep.removed_by_clustering + rep.removed_by_rounding == 500 - rep.num_leaves
    # the objective: split gain minus the clustering loss, per frame
    assert rep.objf_per_frame - rep.objf_per_frame_stub == pytest.approx(
        rep.like_impr_per_frame + rep.objf_change_clustering_per_frame, abs=1e-3)
    assert 3.0 < rep.like_impr_per_frame < 6.0 and rep.objf_change_clustering_per_frame < 0
    # every event of the data gets a pdf, with any context for a context-independent phone
    leaves = map_events(tree.to_pdf, stats.events)
    assert (leaves >= 0).all()
    for i in np.random.default_rng(1).choice(stats.num_events, 300, replace=False):
        win, pc = stats.events[i, 1:].tolist(), int(stats.events[i, 0])
        if win[0] < 0:
            assert tree.compute([17, win[1], 0], pc) == tree.compute([0, win[1], 33], pc) \
                == leaves[i]
        else:
            assert tree.compute(win, pc) == leaves[i]
    # any window of the lang dir's phones, each pdf-class of its central phone: a pdf
    topo = read_topology(str(kaldi_polish / "data/lang/topo"))
    rng = np.random.default_rng(3)
    for _ in range(500):
        win = rng.integers(0, 155, 3).tolist()
        win[1] = int(rng.integers(1, 155))
        for pc in range(len(topo.topology_for_phone(win[1])) - 1):
            assert tree.compute(win, pc) is not None, (win, pc)
    # pdfs with data: all but those of roots no data reached (unseen phones' stub leaves)
    assert len(set(leaves.tolist())) > rep.num_leaves - rep.stub_leaves
    # questions: sets.int's sets and extra_questions.int's are among them
    sets = read_int_lists(str(kaldi_polish / "data/lang/phones/sets.int"))
    extra = read_int_lists(str(kaldi_polish / "data/lang/phones/extra_questions.int"))
    assert {tuple(s) for s in sets + extra} <= set(compiled[0])
    assert len(qlist) == 74 + len(extra)
    # a transition model, and the tree round-trips through Kaldi's format
    tm = build_transition_model(tree, topo)
    assert tm.num_pdfs == tree.num_pdfs
    for binary in (True, False):
        write_tree(tree, str(tmp_path / "tree"), binary=binary)
        back = read_tree(str(tmp_path / "tree"))
        assert (back.context_width, back.central_position, back.to_pdf) == \
            (3, 1, tree.to_pdf)
    # deterministic: the same statistics give the same tree
    again, *_ = build_from_lang(stats, str(kaldi_polish / "data/lang"),
                                BuildTreeOptions(max_leaves=500))
    assert again.to_pdf == tree.to_pdf


def test_not_shared_not_split_roots(built, stats, kaldi_polish):
    """A "not-shared not-split" root (silence here): one pdf per pdf-class, whatever the
    central phone of the set or the context; the other roots are split as before."""
    from hybridasr.tree.build import build_tree

    _, _, compiled, _ = built
    roots = read_roots(str(kaldi_polish / "data/lang/phones/roots.int"))
    assert roots.phone_sets[0] == [1, 2, 3, 4, 5] and all(roots.shared + roots.split)
    roots.shared[0] = roots.split[0] = False
    topo = read_topology(str(kaldi_polish / "data/lang/topo"))
    tree, rep = build_tree(stats, compiled, roots, topo, BuildTreeOptions(max_leaves=300))
    assert rep.stub_leaves == 37 + 5 and rep.frames_split_phones < rep.frames
    sil = [[tree.compute([left, c, right], pc) for pc in range(5)]
           for c in range(1, 6) for left, right in ((0, 0), (20, 33), (1, 7))]
    assert all(row == sil[0] for row in sil) and len(set(sil[0])) == 5
    assert rep.num_leaves <= 300 and build_transition_model(tree, topo).num_pdfs == \
        rep.num_leaves


def test_kaldi_reads_the_tree(built, stats, kaldi_polish, tmp_path):
    """Kaldi's tree reader (draw-tree's, in kaldi-hmm-gmm) reads our tree file and traces
    phone windows to the leaves our tree gives."""
    tree, *_ = built
    write_tree(tree, str(tmp_path / "tree"))
    phones = dict(line.split()[::-1] for line in open(kaldi_polish / "data/lang/phones.txt"))
    names = {int(k): v for k, v in phones.items()}
    queries, expect = [], []
    rng = np.random.default_rng(2)
    for i in rng.choice(stats.num_events, 150, replace=False):
        win = [w if w >= 0 else 0 for w in stats.events[i, 1:].tolist()]
        pc = int(stats.events[i, 0])
        queries.append("/".join([str(pc)] + [names[w] for w in win]))
        expect.append(tree.compute(win, pc))
    (tmp_path / "q.json").write_text(json.dumps(queries))
    out = _kaldi_hmm_gmm("""
        import json, re, sys
        import kaldi_hmm_gmm as k
        phones, tree, qfile = sys.argv[1:4]
        got = []
        for q in json.load(open(qfile)):
            dot = k.draw_tree(phones, tree, False, q)
            got.append([int(x) for x in re.findall(
                r"shape=doublecircle, label=(\\d+),color=red", dot)])
        print(json.dumps(got))
        """, kaldi_polish / "data/lang/phones.txt", tmp_path / "tree", tmp_path / "q.json")
    got = json.loads(out)
    assert all(len(g) == 1 for g in got)
    assert [g[0] for g in got] == expect


# ------------------------------------------------------------------ alignment conversion
def test_convert_alignments(built, mono, kaldi_polish):
    tree, *_ = built
    tm, ali = mono
    topo = read_topology(str(kaldi_polish / "data/lang/topo"))
    new_tm = build_transition_model(tree, topo)
    conv = AlignmentConverter(tm, new_tm, tree)
    pcs = tid_to_pdf_class(tm)
    frames = 0
    for utt, a in ali.items():
        b = conv.convert(a, utt)
        assert len(b) == len(a)
        segs = phone_segments(tm, a)
        assert phone_segments(new_tm, b) == segs, utt
        assert np.array_equal(new_tm.tid2hmm_state[b], tm.tid2hmm_state[a])
        assert np.array_equal(new_tm.tid2trans_index[b], tm.tid2trans_index[a])
        frames += len(a)
        if frames < 20000:  # each frame's pdf: the tree's for its phone window
            phones = [p for p, _ in segs]
            padded = [0] + phones + [0]
            pos = np.repeat(np.arange(len(phones)), [n for _, n in segs])
            want = [tree.compute(padded[k:k + 3], pc) for k, pc in zip(pos.tolist(),
                                                                        pcs[a].tolist())]
            assert new_tm.tid2pdf[b].tolist() == want
    assert conv.num_done == len(ali) == 1381 and conv.num_failed == 0
    # to the monophone tree and model it came from: the identity; and reordering undone
    mono_tree = read_tree(str(kaldi_polish / "exp/mono_ali/tree"))
    same = AlignmentConverter(tm, tm, mono_tree)
    plain = AlignmentConverter(tm, tm, mono_tree, reorder=False)
    back = AlignmentConverter(tm, tm, mono_tree, reorder=True)
    for utt, a in list(ali.items())[:200]:
        assert np.array_equal(same.convert(a), a)
        p = plain.convert(a)
        assert not np.array_equal(p, a) and sorted(p.tolist()) == sorted(a.tolist())
        assert np.array_equal(back.convert(p), a)
        assert np.array_equal(change_reordering(tm, change_reordering(tm, a)), a)


# ------------------------------------------------------------------ tools and the step
def _run(cmd, env, cwd, timeout=300):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def test_build_tree_sh_end_to_end(polish, kaldi_polish, repo_dir, env_with_path, tmp_path):
    """steps/nnet/build_tree.sh on 100 utterances: an alignment dir for the new tree that
    steps/import_ali.sh accepts."""
    data = tmp_path / "data/train100"
    data.mkdir(parents=True)
    utts = [line.split()[0] for line in open(polish / "feats.scp")][::5][:100]  # 3 speakers
    keep = set(utts)
    for name in ("feats.scp", "utt2spk", "text", "wav.scp"):
        with open(polish / name) as f, open(data / name, "w") as out:
            out.writelines(line for line in f if line.split()[0] in keep)
    spks = {line.split()[1] for line in open(data / "utt2spk")}
    with open(polish / "cmvn.scp") as f, open(data / "cmvn.scp", "w") as out:
        out.writelines(line for line in f if line.split()[0] in spks)
    with open(data / "spk2utt", "w") as out:
        for spk in sorted(spks):
            out.write(spk + " " + " ".join(u for u in utts if
                                            u.startswith(spk + "-")) + "\n")
    lang, alidir = kaldi_polish / "data/lang", kaldi_polish / "exp/mono_ali"
    out = tmp_path / "exp/tri_tree"
    p = _run(f"{repo_dir}/steps/nnet/build_tree.sh --nj 2 --cluster-thresh -1 300 {data} "
             f"{lang} {alidir} {out}", env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    assert "built a tree of" in p.stdout
    for name in ("tree", "final.mdl", "ali.1.gz", "num_jobs", "phones.txt", "questions.int",
                 "treeacc.npz", "tree_report.json", "log/acc_tree.1.log",
                 "log/acc_tree.2.log", "log/build_tree.log", "log/convert.1.log"):
        assert (out / name).is_file(), name
    assert not list(out.glob("*.*.treeacc.npz")) and not list(out.glob("[0-9].treeacc.npz"))
    assert (out / "num_jobs").read_text().strip() == "1"
    rep = json.loads((out / "tree_report.json").read_text())
    assert rep["frames"] == sum(len(a) for u, a in iter_alignment_file(
        str(alidir / "ali.1.gz")) if u in keep)
    assert 0 < rep["num_leaves"] <= 300 and rep["num_pdfs"] == rep["num_leaves"]
    tree = read_tree(str(out / "tree"))
    tm = read_transition_model(str(out / "final.mdl"))
    assert tree.num_pdfs == tm.num_pdfs == rep["num_leaves"]
    raw = gzip.open(out / "ali.1.gz").read()
    assert raw.split(b" ", 1)[1][:2] == b"\0B"  # binary int32 vectors, as Kaldi's
    converted = dict(iter_alignment_file(str(out / "ali.1.gz")))
    assert len(converted) == 1381
    # the statistics are those of the library on the same utterances
    st = read_tree_stats(str(out / "treeacc.npz"))
    assert st.total_count() == rep["frames"]
    p = _run(f"{repo_dir}/steps/import_ali.sh {out} {data} {tmp_path}/targets", env_with_path,
             tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    imp = json.loads((tmp_path / "targets/import_report.json").read_text())
    assert imp["utterances_imported"] == 100 and imp["num_pdfs"] == rep["num_leaves"]
    # bad input: a lang dir without roots.int, named
    bad_lang = tmp_path / "lang_no_roots"
    bad_lang.mkdir()
    for f in lang.iterdir():
        if f.name != "phones":
            os.symlink(f, bad_lang / f.name)
    (bad_lang / "phones").mkdir()
    for f in (lang / "phones").iterdir():
        if f.name != "roots.int":
            os.symlink(f, bad_lang / "phones" / f.name)
    p = _run(f"{repo_dir}/steps/nnet/build_tree.sh 300 {data} {bad_lang} {alidir} "
             f"{tmp_path}/x", env_with_path, tmp_path)
    assert p.returncode != 0 and f"missing file {bad_lang}/phones/roots.int" in p.stderr
    p = _run(f"build_tree.py {out}/treeacc.npz {bad_lang} {tmp_path}/t {tmp_path}/m",
             env_with_path, tmp_path)
    assert p.returncode == 1 and f"missing roots file {bad_lang}/phones/roots.int" in p.stderr
    p = _run(f"build_tree.py {out}/nothing.npz {lang} {tmp_path}/t {tmp_path}/m",
             env_with_path, tmp_path)
    assert p.returncode == 1 and f"missing tree statistics file {out}/nothing.npz" in p.stderr


def test_read_roots_errors(tmp_path):
    with pytest.raises(FormatError, match="missing roots file .*roots.int"):
        read_roots(str(tmp_path / "roots.int"))
    (tmp_path / "roots.int").write_text("shared split 1 2\nsharde split 3\n")
    with pytest.raises(FormatError, match=r"roots.int:2: bad line"):
        read_roots(str(tmp_path / "roots.int"))
    (tmp_path / "roots.int").write_text("not-shared not-split 3 1\nshared split 2\n")
    r = read_roots(str(tmp_path / "roots.int"))
    assert (r.phone_sets, r.shared, r.split) == ([[1, 3], [2]], [False, True], [False, True])
