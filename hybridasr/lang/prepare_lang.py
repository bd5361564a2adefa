"""Kaldi's ``utils/prepare_lang.sh <dict-src-dir> <oov-dict-entry> <tmp-dir> <lang-dir>``.

From a dict dir (``dict_dir.read_dict_dir``, checked as ``validate_dict_dir.pl``) writes the lang
dir Kaldi writes, byte for byte (the FSTs as Kaldi's current ``make_lexicon_fst.py`` makes them;
an older Kaldi's Perl ``make_lexicon_fst.pl`` routed the optional silence through other states,
an equivalent FST): ``phones.txt``, ``words.txt``, ``oov.txt``, ``oov.int``,
``topo``, ``L.fst``, ``L_disambig.fst`` and ``phones/`` (sets, roots, extra_questions, silence,
nonsilence, optional_silence, disambig, context_indep, word_boundary, align_lexicon,
wdisambig*, as ``.txt``/``.int``/``.csl`` where Kaldi has them), and into ``<tmp-dir>``
``lexiconp.txt``, ``lexiconp_disambig.txt``, ``lex_ndisambig``, ``align_lexicon.txt`` and
``phone_map.txt`` (``phones`` too without word positions). Not supported: ``--unk-fst``,
``--extra-word-disambig-syms``, silence probabilities and nonterminals in the dict dir.

The dict dir is only read. The lang dir is built in a temporary dir beside it and renamed into
place; over an existing lang dir, ``phones/`` is swapped whole and each file replaced by a
rename, and other files there (a ``G.fst``) are left as Kaldi leaves them.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from hybridasr.errors import ConfigError, FormatError
from hybridasr.lang import lang_files as lf
from hybridasr.lang.dict_dir import DictDir, read_dict_dir
from hybridasr.lang.lexicon_fst import add_disambig, lexicon_fst
from hybridasr.options import check, option
from hybridasr.utils.atomic import atomic_open, current_umask, fsync_dir, fsync_file

__all__ = ["LangOptions", "LangDir", "build_lang", "prepare_lang"]

log = logging.getLogger(__name__)


@dataclass
class LangOptions:
    """Kaldi's prepare_lang.sh options, with its defaults."""
    position_dependent_phones: bool = option(
        True, "mark each phone with its position in the word (_B begin, _E end, _I internal, "
              "_S singleton)")
    sil_prob: float = option(0.5, "probability of the optional silence between words "
                                  "(0 <= p < 1; 0: no optional silence)", minimum=0.0)
    num_sil_states: int = option(5, "HMM states of a silence phone (1, or 3 to 100)",
                                 minimum=1)
    num_nonsil_states: int = option(3, "HMM states of a nonsilence phone (1 to 100)",
                                    minimum=1)
    share_silence_phones: bool = option(False, "all silence phones share one tree root "
                                               "(their pdfs); only transitions differ")
    phone_symbol_table: Optional[str] = option(
        None, "a phones.txt whose phone ids to keep (a new dictionary for an existing "
              "setup)")
    num_extra_phone_disambig_syms: int = option(
        1, "phone disambiguation symbols beyond the lexicon's (the last follows the optional "
           "silence in L_disambig.fst)", minimum=1)

    def __post_init__(self):
        check(self)
        if self.sil_prob >= 1.0:
            raise ConfigError(f"--sil-prob={self.sil_prob}: must be below 1")
        if self.num_nonsil_states > 100:
            raise ConfigError(f"--num-nonsil-states={self.num_nonsil_states}: at most 100")
        if self.num_sil_states == 2 or self.num_sil_states > 100:
            raise ConfigError(f"--num-sil-states={self.num_sil_states}: must be 1 or 3 to 100")


@dataclass
class LangDir:
    """What was built: file contents by path relative to the lang dir (``phones/...``),
    the two FSTs (kaldifst.StdVectorFst) and the ``<tmp-dir>`` files."""
    files: Dict[str, str]
    fsts: Dict[str, object]
    tmp_files: Dict[str, str]
    num_words: int
    num_phones: int
    num_disambig: int


def _tmp_lexicon(d: DictDir, position_dependent: bool) -> Tuple[List[str], List[Tuple]]:
    """``<tmp-dir>/lexiconp.txt`` lines and its (word, prob, phones) entries."""
    if position_dependent:
        entries = [(e.word, e.prob, lf.mark_positions(e.phones)) for e in d.lexicon]
        return [" ".join([w, p, *ph]) for w, p, ph in entries], entries
    entries = [(e.word, e.prob, list(e.phones)) for e in d.lexicon]
    if d.has_probs:  # Kaldi copies the file
        return [e.text for e in d.lexicon], entries
    # Kaldi first writes <dict>/lexiconp.txt from lexicon.txt (we never write there)
    return [re.sub(r"(\S+\s+)(.+)", "\\g<1>1.0\t\\2", e.text, count=1, flags=re.ASCII)
            for e in d.lexicon], entries


