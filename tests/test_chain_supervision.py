"""Chain supervision from kaldi_digits' real alignments: the numerator graph accepts the
alignment's own (subsampled) pdf sequence, only it at tolerance 0, boundary shifts within the
tolerance and not beyond; the language against brute force over segmentations; chunks cut as
Kaldi's splitter and batched by the numerator forward-backward."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from chain_helpers import CHAIN_TOPO, brute_force_num, fst_accepts, fst_paths
from hybridasr.align.phones import phone_segments
from hybridasr.chain.chunks import chunk_ranges, parse_chunk_widths
from hybridasr.chain.num_forward_backward import NumGraphs, num_log_prob
from hybridasr.chain.supervision import (SupervisionOptions, alignment_supervision,
                                         make_supervision, proto_supervision, split_supervision)
from hybridasr.errors import ConfigError
from hybridasr.kaldi.io.intvec import read_int_vectors
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.tree.convert import convert_alignment
from hybridasr.tree.stats import phone_windows
from hybridasr.tree.model import monophone_tree, build_transition_model, read_topology
from hybridasr.kaldi.io.table import read_int_lists


@pytest.fixture(scope="module")
def setup(kaldi_digits, tmp_path_factory):
    d = tmp_path_factory.mktemp("chain_sup")
    phones = sorted({p for s in read_int_lists(str(kaldi_digits / "data/lang/phones/sets.int"))
                     for p in s})
    (d / "topo").write_text(CHAIN_TOPO.format(phones=" ".join(map(str, phones))))
    topo = read_topology(str(d / "topo"))
    tree = monophone_tree(topo, read_int_lists(str(kaldi_digits / "data/lang/phones/sets.int")))
    tm = build_transition_model(tree, topo)
    old = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    alis = list(read_int_vectors(f"ark:gunzip -c {kaldi_digits / 'exp/mono_ali/ali.1.gz'}|"))
    return old, tree, tm, alis


def _pdf_seq(tree, phones, durs):
    """pdf-id + 1 per frame of a chain-topology path with these phone lengths."""
    out = []
    wins = phone_windows(np.asarray(phones), tree.context_width, tree.central_position)
    for win, n in zip(wins.tolist(), durs):
        out += [tree.compute(win, 0) + 1] + [tree.compute(win, 1) + 1] * (n - 1)
    return tuple(out)


def test_accepts_the_subsampled_alignment(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(frame_subsampling_factor=3)
    for utt, ali in alis:
        sup = alignment_supervision(old, ali, tree, tm, opts, utt)
        new = convert_alignment(old, tm, tree, ali, frame_subsampling_factor=3)
        assert sup.num_frames == len(new) == (len(ali) + 2) // 3
        assert fst_accepts(sup.fst, tm.tid2pdf[new] + 1), utt
        assert np.all(np.diff(sup.frames) >= 0) and sup.frames[sup.fst.start] == 0
        assert np.all(sup.frames[sup.fst.dst] == sup.frames[sup.fst.src] + 1)
        assert np.all(sup.fst.weight == 0)


def test_tolerance_zero_accepts_only_the_alignment(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(0, 0, 1)
    for utt, ali in alis[:40]:
        segs = phone_segments(old, ali)
        sup = make_supervision([p for p, _ in segs], [n for _, n in segs], tree, tm, opts)
        new = convert_alignment(old, tm, tree, ali)  # chain topology, full frame rate
        assert fst_paths(sup.fst) == [tuple(tm.tid2pdf[new] + 1)], utt


def test_tolerance_five_allows_shifts_up_to_five_frames(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(5, 5, 1)
    tested = 0
    for utt, ali in alis:
        segs = phone_segments(old, ali)
        phones, durs = [p for p, _ in segs], [n for _, n in segs]
        sup = make_supervision(phones, durs, tree, tm, opts)
        for i in range(len(phones) - 1):
            # a boundary between two long phones, neither of them elsewhere nearby
            if durs[i] < 8 or durs[i + 1] < 8 or \
                    len({phones[j] for j in range(max(0, i - 2), min(len(phones), i + 4))}) < \
                    min(len(phones), i + 4) - max(0, i - 2):
                continue
            for d in range(-7, 8):
                shifted = list(durs)
                shifted[i] += d
                shifted[i + 1] -= d
                assert fst_accepts(sup.fst, _pdf_seq(tree, phones, shifted)) == (abs(d) <= 5), \
                    (utt, i, d)
            tested += 1
    assert tested >= 5


def _brute_force_language(phones, allowed, tree):
    """All pdf sequences of segmentations of len(allowed) frames into the phones (>= 1 frame
    each) whose every frame's phone is allowed there."""
    t_len, out = len(allowed), set()

    def rec(i, t, durs):
        if i == len(phones):
            if t == t_len:
                out.add(_pdf_seq(tree, phones, durs))
            return
        for n in range(1, t_len - t + 1):
            if phones[i] not in allowed[t + n - 1]:
                break
            rec(i + 1, t + n, durs + [n])

    rec(0, 0, [])
    return out


