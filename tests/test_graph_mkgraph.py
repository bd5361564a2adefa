"""utils/mkgraph.sh without Kaldi (hybridasr.graph): on the real Kaldi dirs kaldi_digits (mono)
and kaldi_polish (mono and tri1, 1,192 pdfs), the graphs built from each dir's own lang, tree
and model have exactly the states and arcs of the dir's Kaldi-made HCLG.fst, with the same
labels and weights; the intermediate LG and CLG equal Kaldi's (kept in data/lang/tmp); and
decoding Kaldi's test features with the GMM's likelihoods through our graph gives the words of
the dir's Kaldi decode."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path

import kaldifst
import numpy as np
import pytest

from hybridasr.errors import FormatError
from hybridasr.graph.arrays import FstArrays
from hybridasr.graph.fst_steps import arcsort_like_kaldi, compose, determinize_star
from hybridasr.graph.mkgraph import make_graph, make_lg
from hybridasr.graph.rm_eps_local import rm_eps_local
from hybridasr.utils.std_sort import std_sort_order
from hybridasr.kaldi.fst import parse_const_fst
from hybridasr.kaldi.ilabel_info import ilabel_info_bytes, read_ilabel_info

GRAPHS = [("kaldi_digits", "mono", "40.mdl"), ("kaldi_polish", "mono", "40.mdl"),
          ("kaldi_polish", "tri1", "35.mdl")]


def model_dir(tmp_path: Path, kaldi_dir: Path, exp: str, mdl: str) -> Path:
    """A model dir as Kaldi leaves it: final.mdl a symbolic link to <iter>.mdl, the tree."""
    d = tmp_path / f"{kaldi_dir.name}_{exp}"
    d.mkdir()
    shutil.copy(kaldi_dir / "exp" / exp / mdl, d / mdl)
    os.symlink(mdl, d / "final.mdl")
    shutil.copy(kaldi_dir / "exp" / exp / "tree", d / "tree")
    return d


def const(path) -> object:
    data = Path(path).read_bytes()
    return parse_const_fst(data, str(path))


def bfs_weight_diffs(a: FstArrays, k: FstArrays):
    """Walks two input-deterministic FSTs together from their starts (arcs matched by
    labels); returns (states mapped, number of differing weights). Asserts same structure."""
    def arcs(x):
        first = np.searchsorted(x.src, np.arange(x.num_states + 1))
        return lambda s: {(int(x.ilabel[i]), int(x.olabel[i])): (int(x.dst[i]),
                                                                  float(x.weight[i]))
                          for i in range(first[s], first[s + 1])}
    arcs_a, arcs_k = arcs(a), arcs(k)
    seen, queue, diffs = {a.start: k.start}, deque([a.start]), 0
    while queue:
        s = queue.popleft()
        xa, xk = arcs_a(s), arcs_k(seen[s])
        assert xa.keys() == xk.keys(), s
        diffs += int(a.final[s] != k.final[seen[s]])
        for key, (d, w) in xa.items():
            d2, w2 = xk[key]
            diffs += int(w != w2)
            if d not in seen:
                seen[d] = d2
                queue.append(d)
            assert seen[d] == d2
    return len(seen), diffs


@pytest.mark.parametrize("which", ["kaldi_digits", "kaldi_polish"])
def test_lg_is_kaldis_to_the_bit(which, shared_dir):
    lang = shared_dir / "data" / which / "data" / "lang"
    stats = {}
    ours = FstArrays.from_fst(make_lg(str(lang), stats))
    kaldi = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(lang / "tmp/LG.fst")))
    assert (ours.num_states, ours.num_arcs) == (kaldi.num_states, kaldi.num_arcs)
    mapped, diffs = bfs_weight_diffs(ours, kaldi)
    assert mapped == kaldi.num_states and diffs == 0  # push-special's weights, bit for bit
    assert stats["LG"]["states"] == kaldi.num_states
    assert abs(stats["LG"]["stochastic_max"] - stats["LG"]["stochastic_min"]) < 1e-3


def test_clg_and_ilabels_are_kaldis(kaldi_polish):
    lang = kaldi_polish / "data/lang"
    lg = kaldifst.StdVectorFst.read(str(lang / "tmp/LG.fst"))
    disambig = [int(x) for x in (lang / "phones/disambig.int").read_text().split()]
    clg, ilabels = kaldifst.compose_context(disambig, 3, 1, lg)
    ours = arcsort_like_kaldi(FstArrays.from_fst(clg), "ilabel")
    kaldi = FstArrays.from_fst(kaldifst.StdVectorFst.read(str(lang / "tmp/CLG_3_1.fst")))
    for f in ("final", "src", "ilabel", "olabel", "weight", "dst"):  # arc order included
        assert np.array_equal(getattr(ours, f), getattr(kaldi, f)), f
    kaldi_ilabels = lang / "tmp/ilabels_3_1"
    assert read_ilabel_info(str(kaldi_ilabels)) == ilabels
    assert ilabel_info_bytes(ilabels) == kaldi_ilabels.read_bytes()
    # a stable sort would not do: arcs with equal labels are in std::sort's order
    stable = np.lexsort((ours.ilabel, FstArrays.from_fst(clg).src))
    assert not np.array_equal(FstArrays.from_fst(clg).dst[stable], kaldi.dst)


@pytest.mark.parametrize("which,exp,mdl", GRAPHS)
def test_hclg_has_kaldis_states_and_arcs(which, exp, mdl, shared_dir, tmp_path):
    kdir = shared_dir / "data" / which
    mdir = model_dir(tmp_path, kdir, exp, mdl)
    gdir = tmp_path / "graph"
    before = listing(kdir / "data/lang")
    stats = make_graph(str(kdir / "data/lang"), str(mdir), str(gdir))
    ours, kaldi = const(gdir / "HCLG.fst"), const(kdir / "exp" / exp / "graph/HCLG.fst")
    assert ours.states.shape == kaldi.states.shape and ours.arcs.shape == kaldi.arcs.shape
    assert (stats["HCLG"]["states"], stats["HCLG"]["arcs"]) == (len(kaldi.states),
                                                                  len(kaldi.arcs))
    # the same labels on the same number of arcs, the same weights up to float rounding
    for col in (0, 1):
        assert np.array_equal(np.sort(ours.arcs[:, col]), np.sort(kaldi.arcs[:, col]))
    wo = np.sort(ours.arcs[:, 2].view(np.float32))
    wk = np.sort(kaldi.arcs[:, 2].view(np.float32))
    assert np.abs(wo - wk).max() < 1e-3
    assert np.array_equal(np.sort(ours.states[:, 0].view(np.float32)),
                          np.sort(kaldi.states[:, 0].view(np.float32)))
    kgraph = kdir / "exp" / exp / "graph"
    for f in ("num_pdfs", "disambig_tid.int", "words.txt", "phones.txt",
              "phones/disambig.int", "phones/silence.csl"):
        assert (gdir / f).read_bytes() == (kgraph / f).read_bytes(), f
    # read back by kaldifst and by the toolkit's graph loader
    from hybridasr.decode.graph import load_graph_dir

    g = load_graph_dir(str(gdir))
    assert g.fst.num_states == len(kaldi.states) and g.num_pdfs == int(
        (kgraph / "num_pdfs").read_text())
    assert kaldifst.StdVectorFst.read(str(gdir / "tmp/LG.fst")).num_states > 0
    assert listing(kdir / "data/lang") == before  # nothing written into the lang dir


def listing(d: Path):
    """Every file under ``d`` with its size and modification time."""
    return sorted((str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in d.rglob("*"))


def _decode_words(graph_dir: Path, tm, lls, acwt=0.083333):
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir

    g = load_graph_dir(str(graph_dir))
    dec = MappedDecoder(g.fst, tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=13, max_active=7000, min_active=200),
                        g.max_ilabel, fst_path=g.path)
    out = {}
    for utt, ll in lls.items():
        r = dec.decode(ll, acwt, utt)
        assert r.ok, utt
        out[utt] = ([g.words[w] for w in r.words],
                    -(r.graph_cost + r.acoustic_cost) / r.num_frames)
    return out


def _kaldi_decode_log(kdir: Path, exp: str):
    text = (kdir / "exp" / exp / "decode/log/decode.1.log").read_text()
    per_frame = {m[1]: float(m[2]) for m in re.finditer(
        r"Log-like per frame for utterance (\S+) is (\S+) over", text)}
    words = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in per_frame:
            words[parts[0]] = parts[1:]
    return words, per_frame


@pytest.mark.parametrize("which,exp,mdl,n", [("kaldi_digits", "mono", "40.mdl", 30),
                                             ("kaldi_polish", "tri1", "35.mdl", 10)])
def test_gmm_decode_through_our_graph_gives_kaldis_words(which, exp, mdl, n, shared_dir,
                                                         tmp_path):
    from test_decode_pdf_graph import gmm_loglikes

    kdir = shared_dir / "data" / which
    mdir = model_dir(tmp_path, kdir, exp, mdl)
    make_graph(str(kdir / "data/lang"), str(mdir), str(tmp_path / "graph"))
    tm, lls = gmm_loglikes(kdir, f"exp/{exp}/{mdl}", n)
    assert len(lls) == n
    ours = _decode_words(tmp_path / "graph", tm, lls)
    words, per_frame = _kaldi_decode_log(kdir, exp)
    num_words = 0
    for utt, (hyp, like) in ours.items():
        assert hyp == words[utt], utt  # gmm-latgen-faster's own output
        assert like == pytest.approx(per_frame[utt], abs=2e-4), utt
        num_words += len(hyp)
    assert num_words >= n


def test_mkgraph_sh_as_a_user_runs_it(kaldi_digits, tmp_path, repo_dir, env_with_path):
    lang = tmp_path / "lang"
    shutil.copytree(kaldi_digits / "data/lang", lang)
    shutil.rmtree(lang / "tmp")
    before = sorted(p.relative_to(lang) for p in lang.rglob("*"))
    mdir = model_dir(tmp_path, kaldi_digits, "mono", "40.mdl")
    cmd = ["bash", str(repo_dir / "utils/mkgraph.sh"), "--self-loop-scale", "0.1", "--mono",
           str(lang), str(mdir), str(tmp_path / "graph")]
    r = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "deprecated" in r.stderr
    assert sorted(p.relative_to(lang) for p in lang.rglob("*")) == before  # lang untouched
    hclg = const(tmp_path / "graph/HCLG.fst")
    assert (len(hclg.states), len(hclg.arcs)) == (111, 242)
    import json

    stats = json.loads((tmp_path / "graph/mkgraph.json").read_text())
    assert stats["HCLG"]["states"] == 111 and stats["context_width"] == 1
    again = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True)
    assert again.returncode == 0 and "is up to date" in again.stderr
    # a different scale gives a different graph (the option reaches the build)
    r = subprocess.run(["bash", str(repo_dir / "utils/mkgraph.sh"), "--transition-scale",
                        "0.5", str(lang), str(mdir), str(tmp_path / "graph05")],
                       env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    w1 = np.sort(hclg.arcs[:, 2].view(np.float32))
    w2 = np.sort(const(tmp_path / "graph05/HCLG.fst").arcs[:, 2].view(np.float32))
    assert w1.shape != w2.shape or np.abs(w1 - w2).max() > 0.01
    usage = subprocess.run(["bash", str(repo_dir / "utils/mkgraph.sh"), str(lang)],
                           env=env_with_path, capture_output=True, text=True)
    assert usage.returncode != 0 and "e.g.: utils/mkgraph.sh" in usage.stderr


def test_clear_errors(kaldi_digits, kaldi_polish, tmp_path, repo_dir, env_with_path):
    mono = model_dir(tmp_path, kaldi_digits, "mono", "40.mdl")
    lang = tmp_path / "lang"
    shutil.copytree(kaldi_digits / "data/lang", lang)
    # L.fst (no disambiguation symbols) in place of L_disambig.fst
    shutil.copy(lang / "L.fst", lang / "L_disambig.fst")
    with pytest.raises(FormatError, match=r"L_disambig.fst has no disambiguation symbols"):
        make_graph(str(lang), str(mono), str(tmp_path / "g1"))
    shutil.copy(kaldi_digits / "data/lang/L_disambig.fst", lang / "L_disambig.fst")
    # the tree and model of another dir (its phones.txt beside them, as Kaldi's exp dirs)
    tri1 = model_dir(tmp_path, kaldi_polish, "tri1", "35.mdl")
    shutil.copy(kaldi_polish / "exp/tri1/phones.txt", tri1 / "phones.txt")
    with pytest.raises(FormatError, match=r"phones.txt.*do not match"):
        make_graph(str(lang), str(tri1), str(tmp_path / "g2"))
    # a model dir copied with its symlink flattened (final.mdl a file naming 40.mdl)
    flat = tmp_path / "flat"
    shutil.copytree(mono, flat, symlinks=False)
    (flat / "final.mdl").unlink()
    (flat / "final.mdl").write_text("40.mdl\n")
    with pytest.raises(FormatError, match=r"symbolic link.*40\.mdl"):
        make_graph(str(lang), str(flat), str(tmp_path / "g4"))
    # a missing G.fst, through the command line: non-zero exit, the file named
    (lang / "G.fst").unlink()
    r = subprocess.run([sys.executable, str(repo_dir / "pybin/mkgraph.py"), str(lang),
                        str(mono), str(tmp_path / "g3")], env=env_with_path,
                       capture_output=True, text=True)
    assert r.returncode != 0 and f"expected {lang / 'G.fst'} to exist" in r.stderr
    assert not (tmp_path / "g3" / "HCLG.fst").exists()


def test_non_functional_lexicon_names_the_cause(kaldi_polish):
    lang = kaldi_polish / "data/lang"
    lexicon = kaldifst.StdVectorFst.read(str(lang / "L.fst"))
    lg = compose(lexicon, kaldifst.StdVectorFst.read(str(lang / "G.fst")), "L o G")
    with pytest.raises(FormatError, match="cannot be determinized.*not functional"):
        determinize_star(lg, "LG", "add disambiguation symbols")


def test_rm_eps_local_on_a_small_fst():
    # 0 -a:x-> 1 -eps-> 2 -b:eps-> 3 (final); pattern 2 folds the epsilon into the b arc
    fst = FstArrays.from_lists(0, [np.inf, np.inf, np.inf, 0.5],
                               [[(1, 7, 1.0, 1)], [(0, 0, 0.25, 2)], [(2, 0, 2.0, 3)], []])
    out = rm_eps_local(fst)
    assert (out.num_states, out.num_arcs) == (3, 2)
    assert sorted(zip(out.ilabel.tolist(), out.olabel.tolist())) == [(1, 7), (2, 0)]
    assert float(out.weight.sum()) + float(out.final[out.final < np.inf].sum()) == \
        pytest.approx(1.0 + 0.25 + 2.0 + 0.5)
    # an epsilon into a state with one arc in and two out (pattern 1) is removed, keeping
    # the total probability out of the source state (log semiring) where arcs are kept
    fst = FstArrays.from_lists(0, [np.inf, np.inf, 0.0, 0.0],
                               [[(0, 0, 0.0, 1)], [(3, 0, np.log(2), 2), (4, 0, np.log(2), 3)],
                                [], []])
    out = rm_eps_local(fst)
    assert not np.any((out.ilabel == 0) & (out.olabel == 0))
    assert sorted(out.ilabel.tolist()) == [3, 4]
    assert np.exp(-out.weight.astype(np.float64)).sum() == pytest.approx(1.0, abs=1e-6)


def test_std_sort_order_is_libstdcxx_std_sort(tmp_path):
    """Checked against the C++ library itself (g++ builds the toolkit's native code too)."""
    rng = np.random.default_rng(0)
    cases = [rng.integers(0, k, n).tolist() for n, k in
             [(0, 1), (1, 1), (5, 2), (16, 3), (17, 3), (40, 4), (200, 6), (1000, 30),
              (3000, 2)]]
    src = tmp_path / "s.cc"
    src.write_text("#include <algorithm>\n#include <cstdio>\n#include <vector>\n"
                   "int main(){int n;while(scanf(\"%d\",&n)==1){std::vector<std::pair<int,int>>"
                   " v(n);for(int i=0;i<n;i++){scanf(\"%d\",&v[i].first);v[i].second=i;}"
                   "std::sort(v.begin(),v.end(),[](const std::pair<int,int>&a,const "
                   "std::pair<int,int>&b){return a.first<b.first;});"
                   "for(auto&p:v)printf(\"%d \",p.second);printf(\"\\n\");}}\n")
    exe = tmp_path / "s"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True)
    stdin = "".join(f"{len(c)} {' '.join(map(str, c))}\n" for c in cases)
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(cases)
    for case, line in zip(cases, out):
        assert std_sort_order(case) == [int(x) for x in line.split()]