def build_lang(d: DictDir, oov_word: str, opts: Optional[LangOptions] = None) -> LangDir:
    """Everything prepare_lang.sh writes, in memory."""
    opts = opts or LangOptions()
    pos = opts.position_dependent_phones
    pmap = lf.phone_map(d, pos)
    tmp: Dict[str, str] = {}
    files: Dict[str, str] = {}

    tmp_lines, entries = _tmp_lexicon(d, pos)
    tmp["lexiconp.txt"] = lf.lines(tmp_lines)
    tmp["phone_map.txt"] = lf.phone_map_text(d, pos)
    if not pos:
        tmp["phones"] = lf.lines(d.silence_phones + d.nonsilence_phones)

    files["phones/sets.txt"], files["phones/roots.txt"] = \
        lf.sets_and_roots(d, pmap, opts.share_silence_phones)
    silence = [x for p in d.silence_phones for x in pmap[p]]
    nonsilence = [x for p in d.nonsilence_phones for x in pmap[p]]
    files["phones/silence.txt"] = lf.lines(silence)
    files["phones/nonsilence.txt"] = lf.lines(nonsilence)
    files["phones/optional_silence.txt"] = d.optional_silence_text
    files["phones/context_indep.txt"] = files["phones/silence.txt"]
    files["phones/extra_questions.txt"] = lf.extra_questions(d, pmap, pos)

    prons, max_disambig = add_disambig([ph for _, _, ph in entries])
    tmp["lexiconp_disambig.txt"] = lf.lines(
        f"{w}\t{p}\t{' '.join(ph)}" for (w, p, _), ph in zip(entries, prons))
    ndisambig = max_disambig + opts.num_extra_phone_disambig_syms
    tmp["lex_ndisambig"] = f"{ndisambig}\n"
    disambig = [f"#{n}" for n in range(ndisambig + 1)]
    files["phones/disambig.txt"] = lf.lines(disambig)

    files["phones.txt"] = lf.phones_table(silence + nonsilence, disambig,
                                          opts.phone_symbol_table, pos,
                                          d.silence_phones + d.nonsilence_phones)
    if pos:
        files["phones/word_boundary.txt"] = lf.word_boundary(silence + nonsilence)
    elif d.word_boundary_text is not None:  # made by another tool: Kaldi copies it
        files["phones/word_boundary.txt"] = d.word_boundary_text
    files["words.txt"] = lf.words_table([w for w, _, _ in entries])

    sil = d.optional_silence
    align = [re.sub(r"(\S+\s+)\S+\s+(.+)", r"\1\2", t, count=1, flags=re.ASCII)
             for t in tmp_lines] + [f"<eps> {sil}"]
    tmp["align_lexicon.txt"] = lf.lines(align)
    files["phones/align_lexicon.txt"] = lf.align_lexicon(align)

    phone_ids = {s: int(i) for s, i in (ln.split() for ln in files["phones.txt"].splitlines())}
    word_ids = {s: int(i) for s, i in (ln.split() for ln in files["words.txt"].splitlines())}
    if oov_word not in word_ids:
        raise FormatError(f"the OOV entry {oov_word!r} is not a word of {d.lexicon_path}: give "
                          f"it a pronunciation there (e.g. '{oov_word} spn' with spn a "
                          f"silence phone)")
    files["oov.txt"] = f"{oov_word}\n"
    files["oov.int"] = f"{word_ids[oov_word]}\n"

    ali = files["phones/align_lexicon.txt"]
    ali = lf.sym2int(phone_ids, ali, "phones/align_lexicon.txt", first=2)
    files["phones/align_lexicon.int"] = lf.sym2int(word_ids, ali, "phones/align_lexicon.txt",
                                                   last=1)
    files["phones/wdisambig.txt"] = "#0\n"
    files["phones/wdisambig_phones.int"] = f"{phone_ids['#0']}\n"
    files["phones/wdisambig_words.int"] = f"{word_ids['#0']}\n"
    for name in ("silence", "nonsilence", "optional_silence", "disambig", "context_indep"):
        txt = files[f"phones/{name}.txt"]
        ids = lf.sym2int(phone_ids, txt, f"phones/{name}.txt")
        files[f"phones/{name}.int"] = ids
        files[f"phones/{name}.csl"] = ":".join(ids.split()) + "\n"
    for name in ("sets", "extra_questions"):
        files[f"phones/{name}.int"] = lf.sym2int(phone_ids, files[f"phones/{name}.txt"],
                                                 f"phones/{name}.txt")
    files["phones/roots.int"] = lf.sym2int(phone_ids, files["phones/roots.txt"],
                                           "phones/roots.txt", first=2)
    if "phones/word_boundary.txt" in files:
        files["phones/word_boundary.int"] = lf.sym2int(
            phone_ids, files["phones/word_boundary.txt"], "phones/word_boundary.txt", last=0)
    files["topo"] = lf.topo(opts.num_nonsil_states, opts.num_sil_states,
                            [phone_ids[p] for p in nonsilence], [phone_ids[p] for p in silence])

    fst_entries = [(word_ids[w], float(p), [phone_ids[x] for x in ph]) for w, p, ph in entries]
    fsts = {"L.fst": lexicon_fst(fst_entries, opts.sil_prob, phone_ids[sil])}
    fst_entries = [(w, p, [phone_ids[x] for x in ph])
                   for (w, p, _), ph in zip(fst_entries, prons)]
    fsts["L_disambig.fst"] = lexicon_fst(fst_entries, opts.sil_prob, phone_ids[sil],
                                         phone_ids[f"#{ndisambig}"],
                                         [(phone_ids["#0"], word_ids["#0"])])
    return LangDir(files, fsts, tmp, len(word_ids) - 4, len(silence) + len(nonsilence),
                   ndisambig)


