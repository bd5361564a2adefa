"""``G.fst`` from an ARPA language model without Kaldi: Kaldi's ``utils/format_lm.sh``.

``format_lm(lang_dir, arpa, lexicon, out_dir)`` does what ``format_lm.sh`` does: copies the
files of the lang dir that Kaldi copies (``phones.txt words.txt topo L.fst L_disambig.fst
phones/ oov.int oov.txt``: not the old ``G.fst``, not ``tmp/``, whose ``LG.fst`` caches belong
to the old G) to ``out_dir``, then runs ``arpa2fst --disambig-symbol=#0
--read-symbol-table=words.txt`` (``arpa_to_fst``), reports ``fstisstochastic`` and fails if
G has a cycle of empty words (lexicon words without a pronunciation, ``#0``, epsilons)
reachable from its start, as Kaldi's check does. It never writes into ``lang_dir``.

``arpa_to_fst`` reads the ARPA with ``hybridasr.lang.arpa.ArpaReader`` (errors name the file
and line) and removes before compiling what Kaldi's ``arpa2fst`` would skip, counting it in
the log: n-grams with a word missing from ``words.txt`` (Kaldi's ``kSkipNGram`` mode, set by
``--read-symbol-table``; ``<s>`` and ``</s>`` are never missing, as arpa2fst adds them), whose
unigrams are the OOVs ``utils/find_arpa_oovs.pl`` lists; and n-grams with ``<s>`` after their
first word or ``</s>`` before their last (``<s> <s>``, ``</s> <s>``, ``</s> </s>``, which old
``format_lm.sh`` removed with ``grep -v`` and Kaldi's compiler skips). An ``<eps>`` or ``#0``
word, or no ``<s>`` unigram, is an error (Kaldi aborts on them). The clean ARPA is compiled
by ``kaldilm.arpa2fst`` (Kaldi's own compiler, from PyPI) in a child process, since it aborts
the process on bad input; its warnings (n-grams whose history is missing) are counted. The
result is Kaldi's G.fst (same states, arcs and weights; ilabel-sorted, no symbol tables),
read back with kaldifst, checked and written atomically.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

import numpy as np

from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.fst import const_fst_arrays, stochasticity
from hybridasr.kaldi.symbol_table import read_symbol_ids
from hybridasr.lang.arpa import BOS, EOS, ArpaReader, open_text, split_fields
from hybridasr.utils.atomic import atomic_path

log = logging.getLogger(__name__)

LANG_FILES = ("phones.txt", "words.txt", "topo", "L.fst", "L_disambig.fst", "phones",
              "oov.int", "oov.txt")
STOCHASTIC_DELTA = 0.01  # fstisstochastic's --delta
_SHOWN = 20  # OOV words named in the log

_ARPA2FST = """\
import sys
import kaldilm
arpa, fst, words, disambig = sys.argv[1:]
kaldilm.arpa2fst(input_arpa=arpa, output_fst=fst, read_symbol_table=words,
                 disambig_symbol=disambig, max_arpa_warnings=-1)
"""


@dataclass
class GReport:
    """What ``arpa_to_fst`` did. Per order (index 0: unigrams): n-grams read, kept, skipped
    for a word not in words.txt; ``oov_words``: the ARPA's unigram words not in words.txt
    (``find_arpa_oovs.pl``); ``bos_eos_removed``: n-grams with ``<s>``/``</s>`` misplaced;
    ``no_history``: n-grams arpa2fst skipped for want of their (n-1)-gram history;
    ``stochastic_min``/``max``: fstisstochastic's two numbers (the largest and smallest
    -log of a state's total probability)."""
    read: List[int] = field(default_factory=list)
    kept: List[int] = field(default_factory=list)
    oov_skipped: List[int] = field(default_factory=list)
    oov_words: List[str] = field(default_factory=list)
    bos_eos_removed: int = 0
    no_history: int = 0
    num_states: int = 0
    num_arcs: int = 0
    stochastic_min: float = 0.0
    stochastic_max: float = 0.0
    stochastic: bool = True


def empty_words(lexicon: str) -> Set[str]:
    """Words of a lexicon without a pronunciation (lines of one field), as format_lm.sh; the
    lexicon may be a device or FIFO (``/dev/null``: no such words, as make_denlats.sh gives)."""
    if not os.path.exists(lexicon) or os.path.isdir(lexicon):
        raise FormatError(f"missing lexicon {lexicon}")
    with open_text(lexicon) as f:
        return {fields[0] for fields in map(split_fields, f) if len(fields) == 1}


