"""Language models without Kaldi: n-gram estimation (hybridasr.lang.ngram), ARPA files
(hybridasr.lang.arpa) and G.fst (hybridasr.lang.arpa_to_fst, utils/format_lm.sh), checked
against hand-computed probabilities and against the real Kaldi dirs in ../shared."""
from __future__ import annotations

import gzip
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.fst import const_fst_arrays
from hybridasr.lang.arpa import ArpaLm, ArpaReader
from hybridasr.lang.arpa_to_fst import arpa_to_fst, format_lm
from hybridasr.lang.ngram import NgramOptions, make_ngram_lm, read_sentences, read_vocab

REPO = Path(__file__).resolve().parents[1]
LEX = "data/local/dict/lexicon.txt"

# <s> c </s> / <s> c c </s> / <s> b c </s> / <s> a b </s> / <s> a c c </s> / <s> a </s>
TINY = "c\nc c\nb c\na b\na c c\na\n"


def _arpa_lines(path):
    """(order, words, log10 prob, log10 back-off or None) of each n-gram line, in file order."""
    out, order = [], 0
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("\\") and line.endswith("-grams:"):
                order = int(line[1:line.index("-")])
            elif line and not line.startswith("\\") and order:
                f_ = line.split("\t")
                out.append((order, tuple(f_[1].split(" ")), float(f_[0]),
                            float(f_[2]) if len(f_) > 2 else None))
    return out


def _expect(got, want, tol=1e-6):
    """``want``: {words: (prob, back-off prob or None)} in probabilities, not logs."""
    table = {w: (p, b) for _, w, p, b in got}
    assert set(table) == set(want)
    for words, (p, b) in want.items():
        lp, lb = table[words]
        assert lp == pytest.approx(-99 if p == 0 else math.log10(p), abs=tol), words
        if b is None:
            assert lb is None, words
        else:
            assert lb == pytest.approx(math.log10(b), abs=tol), words


def _lm(tmp_path, text=TINY, name="lm.arpa", **opts):
    src = tmp_path / "text"
    src.write_text(text, encoding="utf-8")
    make_ngram_lm(str(src), str(tmp_path / name), NgramOptions(**opts))
    return tmp_path / name


# ------------------------------------------------------------------ hand-computed models
def test_modified_kneser_ney_bigram_by_hand(tmp_path):
    got = _arpa_lines(_lm(tmp_path, order=2, smoothing="kn"))
    # bigram counts: <s> a 3, <s> b 1, <s> c 2, a b 1, a c 1, a </s> 1, b c 1, b </s> 1,
    # c c 2, c </s> 4.  Counts-of-counts n1..n4 = 6, 2, 1, 1:
    y = 6 / (6 + 2 * 2)  # 0.6
    d1, d2, d3 = 1 - 2 * y * 2 / 6, 2 - 3 * y * 1 / 2, 3 - 4 * y * 1 / 1  # 0.6, 1.1, 0.6
    # unigram continuation counts (different words before): a {<s>} 1, b {<s>, a} 2,
    # c {<s>, c, b, a} 4, </s> {c, b, a} 3; counts-of-counts 1, 1, 1, 1:
    y1 = 1 / (1 + 2 * 1)
    e1, e2, e3 = 1 - 2 * y1, 2 - 3 * y1, 3 - 4 * y1  # 1/3, 1, 5/3
    t0 = 1 + 2 + 4 + 3
    g0 = (e1 * 1 + e2 * 1 + e3 * 2) / t0  # N1 = {a}, N2 = {b}, N3+ = {c, </s>}
    uni = {"a": (1 - e1) / t0 + g0 / 4, "b": (2 - e2) / t0 + g0 / 4,
           "c": (4 - e3) / t0 + g0 / 4, "</s>": (3 - e3) / t0 + g0 / 4}  # |V| = 4
    assert (uni["a"], uni["b"], uni["c"], uni["</s>"]) == pytest.approx(
        (11 / 60, 13 / 60, 21 / 60, 15 / 60))
    g_s, g_a, g_b, g_c = (d3 + d1 + d2) / 6, 3 * d1 / 3, 2 * d1 / 2, (d3 + d2) / 6
    want = {("<s>",): (0, g_s), ("a",): (uni["a"], g_a), ("b",): (uni["b"], g_b),
            ("c",): (uni["c"], g_c), ("</s>",): (uni["</s>"], None),
            ("<s>", "a"): ((3 - d3) / 6 + g_s * uni["a"], None),
            ("<s>", "b"): ((1 - d1) / 6 + g_s * uni["b"], None),
            ("<s>", "c"): ((2 - d2) / 6 + g_s * uni["c"], None),
            ("a", "b"): ((1 - d1) / 3 + g_a * uni["b"], None),
            ("a", "c"): ((1 - d1) / 3 + g_a * uni["c"], None),
            ("a", "</s>"): ((1 - d1) / 3 + g_a * uni["</s>"], None),
            ("b", "c"): ((1 - d1) / 2 + g_b * uni["c"], None),
            ("b", "</s>"): ((1 - d1) / 2 + g_b * uni["</s>"], None),
            ("c", "c"): ((2 - d2) / 6 + g_c * uni["c"], None),
            ("c", "</s>"): ((4 - d3) / 6 + g_c * uni["</s>"], None)}
    _expect(got, want)
    # SRILM's order: unigrams by bytes, bigrams by history then word
    assert [w for _, w, _, _ in got] == [
        ("</s>",), ("<s>",), ("a",), ("b",), ("c",),
        ("<s>", "a"), ("<s>", "b"), ("<s>", "c"), ("a", "</s>"), ("a", "b"), ("a", "c"),
        ("b", "</s>"), ("b", "c"), ("c", "</s>"), ("c", "c")]
    assert (tmp_path / "lm.arpa").read_text().startswith("\n\\data\\\nngram 1=5\nngram 2=10\n")