def _same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _install(build: str, lang_dir: str, names: List[str]) -> None:
    """Moves the built lang dir into place (see the module's note)."""
    if not os.path.lexists(lang_dir):
        os.rename(build, lang_dir)
        fsync_dir(os.path.dirname(os.path.abspath(lang_dir)))
        return
    if not os.path.isdir(lang_dir):
        raise ConfigError(f"{lang_dir} exists and is not a directory")
    trash = None
    old_phones = os.path.join(lang_dir, "phones")
    if os.path.lexists(old_phones):
        trash = tempfile.mkdtemp(prefix=".phones.old.", dir=lang_dir)
        os.rename(old_phones, os.path.join(trash, "phones"))
    os.rename(os.path.join(build, "phones"), old_phones)
    for name in names:
        if not name.startswith("phones/"):
            os.replace(os.path.join(build, name), os.path.join(lang_dir, name))
    fsync_dir(lang_dir)
    if trash:
        shutil.rmtree(trash, ignore_errors=True)
    shutil.rmtree(build, ignore_errors=True)
    kept = sorted(set(os.listdir(lang_dir)) - {n.split("/")[0] for n in names})
    if kept:
        log.info("left in %s from before: %s", lang_dir, " ".join(kept))


def prepare_lang(dict_dir: str, oov_word: str, tmp_dir: str, lang_dir: str,
                 opts: Optional[LangOptions] = None) -> LangDir:
    """Reads and checks ``dict_dir``, writes ``tmp_dir``'s files and the lang dir."""
    opts = opts or LangOptions()
    for what, path in (("<tmp-dir>", tmp_dir), ("<lang-dir>", lang_dir)):
        if os.path.isdir(path) and _same_dir(path, dict_dir):
            raise ConfigError(f"{what} {path} is the dict dir: nothing is written there")
    d = read_dict_dir(dict_dir)
    lang = build_lang(d, oov_word, opts)

    os.makedirs(tmp_dir, exist_ok=True)
    for name, text in lang.tmp_files.items():
        with atomic_open(os.path.join(tmp_dir, name), "w", encoding="utf-8") as f:
            f.write(text)

    parent = os.path.dirname(os.path.abspath(lang_dir))
    os.makedirs(parent, exist_ok=True)
    build = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(lang_dir))}.",
                             suffix=".tmp", dir=parent)
    try:
        os.chmod(build, 0o777 & ~current_umask())
        os.mkdir(os.path.join(build, "phones"))
        for name, text in lang.files.items():
            path = os.path.join(build, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            fsync_file(path)
        for name, fst in lang.fsts.items():
            path = os.path.join(build, name)
            if not fst.write(path):
                raise FormatError(f"cannot write {path}")
            fsync_file(path)
        fsync_dir(os.path.join(build, "phones"))
        fsync_dir(build)
        _install(build, lang_dir, sorted(lang.files) + sorted(lang.fsts))
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    log.info("%s: %d words, %d phones, %d disambiguation symbols (#0..#%d), sil-prob %s",
             lang_dir, lang.num_words, lang.num_phones, lang.num_disambig + 1,
             lang.num_disambig, opts.sil_prob)
    return lang
