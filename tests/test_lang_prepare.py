"""Kaldi's utils/prepare_lang.sh without Kaldi (hybridasr.lang): the lang dirs of the two real
Kaldi dirs in ../shared rebuilt from their dict dirs, bad dict dirs, the options, the CLI and
the shell script."""
from __future__ import annotations

import filecmp
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hybridasr.errors import ConfigError, FormatError
from hybridasr.lang.dict_dir import read_dict_dir
from hybridasr.lang.lexicon_fst import add_disambig
from hybridasr.lang.prepare_lang import LangOptions, prepare_lang
from hybridasr.utils.std_sort import _heap_sort, std_sort

kaldifst = pytest.importorskip("kaldifst")

REPO = Path(__file__).resolve().parents[1]
FSTS = ("L.fst", "L_disambig.fst")
DICT_FILES = ("lexicon.txt", "lexiconp.txt", "nonsilence_phones.txt", "optional_silence.txt",
              "silence_phones.txt")


@pytest.fixture(scope="module", params=["digits", "polish"])
def built(request, tmp_path_factory):
    """(Kaldi dir, our output dir with lang/ and local/lang/) for each real Kaldi dir, made
    from its data/local/dict with OOV entry <UNK> as Kaldi made its data/lang."""
    src = request.getfixturevalue(f"kaldi_{request.param}")
    out = tmp_path_factory.mktemp(request.param)
    prepare_lang(str(src / "data/local/dict"), "<UNK>", str(out / "local/lang"),
                 str(out / "lang"))
    return src, out


@pytest.fixture
def digits_dict(tmp_path, kaldi_digits) -> Path:
    """A writable copy of the digits dict dir (lexicon.txt and lexiconp.txt)."""
    d = tmp_path / "dict"
    d.mkdir()
    for name in DICT_FILES:
        shutil.copyfile(kaldi_digits / "data/local/dict" / name, d / name)
    return d


def _files(root: Path):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# ------------------------------------------------------------ byte-identical to Kaldi's
def test_files_are_kaldis_byte_for_byte(built):
    src, out = built
    ref, ours = src / "data/lang", out / "lang"
    kaldi_files = [f for f in _files(ref) if not f.startswith("tmp/") and f != "G.fst"]
    assert _files(ours) == kaldi_files  # the same files, phones/* included
    differ = [f for f in kaldi_files if not filecmp.cmp(ref / f, ours / f, shallow=False)]
    # Polish's L.fst and L_disambig.fst were made by Kaldi's current make_lexicon_fst.py; ours
    # are the same bytes (arcs sorted as OpenFst's unstable std::sort leaves them). The digits
    # ones come from an older Kaldi (the Perl make_lexicon_fst.pl: the start state's silence
    # arc goes straight to the loop state, 0 rather than -0 costs): equivalent, not identical
    # (next tests).
    assert differ == ([] if src.name == "kaldi_polish" else list(FSTS))


def test_tmp_dir_files_are_kaldis(built):
    src, out = built
    ref = src / "data/local/lang"
    assert _files(out / "local/lang") == _files(ref)
    assert all(filecmp.cmp(ref / f, out / "local/lang" / f, shallow=False) for f in _files(ref))


# ------------------------------------------------------------ L.fst equivalent to Kaldi's
def _read_fst(path: Path):
    fst = kaldifst.StdVectorFst.read(str(path))
    arcs = {s: [] for s in range(fst.num_states)}
    final = {}
    for line in str(fst).splitlines():
        f = line.split()
        if len(f) >= 4:
            arcs[int(f[0])].append((int(f[1]), int(f[2]), int(f[3]),
                                    float(f[4]) if len(f) > 4 else 0.0))
        else:
            final[int(f[0])] = float(f[1]) if len(f) > 1 else 0.0
    return fst, arcs, final


def _word_paths(path: Path, word0: int):
    """word id -> sorted [(input labels, cost)] of every path whose output is that one word
    (word-level #0 self-loops left out): the pronunciations with the optional silence and
    the disambiguation symbols as they are."""
    fst, arcs, final = _read_fst(path)
    no_output = {s: [a for a in out if a[2] == 0] for s, out in arcs.items()}
    out = {}
    stack = [(fst.start, None, (), 0.0)]
    while stack:
        s, word, ilabels, cost = stack.pop()
        assert len(ilabels) < 100, "a cycle without output"
        if word is not None and s in final:
            out.setdefault(word, []).append((ilabels, round(cost + final[s], 4)))
        for dst, il, ol, w in (arcs[s] if word is None else no_output[s]):
            if ol != word0:
                stack.append((dst, ol or word, ilabels + ((il,) if il else ()), cost + w))
    return {w: sorted(p) for w, p in out.items()}