def test_witten_bell_bigram_by_hand(tmp_path):
    got = _arpa_lines(_lm(tmp_path, order=2, smoothing="wb"))
    # unigram counts a 3, b 2, c 6, </s> 6: T = 17, U = 4 types, |V| = 4
    uni = {w: (c + 4 / 4) / (17 + 4) for w, c in (("a", 3), ("b", 2), ("c", 6), ("</s>", 6))}

    def wb(c, t, u, w):  # (c(h z) + U(h) p(z)) / (T(h) + U(h))
        return (c + u * uni[w]) / (t + u)

    want = {("<s>",): (0, 3 / 9), ("a",): (uni["a"], 3 / 6), ("b",): (uni["b"], 2 / 4),
            ("c",): (uni["c"], 2 / 8), ("</s>",): (uni["</s>"], None),
            ("<s>", "a"): (wb(3, 6, 3, "a"), None), ("<s>", "b"): (wb(1, 6, 3, "b"), None),
            ("<s>", "c"): (wb(2, 6, 3, "c"), None), ("a", "b"): (wb(1, 3, 3, "b"), None),
            ("a", "c"): (wb(1, 3, 3, "c"), None), ("a", "</s>"): (wb(1, 3, 3, "</s>"), None),
            ("b", "c"): (wb(1, 2, 2, "c"), None), ("b", "</s>"): (wb(1, 2, 2, "</s>"), None),
            ("c", "c"): (wb(2, 6, 2, "c"), None), ("c", "</s>"): (wb(4, 6, 2, "</s>"), None)}
    _expect(got, want)


def test_vocabulary_maps_oovs_and_keeps_unseen_words(tmp_path):
    (tmp_path / "words.txt").write_text("<eps> 0\na 1\nb 2\nd 3\n<UNK> 4\n#0 5\n<s> 6\n</s> 7\n")
    # "a c" / "b" -> "a <UNK>" / "b": a 1, <UNK> 1, b 1, </s> 2; T = 5, U = 4;
    # V = {a, b, d, <UNK>, </s>}: 5 words, d unseen
    got = _arpa_lines(_lm(tmp_path, "u1 a c\nu2 b\nu3\n", order=1, smoothing="wb",
                          vocab=str(tmp_path / "words.txt"), has_utt_ids=True))
    g = 4 / 9
    _expect(got, {("<s>",): (0, None), ("a",): (1 / 9 + g / 5, None),
                  ("b",): (1 / 9 + g / 5, None), ("<UNK>",): (1 / 9 + g / 5, None),
                  ("d",): (g / 5, None), ("</s>",): (2 / 9 + g / 5, None)})
    # an empty --oov-symbol drops the word: a 1, b 1, </s> 2; T = 4, U = 3
    got = _arpa_lines(_lm(tmp_path, "a c\nb\n", order=1, smoothing="wb", oov_symbol="",
                          vocab=str(tmp_path / "words.txt")))
    g = 3 / 7
    assert {w: p for _, w, p, _ in got}[("a",)] == pytest.approx(math.log10(1 / 7 + g / 5))
    with pytest.raises(ConfigError, match="oov-symbol"):
        _lm(tmp_path, "a c\n", vocab=str(tmp_path / "words.txt"), oov_symbol="<unk>")