def test_language_against_brute_force_at_subsampling_3(setup):
    old, tree, tm, alis = setup
    short = sorted(alis, key=lambda a: len(a[1]))[:6]
    for tol in (1, 5):
        opts = SupervisionOptions(tol, tol, 3)
        for utt, ali in short:
            segs = phone_segments(old, ali)
            phones = [p for p, _ in segs]
            allowed = proto_supervision(phones, [n for _, n in segs], opts)
            sup = alignment_supervision(old, ali, tree, tm, opts, utt)
            got = fst_paths(sup.fst)
            assert len(got) == len(set(got))  # determinized: one path per pdf sequence
            assert set(got) == _brute_force_language(phones, allowed, tree), (utt, tol)
            # chunks: the sub-sequences of the full language
            for begin, width in ((0, 3), (1, 4), (sup.num_frames - 3, 3)):
                chunk = split_supervision(sup, begin, width)
                assert set(fst_paths(chunk)) == {s[begin:begin + width] for s in got}


def test_chunks_batch_in_the_numerator(setup):
    old, tree, tm, alis = setup
    opts = SupervisionOptions(5, 5, 3)
    utt, ali = max(alis, key=lambda a: len(a[1]))
    sup = alignment_supervision(old, ali, tree, tm, opts, utt)
    widths = parse_chunk_widths("15,12,18", 3)
    ranges = chunk_ranges(sup.num_frames, widths, 3)
    assert len({w for _, w in ranges}) == 1 and len(ranges) >= 2
    assert ranges[0][0] == 0 and ranges[-1][0] + ranges[-1][1] == sup.num_frames
    width = ranges[0][1]
    chunks = [split_supervision(sup, b, w) for b, w in ranges[:3]]
    g = NumGraphs.from_fsts(chunks, tm.num_pdfs, dtype=torch.float64)
    out = torch.randn(len(chunks), width, tm.num_pdfs, dtype=torch.float64,
                      generator=torch.Generator().manual_seed(0))
    got = num_log_prob(out, g)
    for b, c in enumerate(chunks):
        assert float(got[b]) == pytest.approx(brute_force_num(c, out[b].numpy()), abs=1e-9)


def test_chunk_ranges_and_options():
    assert chunk_ranges(10, [45], 3) == []  # shorter than the smallest width: no chunk
    assert chunk_ranges(50, [150, 120], 3) == [(0, 50)]
    r = chunk_ranges(140, [150, 120, 180], 3)  # 140 = 2 x 60 + 20 or 3 x 50 - 10
    assert r == [(0, 50), (45, 50), (90, 50)]
    with pytest.raises(ConfigError):
        parse_chunk_widths("140,100", 3)
    with pytest.raises(ConfigError):  # Kaldi: left + right + 1 >= factor
        proto_supervision([1], [3], SupervisionOptions(0, 0, 3))