def _table(path: Path):
    return {s: int(i) for s, i in (line.split() for line in path.read_text().splitlines())}


@pytest.mark.parametrize("name", FSTS)
def test_lexicon_fsts_have_kaldis_paths_and_size(built, name):
    src, out = built
    word0 = _table(out / "lang/words.txt")["#0"]
    ours, kaldis = out / "lang" / name, src / "data/lang" / name
    assert _word_paths(ours, word0) == _word_paths(kaldis, word0)
    a, b = kaldifst.StdVectorFst.read(str(ours)), kaldifst.StdVectorFst.read(str(kaldis))
    assert (a.num_states, sum(a.num_arcs(s) for s in range(a.num_states))) == \
        (b.num_states, sum(b.num_arcs(s) for s in range(b.num_states)))


def test_lexicon_fst_holds_every_pronunciation(built):
    """Independently of Kaldi's files: each word's phone strings (optional silence and
    disambiguation symbols left out) are its lexicon pronunciations with position marks, at
    the cost of no silence on both sides (sil-prob 0.5)."""
    src, out = built
    words, phones = _table(out / "lang/words.txt"), _table(out / "lang/phones.txt")
    names = {i: p for p, i in phones.items()}
    sil = phones["sil"]
    paths = _word_paths(out / "lang/L_disambig.fst", words["#0"])
    expect = {}
    for e in read_dict_dir(str(src / "data/local/dict")).lexicon:
        marked = [p + "_S" for p in e.phones] if len(e.phones) == 1 else \
            [e.phones[0] + "_B"] + [p + "_I" for p in e.phones[1:-1]] + [e.phones[-1] + "_E"]
        expect.setdefault(words[e.word], set()).add(tuple(marked))
    for w, prons in expect.items():
        plain = {tuple(names[i] for i in il if not names[i].startswith("#") and i != sil)
                 for il, _ in paths[w]}
        assert plain == prons
        no_sil = [c for il, c in paths[w] if sil not in il]
        assert no_sil and all(abs(c - 1.3863) < 1e-3 for c in no_sil)
        assert len(paths[w]) == 4 * len(prons)  # silence before: yes/no; after: yes/no


# ------------------------------------------------------------ read back with our readers
def test_outputs_read_back(built):
    from hybridasr.align.training_graphs import Lexicon
    from hybridasr.kaldi.hmm_topology import HmmTopology
    from hybridasr.kaldi.io.io_funcs import read_kaldi_object
    from hybridasr.kaldi.symbol_table import read_symbol_table

    _, out = built
    lang = out / "lang"
    phones = read_symbol_table(str(lang / "phones.txt"))
    words = read_symbol_table(str(lang / "words.txt"))
    assert phones[0] == words[0] == "<eps>" and words[max(words)] == "</s>"
    topo = read_kaldi_object(str(lang / "topo"), HmmTopology.read, "topology")
    sil = [int(x) for x in (lang / "phones/silence.csl").read_text().split(":")]
    nonsil = [int(x) for x in (lang / "phones/nonsilence.csl").read_text().split(":")]
    assert sorted(topo.phones) == sorted(sil + nonsil)
    assert len(topo.topology_for_phone(sil[0])) == 6 and \
        len(topo.topology_for_phone(nonsil[0])) == 4
    lex = Lexicon(str(lang))
    assert lex.oov_id == lex.word2id["<UNK>"]
    assert [phones[i] for i in lex.disambig] == \
        (lang / "phones/disambig.txt").read_text().split()
    assert lex.word_ids(["<UNK>", "no-such-word"]) == ([lex.oov_id] * 2, 1)
    for name in FSTS:
        fst = kaldifst.StdVectorFst.read(str(lang / name))
        assert fst.properties(0x40000000, False)  # kOLabelSorted, as fstarcsort sets it
        for s in range(fst.num_states):
            ol = [a.olabel for a in kaldifst.ArcIterator(fst, s)]
            assert ol == sorted(ol)


# ------------------------------------------------------------ bad dict dirs
def _edit(path: Path, old: str, new: str):
    text = path.read_bytes().decode("utf-8")
    assert old in text
    path.write_bytes(text.replace(old, new, 1).encode("utf-8"))


