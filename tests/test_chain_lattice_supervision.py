"""Chain supervision from lattices (Kaldi's get_egs.sh with a lattice dir): a linear lattice of
a real kaldi_digits alignment gives exactly that alignment's supervision; a lattice of two
alignments accepts the union of theirs (Kaldi's per-frame union of allowed phones shown at
tolerance 0); real lattices (Kaldi's decode lattices, triphone too, and lattices of the
toolkit's decoder on the training graphs) accept their best path; read_supervisions reads a
lat.*.gz dir; a lattice of another model is an error naming file and utterance."""
from __future__ import annotations

import os

import numpy as np
import pytest

from chain_helpers import (fst_accepts, fst_paths, gmm_training_lattices, monophone_chain_model,
                           write_lattice_dir)
from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.phones import phone_segments
from hybridasr.chain.lattice_supervision import (UnusableLattice, lattice_supervision,
                                                 phone_lattice)
from hybridasr.chain.supervision import (PhoneLattice, SupervisionOptions, _context_instances,
                                         alignment_supervision)
from hybridasr.errors import FormatError
from hybridasr.kaldi.lattice import Arc, CompactLattice, read_lattices
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.chain.supervision_dir import read_supervisions
from hybridasr.train.lfmmi import LfMmiOptions
from hybridasr.tree.convert import convert_alignment
from hybridasr.tree.stats import phone_windows


@pytest.fixture(scope="module")
def setup(kaldi_digits, tmp_path_factory):
    """kaldi_digits' monophone alignment model and alignments; a chain topology, monophone
    tree and transition model on its phones (as tests/test_chain_supervision.py)."""
    tree, tm = monophone_chain_model(kaldi_digits, tmp_path_factory.mktemp("chain_lat_sup"))
    old = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    alis = list(iter_alignment_file(str(kaldi_digits / "exp/mono_ali/ali.1.gz")))
    return old, tree, tm, alis


def _chain(lat: CompactLattice, s: int, tids, chunk: int, dest: int = -1,
           final_tail: int = 0) -> None:
    """Arcs from ``s`` spelling ``tids`` in strings of ``chunk`` (cut anywhere, not at phone
    boundaries), to ``dest`` (-1: a new final state whose final weight holds the last
    ``final_tail`` transition-ids)."""
    body, tail = (tids[:len(tids) - final_tail], tids[len(tids) - final_tail:]) if final_tail \
        else (tids, [])
    pieces = [tuple(int(t) for t in body[i:i + chunk]) for i in range(0, len(body), chunk)]
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        n = dest if last and dest >= 0 else lat.add_state()
        lat.arcs[s].append(Arc(7 if k == 0 else 0, 1.0, 2.0, piece, n))
        s = n
    if dest < 0:
        lat.finals[s] = (0.5, 0.0, tuple(int(t) for t in tail))


def _lattice(*alis, chunks=(7, 5, 11)) -> CompactLattice:
    """One CompactLattice whose paths are the given alignments (one branch each from the
    start; the second's last 3 transition-ids in its final weight, as Kaldi may leave them)."""
    lat = CompactLattice()
    lat.start = lat.add_state()
    for i, ali in enumerate(alis):
        _chain(lat, lat.start, list(ali), chunks[i % len(chunks)], final_tail=3 if i else 0)
    return lat


def _same_language(a, b) -> bool:
    """Whether two deterministic, trimmed acceptors (FstArrays) accept the same sequences."""
    return _union_is(a, [b])