# ------------------------------------------------------------------ the ARPA, cleaned
def clean_arpa(arpa: str, words: Dict[str, int], out: str, disambig: str,
               report: GReport) -> None:
    """Writes to ``out`` the n-grams of ``arpa`` that arpa2fst would use (see the module)."""
    reader = ArpaReader(arpa)
    top = reader.order
    report.read, report.kept, report.oov_skipped = [0] * top, [0] * top, [0] * top
    oovs: Dict[str, None] = {}
    has_bos = False
    body = out + ".body"
    with open_text(body, "w") as f:
        for e in reader.entries():
            n = len(e.words)
            report.read[n - 1] += 1
            missing = False
            for w in e.words:
                if w == disambig or words.get(w) == 0:
                    what = "the disambiguation symbol" if w == disambig else "epsilon"
                    raise FormatError(f"{arpa}:{e.lineno}: the word {w!r} is {what} of the "
                                      f"symbol table [{e.text}]")
                if w not in words and w not in (BOS, EOS):
                    missing = True
                    if n == 1:
                        oovs[w] = None
            if missing:
                report.oov_skipped[n - 1] += 1
                continue
            if BOS in e.words[1:] or EOS in e.words[:-1]:
                report.bos_eos_removed += 1
                continue
            has_bos = has_bos or e.words == (BOS,)
            report.kept[n - 1] += 1
            f.write(e.text + "\n")
    if not has_bos:
        raise FormatError(f"{arpa}: no {BOS} unigram (arpa2fst needs it for the start state)")
    report.oov_words = list(oovs)
    with open(out, "w", encoding="ascii") as f:
        f.write("\\data\\\n" + "".join(f"ngram {n}={c}\n" for n, c in
                                        enumerate(report.kept, start=1)))
    with open(body, "rb") as src, open(out, "ab") as dst:
        _write_sections(src, dst, report.kept)
    os.unlink(body)


def _write_sections(src, dst, kept: List[int]) -> None:
    for n, count in enumerate(kept, start=1):
        dst.write(f"\n\\{n}-grams:\n".encode())
        for _ in range(count):
            dst.write(src.readline())
    dst.write(b"\n\\end\\\n")


def _run_arpa2fst(arpa: str, words_txt: str, fst: str, disambig: str, name: str) -> int:
    """kaldilm.arpa2fst in a child process; returns how many n-grams it skipped."""
    with tempfile.TemporaryFile() as err:
        rc = subprocess.run([sys.executable, "-c", _ARPA2FST, arpa, fst, words_txt, disambig],
                            stdout=subprocess.DEVNULL, stderr=err).returncode
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if rc != 0 or not os.path.isfile(fst):
        msgs = [ln for ln in text.splitlines() if ln.startswith("[E]") or "Error" in ln]
        raise FormatError(f"{name}: arpa2fst (kaldilm) failed (exit {rc}): "
                          f"{' '.join(msgs[-3:]) or text[-500:]}")
    skipped = [ln for ln in text.splitlines() if "skipped" in ln]
    for ln in skipped[:5]:
        log.warning("arpa2fst: %s", ln.split("] ", 1)[-1])
    return len(skipped)