def _check_normalized(lm: ArpaLm, contexts, tol=1e-5):
    """Every history's probabilities sum to 1 over the vocabulary, and each back-off weight
    is (1 - sum of the listed p(z|h)) / (1 - sum of p(z|h')) over the same z."""
    vocab = [w for w in lm.vocab if w != "<s>"]
    listed = {}
    for g in lm.grams:
        listed.setdefault(g[:-1], []).append(g[-1])
    for h in contexts:
        total = sum(10 ** lm.log10_prob(h, w) for w in vocab)
        assert total == pytest.approx(1.0, abs=tol), h
        if h and h in listed:
            num = 1 - sum(10 ** lm.log10_prob(h, z) for z in listed[h])
            den = 1 - sum(10 ** lm.log10_prob(h[1:], z) for z in listed[h])
            assert math.log10(num / den) == pytest.approx(lm.grams[h][1], abs=1e-5), h


@pytest.mark.parametrize("smoothing", ["kn", "ukn", "wb"])
def test_every_history_sums_to_one(tmp_path, smoothing):
    text = TINY + "a b c d\nd d a\nb a b c\n" * 2 + "d c b a\n"
    lm = ArpaLm.read(str(_lm(tmp_path, text, order=3, smoothing=smoothing)))
    assert lm.grams[("<s>",)][0] == -99
    _check_normalized(lm, [()] + [g for g, (_, b) in lm.grams.items() if b is not None])


# ------------------------------------------------------------------ real Kaldi dirs
@pytest.mark.parametrize("corpus", ["kaldi_digits", "kaldi_polish"])
def test_witten_bell_unigram_is_kaldis_lm_arpa(request, tmp_path, corpus):
    """Kaldi's lm.arpa files came from SRILM's ngram-count -order 1 -wbdiscount: the same
    n-grams in the same order, values within 1e-6 (SRILM's float rounding moves the 7th digit
    of a few; the digits file is byte for byte the same)."""
    d = request.getfixturevalue(corpus)
    ours = tmp_path / "lm.arpa"
    make_ngram_lm(str(d / "data/local/corpus.txt"), str(ours),
                  NgramOptions(order=1, smoothing="wb"))
    kaldi = _arpa_lines(d / "data/local/tmp/lm.arpa")
    got = _arpa_lines(ours)
    assert [g[:2] for g in got] == [k[:2] for k in kaldi]
    assert np.allclose([g[2] for g in got], [k[2] for k in kaldi], atol=1.5e-6)
    if corpus == "kaldi_digits":
        assert ours.read_bytes() == (d / "data/local/tmp/lm.arpa").read_bytes()


def _assert_same_g(ours: Path, kaldi: Path):
    import kaldifst

    a = const_fst_arrays(kaldifst.StdVectorFst.read(str(ours)))
    b = const_fst_arrays(kaldifst.StdVectorFst.read(str(kaldi)))
    assert a.start == b.start
    assert a.states.shape == b.states.shape and a.arcs.shape == b.arcs.shape
    fa, fb = a.states[:, 0].view(np.float32), b.states[:, 0].view(np.float32)
    assert np.array_equal(np.isinf(fa), np.isinf(fb))
    assert np.allclose(fa[np.isfinite(fa)], fb[np.isfinite(fb)], atol=1e-4)
    assert np.array_equal(a.states[:, 1:3], b.states[:, 1:3])  # arcs of each state
    assert np.array_equal(a.arcs[:, [0, 1, 3]], b.arcs[:, [0, 1, 3]])  # labels, next state
    assert np.allclose(a.arcs[:, 2].view(np.float32), b.arcs[:, 2].view(np.float32), atol=1e-4)