BAD = {  # name: (edit of the copied dict dir (lexiconp.txt only), file:line expected, words)
    "unknown phone": (lambda d: _edit(d / "lexiconp.txt", "ey t\n", "ey tt\n"),
                      "lexiconp.txt:3", "'tt'"),
    "phone in both lists": (lambda d: _edit(d / "nonsilence_phones.txt", "z\n", "z\nsil\n"),
                            "nonsilence_phones.txt:21", "silence_phones.txt:1"),
    "phone twice": (lambda d: _edit(d / "nonsilence_phones.txt", "z\n", "z\nah\n"),
                    "nonsilence_phones.txt:21", "listed twice"),
    "phone like a disambig": (lambda d: _edit(d / "silence_phones.txt", "spn", "#1"),
                              "silence_phones.txt:2", "disallowed form"),
    "phone with a position": (lambda d: _edit(d / "nonsilence_phones.txt", "ah\n", "ah_B\n"),
                              "nonsilence_phones.txt:1", "disallowed form"),
    "empty lexicon": (lambda d: (d / "lexiconp.txt").write_text(""), "lexiconp.txt",
                      "is empty"),
    "<s> as a word": (lambda d: _edit(d / "lexiconp.txt", "two ", "<s> "),
                      "lexiconp.txt:12", "'<s>'"),
    "#0 as a word": (lambda d: _edit(d / "lexiconp.txt", "six ", "#0 "),
                     "lexiconp.txt:10", "'#0'"),
    "<eps> as a word": (lambda d: _edit(d / "lexiconp.txt", "six ", "<eps> "),
                        "lexiconp.txt:10", "'<eps>'"),
    "zero probability": (lambda d: _edit(d / "lexiconp.txt", "nine 1.0", "nine 0.0"),
                         "lexiconp.txt:6", "probability '0.0'"),
    "probability above 1": (lambda d: _edit(d / "lexiconp.txt", "nine 1.0", "nine 1.5"),
                            "lexiconp.txt:6", "'1.5'"),
    "probability not a number": (lambda d: _edit(d / "lexiconp.txt", "nine 1.0", "nine n"),
                                 "lexiconp.txt:6", "'n'"),
    "empty pronunciation": (lambda d: _edit(d / "lexiconp.txt", "two 1.0\tt uw", "two 1.0"),
                            "lexiconp.txt:12", "empty pronunciation"),
    "empty line": (lambda d: _edit(d / "lexiconp.txt", "six ", "\nsix "),
                   "lexiconp.txt:10", "empty line"),
    "repeated line": (lambda d: _edit(d / "lexiconp.txt", "two 1.0\tt uw\n",
                                      "two 1.0\tt uw\ntwo 1.0\tt uw\n"),
                      "lexiconp.txt:13", "repeats line 12"),
    "no-break space": (lambda d: _edit(d / "lexiconp.txt", "seven", "sev\u00a0en"),
                       "lexiconp.txt:9", "NO-BREAK SPACE"),
    "CRLF": (lambda d: _edit(d / "lexiconp.txt", "seven 1.0\ts eh v ah n\n",
                             "seven 1.0\ts eh v ah n\r\n"), "lexiconp.txt:9",
             "carriage return"),
    "not UTF-8": (lambda d: (d / "lexiconp.txt").write_bytes(
        (d / "lexiconp.txt").read_bytes().replace(b"seven", b"s\xe9ven")),
                  "lexiconp.txt:9", "not UTF-8"),
    "byte-order mark": (lambda d: _edit(d / "lexiconp.txt", "!SIL", "\ufeff!SIL"),
                        "lexiconp.txt:1", "byte-order mark"),
    "no final newline": (lambda d: (d / "lexiconp.txt").write_bytes(
        (d / "lexiconp.txt").read_bytes().rstrip(b"\n")), "lexiconp.txt:14", "newline"),
    "optional silence not a silence phone": (
        lambda d: (d / "optional_silence.txt").write_text("ah\n"),
        "optional_silence.txt:1", "'ah'"),
    "two optional silences": (lambda d: (d / "optional_silence.txt").write_text("sil spn\n"),
                              "optional_silence.txt:1", "exactly one phone"),
    "extra question with an unknown phone": (
        lambda d: (d / "extra_questions.txt").write_text("sil spn\nah xx\n"),
        "extra_questions.txt:2", "'xx'"),
    "indistinguishable phones": (lambda d: _edit(d / "nonsilence_phones.txt", "\nw\nv\n",
                                                 "\nv w\n"),
                                 "nonsilence_phones.txt:18", "'v' and 'w'"),
    "lexicons disagree": (lambda d: (shutil.copyfile(d.parent / "lexicon.txt",
                                                     d / "lexicon.txt"),
                                     _edit(d / "lexicon.txt", "six s ih k s",
                                           "six s ih k")),
                          "lexicon.txt:10", "agree line by line"),
    "silprob lexicon only": (lambda d: os.rename(d / "lexiconp.txt",
                                                 d / "lexiconp_silprob.txt"),
                             "lexiconp_silprob.txt", "not supported"),
    "no silence_phones.txt": (lambda d: os.unlink(d / "silence_phones.txt"),
                              "silence_phones.txt", "missing"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_dict_dir_names_file_and_line(digits_dict, tmp_path, case):
    edit, where, what = BAD[case]
    shutil.move(str(digits_dict / "lexicon.txt"), tmp_path / "lexicon.txt")
    edit(digits_dict)
    with pytest.raises(FormatError) as e:
        prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / "tmp"), str(tmp_path / "lang"))
    msg = str(e.value)
    assert f"{digits_dict}/{where}" in msg and what in msg, msg
    assert not (tmp_path / "lang").exists()


