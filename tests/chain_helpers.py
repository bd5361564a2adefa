"""Small real graphs for the chain tests, cut from kaldi_digits: phone sequences of its
real alignments, its monophone tree and model, and a chain (gen_topo.py-style) topology."""
from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import List

import numpy as np

from hybridasr.chain.phone_lm import alignment_phone_sequences

CHAIN_TOPO = """<Topology>
<TopologyEntry>
<ForPhones>
{phones}
</ForPhones>
<State> 0 <ForwardPdfClass> 0 <SelfLoopPdfClass> 1 <Transition> 0 0.5 <Transition> 1 0.5 </State>
<State> 1 </State>
</TopologyEntry>
</Topology>
"""


def monophone_chain_model(kaldi_digits: Path, work: Path):
    """(tree, transition model): a chain topology on kaldi_digits' phones (written to
    ``work/topo``) with a monophone tree over its phone sets."""
    from hybridasr.kaldi.io.table import read_int_lists
    from hybridasr.tree.model import build_transition_model, monophone_tree, read_topology

    sets = read_int_lists(str(kaldi_digits / "data/lang/phones/sets.int"))
    phones = sorted({p for s in sets for p in s})
    (work / "topo").write_text(CHAIN_TOPO.format(phones=" ".join(map(str, phones))))
    topo = read_topology(str(work / "topo"))
    tree = monophone_tree(topo, sets)
    return tree, build_transition_model(tree, topo)


def fst_accepts(fst, labels) -> bool:
    """Some path of ``fst`` (FstArrays) from the start spells ``labels`` and ends in a final
    state (weights ignored)."""
    cur = np.zeros(fst.num_states, dtype=bool)
    cur[fst.start] = True
    for lab in labels:
        ok = cur[fst.src] & (fst.ilabel == lab)
        cur = np.zeros(fst.num_states, dtype=bool)
        cur[fst.dst[ok]] = True
        if not cur.any():
            return False
    return bool(np.any(cur & np.isfinite(fst.final)))


def fst_paths(fst):
    """Every label sequence from the start to a final state (a small acyclic graph)."""
    out = []
    arcs = [[] for _ in range(fst.num_states)]
    for s, lab, d in zip(fst.src.tolist(), fst.ilabel.tolist(), fst.dst.tolist()):
        arcs[s].append((lab, d))

    def walk(s, seq):
        if np.isfinite(fst.final[s]):
            out.append(tuple(seq))
        for lab, d in arcs[s]:
            walk(d, seq + [lab])

    walk(fst.start, [])
    return out


def digits_phone_seqs(kaldi_digits: Path) -> List[List[int]]:
    ali = f"ark:gunzip -c {kaldi_digits / 'exp/mono_ali/ali.1.gz'}|"
    return [s for _, s in alignment_phone_sequences(str(kaldi_digits / "exp/mono_ali/final.mdl"),
                                                    ali)]


def restrict(seqs: List[List[int]], phones: List[int]) -> List[List[int]]:
    """The given phones' subsequences of the real phone sequences (non-empty ones)."""
    keep = set(phones)
    out = [[p for p in s if p in keep] for s in seqs]
    return [s for s in out if s]


def brute_force_den(den, init, out: np.ndarray, leaky: float = 0.0) -> float:
    """log of the sum over all T-arc paths of the den graph (any start state, weighted by
    init; final costs ignored) of prob(path) * exp(sum_t out[t, pdf_t]). With ``leaky`` > 0
    each of the T+1 frame boundaries may instead jump from the current state to any state j
    with weight leaky * init(j) (Kaldi's leaky HMM)."""
    t_len = out.shape[0]
    n = den.num_states
    arcs = [[] for _ in range(n)]
    for s, l, w, d in zip(den.src.tolist(), den.ilabel.tolist(), den.weight.tolist(),
                          den.dst.tolist()):
        arcs[s].append((l - 1, -w, d))
    jumps = [(None, 0.0)] + ([(j, math.log(leaky * init[j])) for j in range(n)] if leaky else [])
    terms = []

    def walk(state, t, logw):
        for j, lj in jumps:  # the boundary before frame t (t == T: after the last frame)
            s = state if j is None else j
            lw = logw + lj
            if t == t_len:
                terms.append(lw)
                continue
            for pdf, lp, d in arcs[s]:
                walk(d, t + 1, lw + lp + out[t, pdf])

    for s0 in range(n):
        if init[s0] > 0:
            walk(s0, 0, math.log(init[s0]))
    terms = np.array(terms)
    m = terms.max()
    return float(m + np.log(np.exp(terms - m).sum()))