@pytest.mark.parametrize("corpus", ["kaldi_digits", "kaldi_polish"])
def test_format_lm_gives_kaldis_g(request, tmp_path, corpus):
    d = request.getfixturevalue(corpus)
    out = tmp_path / "lang_test"
    arpa = d / "data/local/tmp/lm.arpa"
    report = format_lm(str(d / "data/lang"), str(arpa), str(d / LEX), str(out))
    _assert_same_g(out / "G.fst", d / "data/lang/G.fst")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["G.fst", "L.fst", "L_disambig.fst", "oov.int", "oov.txt", "phones", "phones.txt",
         "topo", "words.txt"])
    assert (out / "words.txt").read_bytes() == (d / "data/lang/words.txt").read_bytes()
    assert (out / "phones/disambig.int").read_bytes() == \
        (d / "data/lang/phones/disambig.int").read_bytes()
    # the OOVs are find_arpa_oovs.pl's: unigram words not in words.txt
    words = {ln.split()[0] for ln in (d / "data/lang/words.txt").read_text().splitlines()}
    unigrams = {w[0] for o, w, _, _ in _arpa_lines(arpa) if o == 1}
    assert set(report.oov_words) == unigrams - words - {"<s>", "</s>"}
    assert report.kept == [len(unigrams) - len(report.oov_words)]
    assert report.oov_skipped == [len(report.oov_words)]
    if corpus == "kaldi_polish":
        assert len(report.oov_words) == 2725
    # gzipped input, arpa_to_fst directly: the same G
    gz = tmp_path / "lm.arpa.gz"
    with gzip.open(gz, "wb") as f:
        f.write(arpa.read_bytes())
    arpa_to_fst(str(gz), str(d / "data/lang/words.txt"), str(tmp_path / "G2.fst"))
    _assert_same_g(tmp_path / "G2.fst", d / "data/lang/G.fst")


def test_estimated_polish_trigram(tmp_path, kaldi_polish):
    d = kaldi_polish
    words = str(d / "data/lang/words.txt")
    opts = dict(order=3, vocab=words)
    arpa = tmp_path / "lm3.arpa.gz"
    make_ngram_lm(str(d / "data/local/corpus.txt"), str(arpa), NgramOptions(**opts))
    make_ngram_lm(str(d / "data/local/corpus.txt"), str(tmp_path / "lm1.arpa"),
                  NgramOptions(order=1, vocab=words))
    lm3, lm1 = ArpaLm.read(str(arpa)), ArpaLm.read(str(tmp_path / "lm1.arpa"))
    with ArpaReader(str(arpa)) as reader:
        assert reader.counts == [sum(1 for k in lm3.grams if len(k) == n) for n in (1, 2, 3)]
    vocab = read_vocab(words)
    assert set(lm3.vocab) - {"<s>", "</s>"} == vocab  # every lexicon word, nothing else
    ppl = [lm.perplexity(read_sentences(str(d / "data/test/text"), True, vocab)).ppl
           for lm in (lm3, lm1)]
    assert math.isfinite(ppl[0]) and ppl[0] < ppl[1]
    random.seed(0)
    contexts = [g for g, (_, b) in lm3.grams.items() if b is not None]
    _check_normalized(lm3, [()] + random.sample(contexts, 12))
    # SRILM's order: the trigrams sorted by middle word, first word, last word
    tri = [w for o, w, _, _ in _arpa_lines(arpa) if o == 3]
    key = [(w[1].encode(), w[0].encode(), w[2].encode()) for w in tri]
    assert key == sorted(key)
    import kaldifst

    report = format_lm(str(d / "data/lang"), str(arpa), str(d / LEX), str(tmp_path / "lang"))
    assert report.oov_words == [] and report.kept == report.read
    g = kaldifst.StdVectorFst.read(str(tmp_path / "lang/G.fst"))
    assert g.num_states == report.num_states > 1000 and g.start >= 0


# ------------------------------------------------------------------ ARPA edge cases
DIGITS_ARPA = """
\\data\\
ngram 1=4
ngram 2=3

\\1-grams:
-0.5\t</s>
-99\t<s>\t-0.3
-0.6\tone\t-0.2
-0.7\ttwo\t-0.1

\\2-grams:
-0.2\t<s> one
-0.3\t<s> <s>
-0.4\t</s> <s>

\\end\\
"""