def test_lattices_on_our_graph_are_those_on_kaldis(kaldi_polish, tmp_path):
    """The embedded lattice route (the C++ LatticeFasterDecoder and determinization) on our
    tri1 graph: at each LM weight the lattice's best path has the words and transition-ids
    of the lattice made on Kaldi's graph, and the words Kaldi's own lattices gave
    (exp/tri1/decode/scoring/<lmwt>.tra)."""
    from hybridasr.decode.graph import load_graph_dir
    from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
    from hybridasr.decode.lattice_best_path import best_paths
    from hybridasr.kaldi.io.table import read_text_archive
    from test_decode_pdf_graph import gmm_loglikes

    mdir = model_dir(tmp_path, kaldi_polish, "tri1", "35.mdl")
    make_graph(str(kaldi_polish / "data/lang"), str(mdir), str(tmp_path / "graph"))
    tm, lls = gmm_loglikes(kaldi_polish, "exp/tri1/35.mdl", 4)
    lmwts = [10.0, 14.0]

    def lattice_paths(gdir):
        g = load_graph_dir(str(gdir))
        dec = LatticeDecoder(g.fst, tm.tid2pdf, tm.num_pdfs,
                             LatgenOptions(beam=13.0, lattice_beam=6.0, max_active=7000),
                             g.max_ilabel, fst_path=g.path)
        out = {}
        for utt, ll in lls.items():
            r = dec.decode(ll, 0.083333, utt)
            assert r.ok, utt
            out[utt] = best_paths(r.lattice, [1.0] * len(lmwts), [1.0 / w for w in lmwts],
                                  [0.0] * len(lmwts))
        dec.close()
        return out

    ours = lattice_paths(tmp_path / "graph")
    kaldis_graph = lattice_paths(kaldi_polish / "exp/tri1/graph")
    kaldi_tra = {w: read_text_archive(str(kaldi_polish / f"exp/tri1/decode/scoring/{int(w)}.tra"))
                 for w in lmwts}
    for utt in lls:
        for i, w in enumerate(lmwts):
            a, b = ours[utt][i], kaldis_graph[utt][i]
            assert a.words == b.words and a.tids == b.tids, (utt, w)
            assert a.graph_cost == pytest.approx(b.graph_cost, abs=1e-2)
            assert [str(x) for x in a.words] == list(kaldi_tra[w][utt]), (utt, w)
