"""The WFST route of CTC (hybridasr.ctc.graph): the token transducer T reads exactly the frame
labellings of a unit sequence; T o L spells each word of a real lang dir with the units of its
transcripts and nothing else; TLG (with the lang's G) decodes hand-built posteriors spelling a
digits and a Polish sentence into their words with the toolkit's decoders, unchanged."""
from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest

from hybridasr.ctc import BLANK
from hybridasr.ctc.decode import collapse
from hybridasr.ctc.graph import (ctc_transition_model, lexicon_fst, make_ctc_graph, token_fst,
                                 unit_lexicon)
from hybridasr.ctc.units import (UnitOptions, Units, make_units_dir, read_transcripts,
                                 train_units)
from hybridasr.graph.arrays import FstArrays
from hybridasr.graph.fst_steps import compose, rm_arcs_with_output, rm_input_symbols
from hybridasr.kaldi.symbol_table import read_symbol_ids


def _walk(t: FstArrays, labels):
    """Every path of T reading input labels ``labels`` (T has no input epsilons): the output
    units of each (epsilons dropped)."""
    paths = [(t.start, [])]
    for lab in labels:
        paths = [(int(t.dst[a]), out + ([int(t.olabel[a])] if t.olabel[a] else []))
                 for s, out in paths for a in np.flatnonzero((t.src == s) & (t.ilabel == lab))]
    return [out for s, out in paths if np.isfinite(t.final[s])]


def _outputs(fst: FstArrays):
    """The output sequences of every complete path of an acyclic FST."""
    res = []
    stack = [(fst.start, [])]
    while stack:
        assert len(res) + len(stack) < 10000, "too many paths (a cycle?)"
        s, out = stack.pop()
        if np.isfinite(fst.final[s]):
            res.append(out)
        for a in np.flatnonzero(fst.src == s):
            stack.append((int(fst.dst[a]), out + ([int(fst.olabel[a])] if fst.olabel[a] else [])))
    return sorted(res)


def _read(frames, tl: FstArrays):
    """The output sequences of the paths of ``tl`` that read the frame labelling."""
    import kaldifst

    a = kaldifst.compose(_acceptor(frames), tl.to_fst())
    kaldifst.connect(a)
    return _outputs(FstArrays.from_fst(a)) if a.num_states else []


def _spelled(seq, entries, units):
    """The reference: [word ids] when ``seq`` cuts into words' spellings at its word-start
    pieces (``▁...``), [] when it does not (no path)."""
    spelling = {tuple(spell): wid for wid, spell in entries}
    starts = [i for i, u in enumerate(seq) if units.sp.id_to_piece(u).startswith("\u2581")]
    if seq and (not starts or starts[0] != 0):
        return []
    cuts = starts + [len(seq)]
    wids = [spelling.get(tuple(seq[a:b])) for a, b in zip(cuts, cuts[1:])]
    return [] if None in wids else [wids]


def _acceptor(frames):
    """A linear acceptor of the frame labelling (input label = unit + 1, as TLG's)."""
    arcs = [[(f + 1, f + 1, 0.0, i + 1)] for i, f in enumerate(frames)] + [[]]
    final = np.full(len(frames) + 1, np.inf, dtype=np.float32)
    final[-1] = 0.0
    return FstArrays.from_lists(0, final, arcs).to_fst()


def _frames(ids, per_unit=2, blank_every=False):
    """A CTC alignment of unit ids: each unit ``per_unit`` frames, a blank between repeated
    units (and between all units with ``blank_every``), blanks at both ends."""
    out, prev = [BLANK], None
    for u in ids:
        if u == prev or (blank_every and prev is not None):
            out.append(BLANK)
        out += [u] * per_unit
        prev = u
    return out + [BLANK]


def test_token_fst_reads_exactly_each_units_alignments():
    v = 4  # blank + 3 units
    t = token_fst(v)
    assert t.num_states == v and t.num_arcs == v * v and np.all(t.final == 0)
    for s in range(v):  # deterministic: each input label once per state
        assert sorted(t.ilabel[t.src == s].tolist()) == list(range(1, v + 1))
        ol = t.olabel[t.src == s]
        assert np.all(np.diff(ol) >= 0)  # sorted on outputs (for composition)
    for n in range(5):
        for frames in itertools.product(range(v), repeat=n):
            outs = _walk(t, [f + 1 for f in frames])
            assert outs == [collapse(frames)], frames  # one path, the CTC collapse
    # the same through kaldifst's composition with a linear acceptor
    tl = FstArrays.from_fst(compose(_acceptor([1, 1, 0, 1, 2, 2]), t.to_fst(), "A o T"))
    assert _outputs(tl) == [[1, 1, 2]]