def _union_is(a, others) -> bool:
    """Whether the language of ``a`` is the union of those of ``others`` (all deterministic
    and trimmed): walk them side by side, compare each state's labels and finality."""
    def arcs(f):
        out = [dict() for _ in range(f.num_states)]
        for s, l, d in zip(f.src.tolist(), f.ilabel.tolist(), f.dst.tolist()):
            assert l not in out[s], "not deterministic"
            out[s][l] = d
        return out

    fa, fo = arcs(a), [arcs(o) for o in others]
    seen, todo = set(), [(a.start, tuple(o.start for o in others))]
    while todo:
        sa, so = todo.pop()
        if (sa, so) in seen:
            continue
        seen.add((sa, so))
        labels = set().union(*(fo[i][s].keys() for i, s in enumerate(so) if s is not None))
        if set(fa[sa]) != labels:
            return False
        fin = any(np.isfinite(others[i].final[s]) for i, s in enumerate(so) if s is not None)
        if bool(np.isfinite(a.final[sa])) != fin:
            return False
        for lab, d in fa[sa].items():
            todo.append((d, tuple(fo[i][s].get(lab) if s is not None else None
                                  for i, s in enumerate(so))))
    return True


def _shifted(old, ali, min_len=8, shift=6):
    """A copy of ``ali`` with one phone boundary (between two phones of at least ``min_len``
    frames, different from their neighbours) moved ``shift`` frames later: the first phone's
    last state's self-loops extended, the second's shortened. None if there is no such
    boundary."""
    segs = phone_segments(old, ali)
    ends = np.cumsum([n for _, n in segs])
    phones = [p for p, _ in segs]
    for i in range(1, len(segs) - 2):
        near = phones[max(0, i - 2):i + 4]
        if segs[i][1] >= min_len and segs[i + 1][1] >= min_len + shift and \
                len(set(near)) == len(near):
            e = int(ends[i])
            a = np.asarray(ali)
            loop = a[e - 1]  # reordered: the phone's last frames are its last state's loops
            if not old.tid_is_self_loop[loop]:
                continue
            # the next phone loses `shift` of its self-loop frames
            nxt = a[e:int(ends[i + 1])]
            keep = [k for k in range(len(nxt)) if not old.tid_is_self_loop[nxt[k]]]
            drop = [k for k in range(len(nxt)) if old.tid_is_self_loop[nxt[k]]][:shift]
            if len(drop) < shift:
                continue
            nxt = np.delete(nxt, drop)
            assert len(keep) <= len(nxt)
            out = np.concatenate([a[:e], [loop] * shift, nxt, a[int(ends[i + 1]):]])
            return i, out.astype(a.dtype)
    return None


