"""Read-only access to a user's Kaldi ``s5`` directory.

``check_kaldi_dir`` finds every problem at once (missing files, a graph and an alignment model
that disagree on the number of pdfs) and raises one error listing them. ``import_data_dir``
copies a Kaldi data dir into the recipe's own ``data/``, turning paths that were relative to the
Kaldi dir (plain wav paths, ``feats.scp``/``cmvn.scp`` ark offsets) into absolute ones so that
they resolve from the recipe dir. Nothing is ever written into the Kaldi dir.
"""
from __future__ import annotations

import logging
import os
import shutil
from typing import List, Optional

from hybridasr.errors import HybridAsrError
from hybridasr.kaldi.io.table import iter_map_lines
from hybridasr.utils.atomic import atomic_open

log = logging.getLogger(__name__)

# Files of a Kaldi data dir that are copied as they are.
PLAIN_FILES = ("utt2spk", "spk2utt", "text", "segments", "reco2file_and_channel", "spk2gender",
               "utt2dur", "utt2num_frames", "reco2dur", "utt2lang", "stm", "glm")
FEATURE_FILES = ("feats.scp", "cmvn.scp")


def _num_pdfs_of_model(path: str) -> int:
    from hybridasr.kaldi.transition_model import read_transition_model

    return int(read_transition_model(path).num_pdfs)


def _is_gmm_model(path: str) -> bool:
    """Whether a model file is a Kaldi GMM (a transition model, then an AmDiagGmm) that
    ``gmm_compute_likes.py`` reads; an nnet's ``final.mdl`` is not."""
    from hybridasr.kaldi.gmm_model import read_gmm_model

    try:
        read_gmm_model(path)
    except HybridAsrError:
        return False
    return True


def _check_ali_phones(ali_dir: str, lang_dir: str, problems: List[str]) -> None:
    """The alignment model's phones are the lang dir's (``steps/import_ali.sh --lang``'s
    check, made here so that stage 0 finds it)."""
    from hybridasr.align.importer import check_phones
    from hybridasr.kaldi.transition_model import read_transition_model

    if not os.path.isfile(os.path.join(lang_dir, "phones.txt")):
        return  # reported as missing above
    try:
        check_phones(ali_dir, read_transition_model(os.path.join(ali_dir, "final.mdl")),
                     lang_dir)
    except HybridAsrError as e:
        problems.append(str(e))