@pytest.fixture(scope="module")
def digits_lexicon(kaldi_digits):
    units = train_units(read_transcripts(str(kaldi_digits / "data/train/text"))[0])
    words = read_symbol_ids(str(kaldi_digits / "data/lang/words.txt"))
    entries, left = unit_lexicon(units, words, oov="<UNK>")
    lex, disambig = lexicon_fst(entries, units.num_outputs, words["#0"])
    # T o L without G: L's disambiguation symbols as epsilons, its #0 loop (for G) removed
    plain = rm_arcs_with_output(rm_input_symbols(lex, disambig), [words["#0"]])
    tl = FstArrays.from_fst(compose(token_fst(units.num_outputs).to_fst(), plain.to_fst(),
                                    "T o L"))
    return units, words, entries, left, tl


def test_t_o_l_accepts_exactly_the_unit_sequences_of_each_word(digits_lexicon):
    units, words, entries, left, tl = digits_lexicon
    digits = "zero one two three four five six seven eight nine".split()
    assert sorted(units.decode(spell)[0] for _, spell in entries) == sorted(digits)
    assert left == {"special": ["<eps>", "!SIL", "<UNK>", "#0", "<s>", "</s>"],
                    "unspellable": []}
    repeated, kinds = 0, set()
    for word in digits:
        ids = units.encode_word(word)
        for per_unit, every in ((1, False), (3, False), (2, True)):
            got = _read(_frames(ids, per_unit, every), tl)
            assert got == [[words[word]]], (word, per_unit, every)  # one path, the word
        # other unit sequences: read iff they are words' spellings, one after the other
        for seq in (ids[:-1], ids[1:], ids + ids[-1:], ids[::-1], ids + ids, ids[:1] + ids):
            expected = _spelled(seq, entries, units)
            assert _read(_frames(seq), tl) == expected, (word, seq)
            kinds.add(len(expected[0]) if expected else -1)
        for i in range(1, len(ids)):
            if ids[i] == ids[i - 1]:  # a repeated unit without a blank between is one unit
                repeated += 1
                frames = _frames(ids[:i], 2) + _frames(ids[i:], 2)[1:]
                frames = [f for k, f in enumerate(frames) if not (f == BLANK and 0 < k and
                                                                  frames[k - 1] == ids[i - 1]
                                                                  and k + 1 < len(frames)
                                                                  and frames[k + 1] == ids[i])]
                assert collapse(frames) != ids
                assert _read(frames, tl) == []
    assert repeated  # e.g. "three": ... e e
    assert {-1, 2} <= kinds  # rejected sequences and two-word ones were among them
    # the word loop: two words in a row
    ids = units.encode(["seven", "seven"])
    assert _read(_frames(ids), tl) == [[words["seven"], words["seven"]]]


def _posteriors(ids, v, seed, peak=0.7):
    """A hand-built posteriorgram spelling ``ids``: ``peak`` on each frame's label of a CTC
    alignment (3 frames a unit, blanks between words' units), the rest spread at random."""
    rng = np.random.default_rng(seed)
    frames = _frames(ids, per_unit=3, blank_every=True)
    rest = rng.dirichlet(np.ones(v - 1), size=len(frames)) * (1 - peak)
    post = np.empty((len(frames), v))
    for i, f in enumerate(frames):
        post[i, np.arange(v) != f] = rest[i]
        post[i, f] = peak
    return np.log(post).astype(np.float32)


def _decode_both(graph_dir, loglikes, acoustic_scale, lattices=True):
    """The words of the 1-best decoder, and of the lattice decoder's best path (the same).
    Lattices only at acoustic scale 1: these hand-built posteriors are flat enough that at 0.1
    the lattice beam holds exponentially many word sequences (real CTC posteriors are peaky)."""
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.decode.graph import load_graph_dir, load_model_and_graph
    from hybridasr.decode.lattice_best_path import best_path
    from hybridasr.decode.lattice_decoder import LatgenOptions, LatticeDecoder

    fst_path = os.path.join(graph_dir, "HCLG.fst")
    tm, fst, max_ilabel = load_model_and_graph(os.path.join(graph_dir, "final.mdl"), fst_path)
    symbols = load_graph_dir(graph_dir).words
    res = MappedDecoder(fst, tm.tid2pdf, tm.num_pdfs, DecodeOptions(), max_ilabel=max_ilabel,
                        fst_path=fst_path).decode(loglikes, acoustic_scale)
    assert res.ok and res.reached_final
    assert collapse(tm.tid2pdf[res.alignment]) == collapse(loglikes.argmax(axis=1))
    if not lattices:
        return [symbols[w] for w in res.words]
    lat = LatticeDecoder(fst, tm.tid2pdf, tm.num_pdfs, LatgenOptions(), max_ilabel=max_ilabel,
                         fst_path=fst_path).decode(loglikes, acoustic_scale)
    assert lat.ok
    bp = best_path(lat.lattice, acoustic_scale=acoustic_scale)
    assert bp.words == res.words
    return [symbols[w] for w in res.words]