def test_linear_lattice_is_the_alignment_supervision(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(5, 5, 3)
    for utt, ali in alis[:12]:
        lat = _lattice(ali)
        plat = phone_lattice(lat, old, utt)
        segs = phone_segments(old, ali)
        assert plat.phone.tolist() == [p for p, _ in segs]
        assert np.diff(plat.times).tolist() == [n for _, n in segs]
        got = lattice_supervision(lat, old, tree, tm, opts, utt)
        want = alignment_supervision(old, ali, tree, tm, opts, utt)
        assert got.num_frames == want.num_frames
        assert _same_language(got.fst, want.fst), utt
        assert got.fst.num_states == want.fst.num_states  # both minimal
        new = convert_alignment(old, tm, tree, ali, frame_subsampling_factor=3)
        assert fst_accepts(got.fst, tm.tid2pdf[new] + 1)


def test_two_alignments_accept_the_union(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(5, 5, 3)
    tested = 0
    for utt, ali in alis:
        found = _shifted(old, ali)
        if found is None:
            continue
        _, other = found
        sups = [alignment_supervision(old, a, tree, tm, opts, utt) for a in (ali, other)]
        both = lattice_supervision(_lattice(ali, other), old, tree, tm, opts, utt)
        assert _union_is(both.fst, [x.fst for x in sups]), utt
        assert not _same_language(both.fst, sups[0].fst)  # the shift matters
        assert not _same_language(both.fst, sups[1].fst)
        tested += 1
        if tested == 4:
            break
    assert tested == 4


def _chain_pdfs(tree, phones, durs):
    """pdf-id + 1 per frame of the chain topology's path with these phone lengths."""
    return tuple(int(x) for p, n in zip(phones, durs)
                 for x in [tree.compute([p], 0) + 1] + [tree.compute([p], 1) + 1] * (n - 1))


def test_tolerance_zero_and_five(setup):
    """At tolerance 0 a linear lattice accepts its alignment alone; two alignments with one
    boundary 6 frames apart accept the 7 positions of that boundary from one to the other
    (Kaldi's allowed phones are a union per frame, not per path); at tolerance 5 the
    boundary may move 5 frames either way of the alignment's, of either path's with both."""
    old, tree, tm, alis = setup
    for utt, ali in alis:
        found = _shifted(old, ali)
        if found is not None:
            break
    i, other = found
    segs = phone_segments(old, ali)
    phones, durs = [p for p, _ in segs], [n for _, n in segs]

    def moved(j, d):
        out = list(durs)
        out[j] += d
        out[j + 1] -= d
        return _chain_pdfs(tree, phones, out)

    zero, five = SupervisionOptions(0, 0, 1), SupervisionOptions(5, 5, 1)
    pdfs = [tuple(int(x) for x in tm.tid2pdf[convert_alignment(old, tm, tree, a)] + 1)
            for a in (ali, other)]
    assert pdfs == [moved(i, 0), moved(i, 6)]
    one = lattice_supervision(_lattice(ali), old, tree, tm, zero, utt)
    assert fst_paths(one.fst) == [pdfs[0]]
    two = lattice_supervision(_lattice(ali, other), old, tree, tm, zero, utt)
    assert set(fst_paths(two.fst)) == {moved(i, k) for k in range(7)}
    one5 = lattice_supervision(_lattice(ali), old, tree, tm, five, utt)
    assert [k for k in range(-7, 8) if fst_accepts(one5.fst, moved(i, k))] == \
        list(range(-5, 6))
    wide = lattice_supervision(_lattice(ali, other), old, tree, tm, five, utt)
    assert [k for k in range(-7, 14) if fst_accepts(wide.fst, moved(i, k))] == \
        list(range(-5, 12))


def test_context_windows_of_a_linear_lattice(kaldi_polish):
    """The context expansion over a phone lattice gives, on a linear one, the windows of the
    phone sequence (tri1's triphone tree)."""
    tree = read_tree(str(kaldi_polish / "exp/tri1/tree"))
    old = read_transition_model(str(kaldi_polish / "exp/tri1/35.mdl"))
    utt, ali = next(iter_alignment_file(str(kaldi_polish / "exp/tri1/ali.1.gz")))
    segs = phone_segments(old, ali)
    phones = [p for p, _ in segs]
    plat = PhoneLattice.linear(phones, [n for _, n in segs])
    arcs, windows, succ, starts, ends = _context_instances(plat, 3, 1)
    assert arcs == list(range(len(phones))) and starts == [0] and ends == {len(phones) - 1}
    assert [list(w) for w in windows] == phone_windows(np.asarray(phones), 3, 1).tolist()
    assert succ == [[k + 1] for k in range(len(phones) - 1)] + [[]]


@pytest.mark.parametrize("corpus,sysdir,mdl", [("kaldi_digits", "exp/mono", "40.mdl"),
                                               ("kaldi_polish", "exp/tri1", "35.mdl")])
def test_kaldi_decode_lattices_accept_their_best_path(corpus, sysdir, mdl, request):
    """Kaldi's own lattices (gmm-latgen-faster's, triphone on polish: several phone paths an
    utterance), the GMM's own tree and model at tolerance 0: the supervision accepts the best
    path's pdfs; with its last frame's pdf changed, not."""
    from hybridasr.decode.lattice_best_path import best_path

    base = request.getfixturevalue(corpus) / sysdir
    tm, tree = read_transition_model(str(base / mdl)), read_tree(str(base / "tree"))
    lats = list(read_lattices(f"ark:gunzip -c {base / 'decode/lat.1.gz'}|"))[:4]
    branching = 0
    for utt, lat in lats:
        plat = phone_lattice(lat, tm, utt)
        branching += len(plat.src) > plat.num_states - 1
        sup = lattice_supervision(lat, tm, tree, tm, SupervisionOptions(0, 0, 1), utt)
        pdfs = tm.tid2pdf[np.asarray(best_path(lat).tids)] + 1
        assert sup.num_frames == len(pdfs) == plat.num_frames
        assert fst_accepts(sup.fst, pdfs), utt
        bad = pdfs.copy()
        bad[-1] = bad[-1] % tm.num_pdfs + 1
        assert not fst_accepts(sup.fst, bad)
    if corpus == "kaldi_polish":
        assert branching == len(lats)


def test_lattices_of_the_training_graphs(setup, kaldi_digits, tmp_path):
    """Real lattices: the GMM's log-likelihoods of training utterances decoded on their
    training graphs with a lattice beam (several alignments), written as lat.1.gz: read_supervisions
    reads the dir as lattices and each supervision accepts its lattice's best path's pdfs (in
    the chain tree, subsampled by 3) and every path of the tolerance-0 phone lattice."""
    from hybridasr.decode.lattice_best_path import best_path

    _, tree, tm, _ = setup
    mdl = str(kaldi_digits / "exp/mono_ali/final.mdl")
    old = read_transition_model(mdl)
    cwd = os.getcwd()
    os.chdir(kaldi_digits)  # (its feats.scp paths are relative to the Kaldi dir)
    try:
        lats, frames = gmm_training_lattices("data/train", kaldi_digits / "data/lang", mdl,
                                             kaldi_digits / "exp/mono/tree", num_utts=4)
    finally:
        os.chdir(cwd)
    utts = [u for u, _ in lats]
    lat_dir = write_lattice_dir(str(tmp_path / "lats"), mdl, lats)
    opts = LfMmiOptions()
    sups, skipped = read_supervisions(lat_dir, {**frames, "missing": 30}, tree, tm, opts)
    assert sorted(sups) == sorted(utts)
    assert skipped["no_lattice"] == ["missing"] and not skipped["unusable_lattice"]
    multi = 0
    for utt, lat in read_lattices(f"ark:gunzip -c {lat_dir}/lat.1.gz|"):
        tids = np.asarray(best_path(lat).tids)
        new = convert_alignment(old, tm, tree, tids, frame_subsampling_factor=3)
        assert fst_accepts(sups[utt].fst, tm.tid2pdf[new] + 1), utt
        plat = phone_lattice(lat, old, utt)
        multi += len(plat.src) > plat.num_states - 1
    assert multi >= 3  # lattices with more than one phone path


def test_unusable_and_foreign_lattices(setup, kaldi_digits, tmp_path):
    """An empty lattice or one whose path starts inside a phone is a counted skip; a
    transition-id outside final.mdl an error naming the file and the utterance."""
    old, tree, tm, alis = setup
    mdl = str(kaldi_digits / "exp/mono_ali/final.mdl")
    (u1, a1), (u2, a2), (u3, a3) = alis[:3]
    empty = CompactLattice()
    empty.start = empty.add_state()
    empty.add_state()
    empty.arcs[0].append(Arc(1, 0.0, 0.0, tuple(int(t) for t in a2), 1))  # 1 is not final
    cut = _lattice(a3[1:])  # starts inside the first phone
    d = write_lattice_dir(str(tmp_path / "lats"), mdl,
                          [(u1, _lattice(a1)), (u2, empty), (u3, cut)])
    frames = {u1: len(a1), u2: len(a2), u3: len(a3) - 1}
    sups, skipped = read_supervisions(d, frames, tree, tm, LfMmiOptions())
    assert sorted(sups) == [u1] and sorted(skipped["unusable_lattice"]) == sorted([u2, u3])
    with pytest.raises(UnusableLattice, match="no complete path"):
        phone_lattice(empty, old, u2)
    bad = _lattice(a1)
    bad.arcs[bad.start][0].tids = (old.num_transition_ids + 5,) + bad.arcs[bad.start][0].tids[1:]
    d2 = write_lattice_dir(str(tmp_path / "bad"), mdl, [(u1, bad)])
    with pytest.raises(FormatError, match=rf"lat\.1\.gz: utterance {u1}: transition-id") as e:
        read_supervisions(d2, {u1: len(a1)}, tree, tm, LfMmiOptions())
    assert not isinstance(e.value, UnusableLattice)