def check_kaldi_dir(kaldi_dir: str, train: str, test: str, lang: str, ali: str, graph: str,
                    use_kaldi_feats: bool = False, lm_given: bool = False) -> dict:
    """Checks that the pieces the recipe needs are there and agree; returns facts found.

    ``ali`` "none" (no GMM): no alignment or graph is needed, and ``lang`` may be a dict dir
    (``facts["lang_kind"]``: "lang" or "dict"); without a ``G.fst`` in it an LM must be given
    (``lm_given``). With a GMM ``lang`` may be a dict dir too (the recipe makes its lang dir
    with ``utils/prepare_lang.sh``; the graph brings its own words): the phones made from it
    must be the alignment model's (``hybridasr.recipe.dict_phones``), with word positions or
    without (``facts["dict_position_dependent_phones"]``: how the recipe's
    ``utils/prepare_lang.sh`` makes its lang dir from a dict dir; true, Kaldi's default,
    unless the GMM's phones have no word positions)."""
    problems: List[str] = []
    facts: dict = {"kaldi_dir": os.path.abspath(kaldi_dir),
                   "dict_position_dependent_phones": True}

    def need(rel: str, what: str) -> Optional[str]:
        p = os.path.join(kaldi_dir, rel)
        if not os.path.exists(p):
            link = f" is a symbolic link to {os.readlink(p)!r}, which does not exist" \
                if os.path.islink(p) else ""
            problems.append(f"missing {what}: {p}{link}")
            return None
        return p

    if not os.path.isdir(kaldi_dir):
        raise HybridAsrError(f"--kaldi-dir {kaldi_dir} is not a directory")
    for name, d in (("train", train), ("test", test)):
        need(os.path.join(d, "utt2spk"), f"{name} data dir file")
        need(os.path.join(d, "text"), f"{name} data dir file")
        if use_kaldi_feats:
            need(os.path.join(d, "feats.scp"), f"{name} features (--use-kaldi-feats true)")
            need(os.path.join(d, "cmvn.scp"), f"{name} CMVN stats (--use-kaldi-feats true)")
        else:
            need(os.path.join(d, "wav.scp"), f"{name} audio list")
    if ali == "none":  # no GMM: flat start, the toolkit's own tree and graphs
        _check_lang_or_dict(kaldi_dir, lang, lm_given, problems, facts)
        if problems:
            raise HybridAsrError(f"Kaldi dir {kaldi_dir} cannot be used:\n  " +
                                 "\n  ".join(problems))
        return facts
    dict_dir, dict_complete = None, False
    if _lang_kind(os.path.join(kaldi_dir, lang)) == "dict":
        # the recipe makes data/lang from it (utils/prepare_lang.sh); checked below that its
        # phones are the alignment model's
        dict_dir = os.path.join(kaldi_dir, lang)
        facts["lang_kind"] = "dict"
        dict_complete = _need_dict_files(dict_dir, problems)
    else:
        need(os.path.join(lang, "words.txt"), "lang dir word list")
        need(os.path.join(lang, "phones.txt"), "lang dir phone list")
        if not os.path.exists(os.path.join(kaldi_dir, lang)) and \
                _lang_kind(os.path.join(kaldi_dir, "data/local/dict")) == "dict":
            problems.append(f"there is no lang dir {os.path.join(kaldi_dir, lang)}, but a dict "
                            f"dir: give --lang data/local/dict (the recipe makes its lang dir "
                            f"from it with utils/prepare_lang.sh)")
    if not os.path.exists(os.path.join(kaldi_dir, ali)) and \
            not os.path.isdir(os.path.join(kaldi_dir, "exp")):
        problems.append(f"the Kaldi dir has no exp/ (no GMM system): use --ali none to train "
                        f"without one (flat start), with --lang naming a lang dir or a dict "
                        f"dir")
    mdl = need(os.path.join(ali, "final.mdl"), "alignment model")
    ali_dir = os.path.join(kaldi_dir, ali)
    if os.path.isdir(ali_dir) and not any(f.startswith("ali.") and f.endswith(".gz")
                                          for f in os.listdir(ali_dir)):
        problems.append(f"no alignments (ali.*.gz) in {ali_dir}")
    need(os.path.join(graph, "HCLG.fst"), "decoding graph")
    need(os.path.join(graph, "words.txt"), "decoding graph's word list")
    if mdl:
        try:
            facts["num_pdfs_ali"] = _num_pdfs_of_model(mdl)
        except HybridAsrError as e:
            problems.append(str(e))
        else:
            facts["ali_model_is_gmm"] = _is_gmm_model(mdl)
            if dict_dir is None:
                _check_ali_phones(ali_dir, os.path.join(kaldi_dir, lang), problems)
            elif dict_complete:
                positional = _check_ali_dict_phones(ali_dir, dict_dir, problems)
                if positional is not None:
                    facts["dict_position_dependent_phones"] = positional
    graph_pdfs = os.path.join(kaldi_dir, graph, "num_pdfs")
    graph_mdl = os.path.join(kaldi_dir, os.path.dirname(graph.rstrip("/")), "final.mdl")
    if os.path.exists(graph_pdfs):
        with open(graph_pdfs) as f:
            facts["num_pdfs_graph"] = int(f.read().split()[0])
    elif os.path.exists(graph_mdl):
        try:
            facts["num_pdfs_graph"] = _num_pdfs_of_model(graph_mdl)
        except HybridAsrError as e:
            problems.append(str(e))
    if "num_pdfs_ali" in facts and "num_pdfs_graph" in facts and \
            facts["num_pdfs_ali"] != facts["num_pdfs_graph"]:
        problems.append(f"the alignment model {mdl} has {facts['num_pdfs_ali']} pdfs but the "
                        f"graph {os.path.join(kaldi_dir, graph)} was built for "
                        f"{facts['num_pdfs_graph']}: they come from different GMM systems")
    if problems:
        raise HybridAsrError(f"Kaldi dir {kaldi_dir} cannot be used:\n  " + "\n  ".join(problems))
    return facts


_LANG_FILES = ("words.txt", "phones.txt", "L.fst", "topo", "oov.int", "phones/sets.int",
               "phones/roots.int", "phones/disambig.int")
_DICT_FILES = ("silence_phones.txt", "nonsilence_phones.txt", "optional_silence.txt")