def test_tlg_decodes_a_digits_sentence(tmp_path, kaldi_digits):
    make_units_dir(str(kaldi_digits / "data/train/text"), str(tmp_path / "units"))
    lang = kaldi_digits / "data/lang"
    stats = make_ctc_graph(str(tmp_path / "units"), str(lang), str(tmp_path / "graph"))
    g = tmp_path / "graph"
    assert os.readlink(g / "HCLG.fst") == "TLG.fst"
    assert (g / "words.txt").read_bytes() == (lang / "words.txt").read_bytes()
    assert (g / "units.txt").read_bytes() == (tmp_path / "units/units.txt").read_bytes()
    units = Units.load(str(tmp_path / "units/units.model"))
    v = units.num_outputs
    assert int((g / "num_pdfs").read_text()) == v == stats["num_outputs"]
    assert json.loads((g / "tlg.json").read_text())["TLG"]["states"] == stats["TLG"]["states"]
    assert stats["words"] == 10 and stats["left_out"]["unspellable"] == []
    # the command-line tool builds the same graph
    from train_helpers import load_pybin
    assert load_pybin("make_ctc_graph").main([str(tmp_path / "units"), str(lang),
                                              str(tmp_path / "graph2")]) == 0
    assert (tmp_path / "graph2/TLG.fst").read_bytes() == (g / "TLG.fst").read_bytes()
    from hybridasr.kaldi.transition_model import read_transition_model
    tm = read_transition_model(str(g / "final.mdl"))
    assert tm.num_pdfs == v and tm.tid2pdf[1:].tolist() == list(range(v))
    assert np.array_equal(tm.tid2pdf, ctc_transition_model(v).tid2pdf)
    # a sentence of the test set's words, in a row
    text = read_transcripts(str(kaldi_digits / "data/test/text"))[0]
    sentence = [w for ws in list(text.values())[:6] for w in ws]
    assert len(sentence) == 6
    for seed, scale in ((0, 1.0), (1, 0.1)):
        post = _posteriors(units.encode(sentence), v, seed)
        assert _decode_both(str(g), post, scale, lattices=scale == 1.0) == sentence


def test_tlg_decodes_a_polish_sentence(tmp_path, kaldi_polish):
    lang = kaldi_polish / "data/lang"
    make_units_dir(str(kaldi_polish / "data/train/text"), str(tmp_path / "units"),
                   UnitOptions(vocab=str(lang / "words.txt")))
    stats = make_ctc_graph(str(tmp_path / "units"), str(lang), str(tmp_path / "graph"))
    units = Units.load(str(tmp_path / "units/units.model"))
    words = read_symbol_ids(str(lang / "words.txt"))
    left = stats["left_out"]
    assert "<UNK>" in left["special"] and "!SIL" in left["special"]
    assert left["unspellable"] and all(not units.can_spell(w) for w in left["unspellable"])
    assert stats["words"] == len(words) - len(left["special"]) - len(left["unspellable"])
    # a sentence G holds every word of (its unigram LM lacks words of every test sentence)
    import kaldifst
    in_g = set(FstArrays.from_fst(kaldifst.StdVectorFst.read(str(lang / "G.fst"))).olabel.tolist())
    text = read_transcripts(str(kaldi_polish / "data/train/text"), str(lang / "words.txt"))[0]
    sentence = next(ws for ws in text.values() if len(ws) > 8 and
                    all(words.get(w) in in_g and units.can_spell(w) for w in ws))
    post = _posteriors(units.encode(sentence), units.num_outputs, 2, peak=0.8)
    assert _decode_both(str(tmp_path / "graph"), post, 1.0) == sentence
    assert math.isfinite(stats["TLG"]["arcs"]) and stats["TLG"]["states"] > stats["LG"]["states"]