def test_cli_and_script_fail_with_the_message(digits_dict, tmp_path, env_with_path):
    _edit(digits_dict / "lexiconp.txt", "ey t\n", "ey tt\n")
    for cmd in ([sys.executable, str(REPO / "pybin/prepare_lang.py")],
                ["bash", str(REPO / "utils/prepare_lang.sh")]):
        r = subprocess.run(cmd + [str(digits_dict), "<UNK>", str(tmp_path / "tmp"),
                                  str(tmp_path / "lang")],
                           env=env_with_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, r.stderr
        assert f"{digits_dict}/lexiconp.txt:3" in r.stderr and "'tt'" in r.stderr, r.stderr
    assert not (tmp_path / "lang").exists()


def test_oov_entry_must_be_a_word(digits_dict, tmp_path):
    with pytest.raises(FormatError, match="'<SPOKEN_NOISE>' is not a word"):
        prepare_lang(str(digits_dict), "<SPOKEN_NOISE>", str(tmp_path / "t"),
                     str(tmp_path / "l"))


# ------------------------------------------------------------ the dict dir is only read
def test_lexicon_txt_alone_gives_kaldis_lang_and_dict_dir_untouched(digits_dict, tmp_path,
                                                                     kaldi_digits):
    os.unlink(digits_dict / "lexiconp.txt")  # Kaldi would write one there; we don't
    before = {p: p.read_bytes() for p in digits_dict.iterdir()}
    prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / "tmp"), str(tmp_path / "lang"))
    assert {p: p.read_bytes() for p in digits_dict.iterdir()} == before
    for f in ("phones.txt", "words.txt", "phones/align_lexicon.int", "topo"):
        assert filecmp.cmp(kaldi_digits / "data/lang" / f, tmp_path / "lang" / f,
                           shallow=False), f
    with pytest.raises(ConfigError, match="is the dict dir"):
        prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / "tmp"), str(digits_dict))


def test_rebuild_over_an_existing_lang_dir(digits_dict, tmp_path):
    lang = tmp_path / "lang"
    prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / "tmp"), str(lang))
    (lang / "G.fst").write_bytes(b"G")
    (lang / "phones/stale.txt").write_text("x\n")
    first = {f: (lang / f).read_bytes() for f in _files(lang) if f != "G.fst"}
    _edit(digits_dict / "lexiconp.txt", "two 1.0\tt uw\n", "too 1.0\tt uw\ntwo 1.0\tt uw\n")
    _edit(digits_dict / "lexicon.txt", "two t uw\n", "too t uw\ntwo t uw\n")
    prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / "tmp"), str(lang))
    assert (lang / "G.fst").read_bytes() == b"G"  # kept, as Kaldi keeps it
    assert not (lang / "phones/stale.txt").exists()  # phones/ is replaced whole
    # homophones: too and two get #1 and #2, the optional silence #3
    assert (lang / "phones/disambig.txt").read_text() == "#0\n#1\n#2\n#3\n"
    assert (lang / "phones.txt").read_bytes() != first["phones.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lang.")]