def test_bos_eos_misplaced_and_missing_histories(tmp_path, kaldi_digits):
    words = str(kaldi_digits / "data/lang/words.txt")
    (tmp_path / "a.arpa").write_text(DIGITS_ARPA)
    rep = arpa_to_fst(str(tmp_path / "a.arpa"), words, str(tmp_path / "a.fst"))
    assert rep.bos_eos_removed == 2 and rep.kept == [4, 1] and rep.no_history == 0
    clean = DIGITS_ARPA.replace("ngram 2=3", "ngram 2=1").replace(
        "-0.3\t<s> <s>\n-0.4\t</s> <s>\n", "")
    (tmp_path / "b.arpa").write_text(clean)
    arpa_to_fst(str(tmp_path / "b.arpa"), words, str(tmp_path / "b.fst"))
    _assert_same_g(tmp_path / "a.fst", tmp_path / "b.fst")
    # a trigram whose bigram history is missing: arpa2fst skips it, counted
    tri = clean.replace("ngram 2=1", "ngram 2=1\nngram 3=1").replace(
        "\\end\\", "\\3-grams:\n-0.1\tone two </s>\n\n\\end\\")
    (tmp_path / "c.arpa").write_text(tri)
    assert arpa_to_fst(str(tmp_path / "c.arpa"), words, str(tmp_path / "c.fst")).no_history == 1