def brute_force_num(fst, out: np.ndarray) -> float:
    """log of the sum over the T-arc paths from the start state ending in a final state of
    exp(-cost(path) - final + sum_t out[t, pdf_t])."""
    t_len = out.shape[0]
    arcs = [[] for _ in range(fst.num_states)]
    for s, l, w, d in zip(fst.src.tolist(), fst.ilabel.tolist(), fst.weight.tolist(),
                          fst.dst.tolist()):
        arcs[s].append((l - 1, -w, d))
    terms = []

    def walk(s, t, lw):
        if t == t_len:
            if np.isfinite(fst.final[s]):
                terms.append(lw - float(fst.final[s]))
            return
        for pdf, lp, d in arcs[s]:
            walk(d, t + 1, lw + lp + out[t, pdf])

    walk(fst.start, 0, 0.0)
    if not terms:
        return -math.inf
    terms = np.array(terms)
    m = terms.max()
    return float(m + np.log(np.exp(terms - m).sum()))


def gmm_training_lattices(data_dir: Path, lang_dir: Path, final_mdl: Path, tree: Path,
                          num_utts: int = 0):
    """([(utterance, CompactLattice)], {utterance: frames}): a monophone GMM's log-likelihoods
    (its delta features with CMN) of ``data_dir``'s utterances (the first ``num_utts`` in
    order; 0: all) decoded on their training graphs with a lattice beam, not determinized
    (Kaldi's ``align_fmllr_lats.sh`` with ``--word-determinize=false``): lattices of several
    alignments, as a Kaldi chain recipe's numerator reads them. A relative ``data_dir`` is
    read from the current dir (a Kaldi dir's feats.scp may hold paths relative to it)."""
    from hybridasr.align.training_graphs import Lexicon, TrainingGraphCompiler
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.kaldi.gmm_model import read_gmm_model
    from hybridasr.kaldi.tree import read_tree

    tm, gmm = read_gmm_model(str(final_mdl))
    lex = Lexicon(str(lang_dir))
    comp = TrainingGraphCompiler(tm, read_tree(str(tree)), lex)
    text = {ln.split()[0]: ln.split()[1:] for ln in
            open(Path(data_dir) / "text", encoding="utf-8")}
    ds = UtteranceDataset.from_data_dir(
        str(data_dir), transform=FeatureTransform(norm_means=True, delta_order=2))
    utts = sorted(ds)[:num_utts or None]
    feats = {u: ds.load(u)[0] for u in utts}
    lats, frames = [], {}
    for utt in utts:
        graph = comp.compile(lex.word_ids(text[utt], utt)[0], utt)
        dec = LatticeDecoder(graph, tm.tid2pdf, tm.num_pdfs,
                             LatgenOptions(beam=20.0, lattice_beam=4.0,
                                           determinize_lattice=False))
        r = dec.decode(gmm.log_likelihoods(feats[utt]), 0.1, utt)
        dec.close()
        assert r.ok, utt
        lats.append((utt, r.lattice))
        frames[utt] = feats[utt].shape[0]
    return lats, frames


def write_lattice_dir(d, final_mdl, lats):
    """A Kaldi lattice dir: ``lat.1.gz`` of ``lats``, ``final.mdl`` (a copy), ``num_jobs``."""
    import os
    import shutil

    from hybridasr.kaldi.lattice import CompactLatticeWriter

    os.makedirs(d, exist_ok=True)
    shutil.copyfile(final_mdl, os.path.join(d, "final.mdl"))
    with open(os.path.join(d, "num_jobs"), "w") as fh:
        fh.write("1\n")
    with CompactLatticeWriter(f"ark:|gzip -c > {d}/lat.1.gz") as w:
        for utt, lat in lats:
            w.write(utt, lat)
    return d