# ------------------------------------------------------------ options
def test_options(digits_dict, tmp_path, kaldi_digits):
    def build(name, **kw):
        prepare_lang(str(digits_dict), "<UNK>", str(tmp_path / name / "tmp"),
                     str(tmp_path / name / "lang"), LangOptions(**kw))
        return tmp_path / name / "lang"

    plain = build("nopos", position_dependent_phones=False)
    assert (plain / "phones.txt").read_text().split()[:8] == \
        ["<eps>", "0", "sil", "1", "spn", "2", "ah", "3"]
    assert not (plain / "phones/word_boundary.txt").exists()
    assert (plain / "phones/extra_questions.txt").read_text() == ""
    assert (tmp_path / "nopos/tmp/lexiconp.txt").read_bytes() == \
        (digits_dict / "lexiconp.txt").read_bytes()  # copied as it is
    assert (plain / "phones/align_lexicon.txt").read_text().splitlines()[0] == "!SIL !SIL sil"

    nosil = build("nosil", sil_prob=0.0)
    fst = kaldifst.StdVectorFst.read(str(nosil / "L.fst"))
    assert fst.start == 0 and fst.final(0) == kaldifst.TropicalWeight.one
    assert fst.num_states == 31 - 2  # no start and silence states

    shared = build("shared", share_silence_phones=True, num_sil_states=4)
    roots = (shared / "phones/roots.txt").read_text().splitlines()
    assert roots[0] == "not-shared not-split sil sil_B sil_E sil_I sil_S spn spn_B spn_E " \
                       "spn_I spn_S" and roots[1].startswith("shared split ah_B")
    assert "<Transition> 1 0.333333333333333 " in (shared / "topo").read_text()

    one = build("one", num_sil_states=1, num_nonsil_states=1)
    from hybridasr.kaldi.hmm_topology import HmmTopology
    from hybridasr.kaldi.io.io_funcs import read_kaldi_object
    topo = read_kaldi_object(str(one / "topo"), HmmTopology.read, "topology")
    assert [len(e) for e in topo.entries] == [2, 2]

    table = build("table", phone_symbol_table=str(kaldi_digits / "data/lang/phones.txt"))
    assert filecmp.cmp(table / "phones.txt", kaldi_digits / "data/lang/phones.txt",
                       shallow=False)
    with pytest.raises(FormatError, match="position-dependent phones not requested"):
        build("table2", phone_symbol_table=str(kaldi_digits / "data/lang/phones.txt"),
              position_dependent_phones=False)

    for bad in ({"sil_prob": 1.0}, {"num_sil_states": 2}, {"num_nonsil_states": 0}):
        with pytest.raises(ConfigError):
            LangOptions(**bad)


def test_add_disambig_as_kaldi():
    prons = [["a", "b"], ["a", "b"], ["a"], ["a", "b", "c"], ["d"], ["a", "b"]]
    out, top = add_disambig(prons)
    assert out == [["a", "b", "#1"], ["a", "b", "#2"], ["a", "#1"], ["a", "b", "c"], ["d"],
                   ["a", "b", "#3"]]
    assert top == 3
    assert add_disambig([["x"], ["y"]]) == ([["x"], ["y"]], 0)


def test_std_sort_sorts():
    rng = random.Random(0)
    for n in list(range(40)) + [100, 1000, 5000]:
        items = [(rng.randrange(max(1, n // 7)), i) for i in range(n)]
        a = list(items)
        std_sort(a, lambda x, y: x[0] < y[0])
        assert [k for k, _ in a] == sorted(k for k, _ in items)
        assert sorted(a) == sorted(items)
        b = list(items)
        _heap_sort(b, 0, n, lambda x, y: x[0] < y[0])  # the depth-limit fallback
        assert [k for k, _ in b] == sorted(k for k, _ in items)


# ------------------------------------------------------------ the shell script
def test_prepare_lang_sh_end_to_end(tmp_path, kaldi_digits, env_with_path):
    r = subprocess.run(["bash", str(REPO / "utils/prepare_lang.sh"), "--sil-prob", "0.5",
                        "--position-dependent-phones", "true", "--num-sil-states=5",
                        str(kaldi_digits / "data/local/dict"), "<UNK>", "data/local/lang",
                        "data/lang"],
                       cwd=tmp_path, env=env_with_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    ref, ours = kaldi_digits / "data/lang", tmp_path / "data/lang"
    assert _files(ours) == [f for f in _files(ref) if f != "G.fst" and not f.startswith("tmp/")]
    for f in ("phones.txt", "words.txt", "topo", "oov.int", "phones/word_boundary.int"):
        assert filecmp.cmp(ref / f, ours / f, shallow=False), f
    assert os.access(REPO / "utils/prepare_lang.sh", os.X_OK)
    assert os.access(REPO / "pybin/prepare_lang.py", os.X_OK)
    r = subprocess.run(["bash", str(REPO / "utils/prepare_lang.sh"), "--sil-prob"],
                       env=env_with_path, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "needs a value" in r.stderr