# ------------------------------------------------------------------ checks of G
def empty_word_cycle(arrays, labels: Set[int]) -> bool:
    """Whether a cycle of arcs whose input label is in ``labels`` (or epsilon) is reachable
    from the start state over such arcs (format_lm.sh: compose with a filter, fstinfo)."""
    states, arcs = arrays.states, arrays.arcs
    owner = np.repeat(np.arange(len(states)), states[:, 2].astype(np.int64))
    keep = np.isin(arcs[:, 0], np.array(sorted(labels | {0}), dtype=np.int64))
    nxt: Dict[int, List[int]] = {}
    for s, d in zip(owner[keep].tolist(), arcs[keep, 3].tolist()):
        nxt.setdefault(s, []).append(d)
    seen, todo = {arrays.start}, deque([arrays.start])
    while todo:
        for d in nxt.get(todo.popleft(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    indeg = dict.fromkeys(seen, 0)
    for s in seen:
        for d in nxt.get(s, ()):
            indeg[d] += 1
    ready = deque(s for s, k in indeg.items() if k == 0)
    done = 0
    while ready:
        done += 1
        for d in nxt.get(ready.popleft(), ()):
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    return done < len(seen)


# ------------------------------------------------------------------ entry points
def compile_g(arpa: str, words_txt: str, fst_out: str, lexicon: Optional[str] = None,
              disambig_symbol: str = "#0") -> GReport:
    """Compiles ``arpa`` against ``words_txt`` into ``fst_out`` (not atomic: a scratch
    path), checks it and returns the report."""
    words = read_symbol_ids(words_txt)
    if disambig_symbol not in words:
        raise FormatError(f"{words_txt}: no {disambig_symbol} (the back-off disambiguation "
                          f"symbol)")
    blank = empty_words(lexicon) if lexicon else set()
    report = GReport()
    with tempfile.TemporaryDirectory(prefix="hybridasr-g-") as tmp:
        clean = os.path.join(tmp, "clean.arpa")
        clean_arpa(arpa, words, clean, disambig_symbol, report)
        report.no_history = _run_arpa2fst(clean, words_txt, fst_out, disambig_symbol, arpa)
    import kaldifst

    fst = kaldifst.StdVectorFst.read(fst_out)
    if fst is None or fst.start < 0:
        raise FormatError(f"{arpa}: arpa2fst wrote no readable G ({fst_out})")
    arrays = const_fst_arrays(fst)
    report.num_states, report.num_arcs = len(arrays.states), len(arrays.arcs)
    owner = np.repeat(np.arange(len(arrays.states)), arrays.states[:, 2].astype(np.int64))
    report.stochastic_min, report.stochastic_max, report.stochastic = stochasticity(
        arrays.states[:, 0].view(np.float32), owner, arrays.arcs[:, 2].view(np.float32),
        STOCHASTIC_DELTA)
    _log_report(arpa, words_txt, report)
    labels = {words[w] for w in blank if w in words} | {words[disambig_symbol]}
    if empty_word_cycle(arrays, labels):
        raise FormatError(f"{arpa}: the language model has cycles with empty words "
                          f"({disambig_symbol} or words without a pronunciation in "
                          f"{lexicon}): determinizing LG would fail")
    return report


def _per_order(xs: List[int]) -> str:
    return ", ".join(f"{c} {n}-grams" for n, c in enumerate(xs, start=1))


def _log_report(arpa: str, words_txt: str, r: GReport) -> None:
    per = _per_order
    log.info("%s: read %s; kept %s", arpa, per(r.read), per(r.kept))
    if r.oov_words or any(r.oov_skipped):
        shown = " ".join(r.oov_words[:_SHOWN]) + (" ..." if len(r.oov_words) > _SHOWN else "")
        log.warning("%s: %d unigram words are not in %s (OOVs, skipped as arpa2fst does): "
                    "%s; n-grams skipped: %s", arpa, len(r.oov_words), words_txt, shown,
                    per(r.oov_skipped))
    if r.bos_eos_removed:
        log.warning("%s: removed %d n-grams with <s> or </s> misplaced (<s> <s>, </s> <s>, "
                    "</s> </s> ...)", arpa, r.bos_eos_removed)
    if r.no_history:
        log.warning("%s: arpa2fst skipped %d n-grams whose (n-1)-gram history is missing",
                    arpa, r.no_history)
    log.info("G.fst: %d states, %d arcs; fstisstochastic: %g %g (%s)", r.num_states,
             r.num_arcs, r.stochastic_min, r.stochastic_max,
             "stochastic" if r.stochastic else
             "not stochastic: usual with back-off weights or skipped OOVs; Kaldi only reports it")


def arpa_to_fst(arpa: str, words_txt: str, fst_out: str, lexicon: Optional[str] = None,
                disambig_symbol: str = "#0") -> GReport:
    """Kaldi's ``arpa2fst --disambig-symbol=#0 --read-symbol-table=words.txt arpa G.fst``
    with format_lm.sh's checks (``lexicon``: for the empty-word cycle check); ``fst_out``
    is written atomically."""
    with tempfile.TemporaryDirectory(prefix="hybridasr-g-") as tmp:
        scratch = os.path.join(tmp, "G.fst")
        report = compile_g(arpa, words_txt, scratch, lexicon, disambig_symbol)
        _copy_file(scratch, fst_out)
    return report


def _copy_file(src: str, dst: str) -> None:
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def format_lm(lang_dir: str, arpa: str, lexicon: str, out_dir: str) -> GReport:
    """Kaldi's ``utils/format_lm.sh <lang-dir> <arpa> <lexicon> <out-lang-dir>``."""
    for name in LANG_FILES:
        if not os.path.exists(os.path.join(lang_dir, name)):
            raise FormatError(f"lang dir {lang_dir} lacks {name} "
                              f"(missing {os.path.join(lang_dir, name)})")
    if os.path.exists(out_dir) and os.path.samefile(lang_dir, out_dir):
        raise ConfigError(f"the output lang dir {out_dir} is the input lang dir: give "
                          f"another (the input is never written)")
    with tempfile.TemporaryDirectory(prefix="hybridasr-g-") as tmp:
        scratch = os.path.join(tmp, "G.fst")
        report = compile_g(arpa, os.path.join(lang_dir, "words.txt"), scratch, lexicon)
        os.makedirs(out_dir, exist_ok=True)
        if os.path.isdir(os.path.join(out_dir, "phones")):
            shutil.rmtree(os.path.join(out_dir, "phones"))
        for name in LANG_FILES:
            src = os.path.join(lang_dir, name)
            if os.path.isdir(src):
                for root, _dirs, files in os.walk(src, followlinks=True):
                    dst_root = os.path.join(out_dir, name, os.path.relpath(root, src))
                    os.makedirs(dst_root, exist_ok=True)
                    for f in files:
                        _copy_file(os.path.join(root, f), os.path.join(dst_root, f))
            else:
                _copy_file(src, os.path.join(out_dir, name))
        _copy_file(scratch, os.path.join(out_dir, "G.fst"))
    log.info("formatted %s into %s/G.fst", arpa, out_dir)
    return report