def _lang_kind(d: str) -> Optional[str]:
    """"lang" (L.fst or words.txt there), "dict" (else a lexicon there) or None."""
    if os.path.exists(os.path.join(d, "L.fst")) or os.path.exists(os.path.join(d, "words.txt")):
        return "lang"
    if any(os.path.exists(os.path.join(d, f)) for f in ("lexicon.txt", "lexiconp.txt")):
        return "dict"
    return None


def _need_dict_files(d: str, problems: List[str]) -> bool:
    """Whether the dict dir has its phone lists (each one missing is a problem)."""
    missing = [os.path.join(d, f) for f in _DICT_FILES if not os.path.exists(os.path.join(d, f))]
    problems.extend(f"missing dict dir file: {p}" for p in missing)
    return not missing


def _check_ali_dict_phones(ali_dir: str, dict_dir: str, problems: List[str]) -> Optional[bool]:
    """Whether the phones prepare_lang.sh makes from the dict dir are the alignment model's
    with word positions (True) or without (False); None, with the problem, when neither."""
    from hybridasr.align.importer import check_phones
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.recipe.dict_phones import check_dict_fits_model

    try:
        tm = read_transition_model(os.path.join(ali_dir, "final.mdl"))
        check_phones(ali_dir, tm)  # the ali dir's phones.txt is its model's
        return check_dict_fits_model(dict_dir, ali_dir, tm.topology.phones)
    except HybridAsrError as e:
        problems.append(str(e))
        return None


def _check_lang_or_dict(kaldi_dir: str, lang: str, lm_given: bool, problems: List[str],
                        facts: dict) -> None:
    d = os.path.join(kaldi_dir, lang)
    kind = _lang_kind(d)
    if kind == "lang":
        facts["lang_kind"] = "lang"
        for f in _LANG_FILES:
            if not os.path.exists(os.path.join(d, f)):
                problems.append(f"missing lang dir file: {os.path.join(d, f)}")
        if not os.path.exists(os.path.join(d, "G.fst")) and not lm_given:
            problems.append(f"the lang dir {d} has no G.fst: give --lm-arpa or --lm-text")
    elif kind == "dict":
        facts["lang_kind"] = "dict"
        _need_dict_files(d, problems)
        if not lm_given:
            problems.append(f"--lang {lang} is a dict dir (no G.fst): give --lm-arpa or "
                            f"--lm-text")
    else:
        problems.append(f"--lang {d} is neither a lang dir (L.fst, words.txt) nor a dict dir "
                        f"(lexicon.txt, silence_phones.txt, ...)")


def _absolute_wav_entry(value: str, base: str) -> str:
    v = value.strip()
    if v.endswith("|"):
        # A pipe: run it from the Kaldi dir, where its relative paths resolve.
        return f"cd {base} && {v}"
    if v == "-" or os.path.isabs(v):
        return v
    return os.path.join(base, v)


def _absolute_ark_entry(value: str, base: str) -> str:
    v = value.strip()
    if v.endswith("|") or os.path.isabs(v):
        return v
    return os.path.join(base, v)


def import_data_dir(src: str, dst: str, base: str, keep_feats: bool) -> int:
    """Copies Kaldi data dir ``src`` to ``dst``; relative paths become relative to ``base``.

    Returns the number of utterances. ``keep_feats`` keeps feats.scp/cmvn.scp (made absolute).
    """
    base = os.path.abspath(base)
    if not os.path.isfile(os.path.join(src, "utt2spk")):
        raise HybridAsrError(f"{src} is not a Kaldi data dir (no utt2spk)")
    tmp = dst.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name in PLAIN_FILES:
        p = os.path.join(src, name)
        if os.path.isfile(p):
            shutil.copyfile(p, os.path.join(tmp, name))
    rewrites = [("wav.scp", _absolute_wav_entry)]
    if keep_feats:
        rewrites += [(n, _absolute_ark_entry) for n in FEATURE_FILES]
    for name, fix in rewrites:
        p = os.path.join(src, name)
        if not os.path.isfile(p):
            continue
        with atomic_open(os.path.join(tmp, name), "w", encoding="utf-8") as out:
            for _, key, rest in iter_map_lines(p):
                out.write(f"{key} {fix(rest, base)}\n")
    with open(os.path.join(tmp, "utt2spk")) as f:
        n = sum(1 for _ in f)
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(tmp, dst)
    log.info("copied %s (%d utterances) to %s", src, n, dst)
    return n