@pytest.mark.parametrize("text,line,what", [
    ("ngram 1=2\n\\data\\\nngram 1=x\n", 3, "ngram N=COUNT"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\n\\end\\\n", 5, "got 1 field"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\t<s>\t-1\tx\n\\end\\\n", 5, "got 4 field"),
    ("\\data\\\nngram 1=1\nngram 2=1\n\n\\1-grams:\n-1\t<s>\n\n\\2-grams:\n-1\t<s>\n"
     "\\end\\\n", 9, "got 2 field"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\t<s>\n-1\tone\n\\end\\\n", 6, "more 1-grams"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\nabc\t<s>\n\\end\\\n", 5, "not a number"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\t<s>\n", 5, "no \\\\end"),
    ("\\data\\\nngram 2=1\n\n\\1-grams:\n", 4, "orders 1..N"),
    ("hello\n", 1, "no \\\\data"),
])
def test_bad_arpa_names_file_and_line(tmp_path, kaldi_digits, text, line, what):
    p = tmp_path / "bad.arpa"
    p.write_text(text)
    with pytest.raises(FormatError, match=rf"bad\.arpa:{line}: .*{what}"):
        arpa_to_fst(str(p), str(kaldi_digits / "data/lang/words.txt"), str(tmp_path / "G.fst"))
    assert not (tmp_path / "G.fst").exists()


def test_bad_inputs(tmp_path, kaldi_digits):
    arpa = str(kaldi_digits / "data/local/tmp/lm.arpa")
    with pytest.raises(FormatError, match="missing symbol table .*nowhere.txt"):
        arpa_to_fst(arpa, str(tmp_path / "nowhere.txt"), str(tmp_path / "G.fst"))
    (tmp_path / "w.txt").write_text("<eps> 0\none 1\n")
    with pytest.raises(FormatError, match="no #0"):
        arpa_to_fst(arpa, str(tmp_path / "w.txt"), str(tmp_path / "G.fst"))
    (tmp_path / "w.txt").write_text("<eps> 0\none 1\nbad\n")
    with pytest.raises(FormatError, match=r"w\.txt:3: expected 'symbol integer'"):
        arpa_to_fst(arpa, str(tmp_path / "w.txt"), str(tmp_path / "G.fst"))
    (tmp_path / "empty").write_text("\n  \n")
    with pytest.raises(FormatError, match="empty: no words"):
        make_ngram_lm(str(tmp_path / "empty"), str(tmp_path / "lm.arpa"))
    (tmp_path / "marks").write_text("one two\n<s> one </s>\n")
    with pytest.raises(FormatError, match=r"marks:2: .*reserved word '<s>'"):
        make_ngram_lm(str(tmp_path / "marks"), str(tmp_path / "lm.arpa"))
    assert not (tmp_path / "lm.arpa").exists()
    lang = tmp_path / "lang"
    shutil.copytree(kaldi_digits / "data/lang", lang)
    with pytest.raises(ConfigError, match="is the input lang dir"):
        format_lm(str(lang), arpa, str(kaldi_digits / LEX), str(lang))
    (lang / "L_disambig.fst").unlink()
    with pytest.raises(FormatError, match="lacks L_disambig.fst"):
        format_lm(str(lang), arpa, str(kaldi_digits / LEX), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_empty_word_cycle_fails(tmp_path, kaldi_digits):
    lex = tmp_path / "lexicon.txt"
    lex.write_text((kaldi_digits / LEX).read_text() + "one\n")  # "one" has no pronunciation
    with pytest.raises(FormatError, match="cycles with empty words"):
        format_lm(str(kaldi_digits / "data/lang"), str(kaldi_digits / "data/local/tmp/lm.arpa"),
                  str(lex), str(tmp_path / "out"))


# ------------------------------------------------------------------ command lines
def _run(cmd, env, ok=True, cwd=None):
    r = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr
    return r


def test_shell_scripts_end_to_end(tmp_path, kaldi_polish, env_with_path):
    d = kaldi_polish
    _run([REPO / "utils/make_ngram_lm.sh", "--order=2", f"--vocab={d}/data/lang/words.txt",
          "--has-utt-ids=true", d / "data/train/text", "lm.arpa.gz"], env_with_path,
         cwd=tmp_path)
    r = _run([REPO / "utils/format_lm.sh", d / "data/lang", "lm.arpa.gz", d / LEX,
              "data/lang_test"], env_with_path, cwd=tmp_path)
    assert "G.fst:" in r.stderr
    import kaldifst

    g = kaldifst.StdVectorFst.read(str(tmp_path / "data/lang_test/G.fst"))
    assert g.num_states > 100
    r = _run([REPO / "utils/format_lm.sh", d / "data/lang", "lm.arpa.gz"], env_with_path,
             ok=False, cwd=tmp_path)
    assert "Usage" in r.stderr


def test_clis_exit_non_zero_on_bad_input(tmp_path, kaldi_digits, env_with_path):
    (tmp_path / "empty").write_text("")
    r = _run([sys.executable, REPO / "pybin/make_ngram_lm.py", tmp_path / "empty",
              tmp_path / "lm.arpa"], env_with_path, ok=False)
    assert r.returncode == 1 and "no words" in r.stderr
    (tmp_path / "bad.arpa").write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\n\\end\\\n")
    r = _run([sys.executable, REPO / "pybin/format_lm.py", kaldi_digits / "data/lang",
              tmp_path / "bad.arpa", kaldi_digits / LEX, tmp_path / "out"], env_with_path,
             ok=False)
    assert r.returncode == 1 and "bad.arpa:5" in r.stderr
    r = _run([sys.executable, REPO / "pybin/arpa_to_fst.py",
              f"--read-symbol-table={tmp_path}/missing.txt",
              kaldi_digits / "data/local/tmp/lm.arpa", tmp_path / "G.fst"], env_with_path,
             ok=False)
    assert r.returncode == 1 and "missing.txt" in r.stderr
    _run([sys.executable, REPO / "pybin/arpa_to_fst.py",
          f"--read-symbol-table={kaldi_digits}/data/lang/words.txt",
          kaldi_digits / "data/local/tmp/lm.arpa", tmp_path / "G.fst"], env_with_path)
    _assert_same_g(tmp_path / "G.fst", kaldi_digits / "data/lang/G.fst")


def test_words_outside_the_vocabulary_are_looked_up_normalised(tmp_path):
    """kaldi_polish's corpus.txt in its authors' spelling against its lexicon's words."""
    from hybridasr.lang.ngram import LmSummary, read_sentences

    text = tmp_path / "corpus.txt"
    text.write_text("Nie , tylko, „Boga” Xqzzy\n- ,,\n", encoding="utf-8")
    vocab = {"nie", "tylko", "boga", "<UNK>"}
    s = LmSummary()
    assert list(read_sentences(str(text), vocab=vocab, summary=s)) == [
        ["nie", "tylko", "boga", "<UNK>"]]
    assert (s.normalized_words, s.dropped_tokens, s.oov_words, s.sentences) == (3, 3, 1, 1)
    s = LmSummary()
    got = list(read_sentences(str(text), vocab=vocab, summary=s, normalize_unknown=False))
    assert got == [["<UNK>"] * 5, ["<UNK>"] * 2] and s.oov_words == 7
