"""Flat-start alignment, as Kaldi's ``compile-train-graphs | align-equal-compiled``: each
utterance's training graph, one random path through it (no self-loops), and the frames shared
out equally over the HMM states on that path by repeating their self-loops (``EqualAlign`` in
Kaldi's ``fstext-utils``). The path is drawn with a random generator seeded from the utterance
id and ``--seed``, so a job gives the same alignment on every run and machine.

An utterance whose paths all need more frames than it has (tried ``num_retries`` times) is too
short for its transcript; it is counted, named in the report and skipped, as Kaldi skips it.
So is one without a transcript or without features.
"""
from __future__ import annotations

import logging
import zlib
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import numpy as np

from hybridasr.align.align_mapped import TranscriptJobReport
from hybridasr.align.training_graphs import GraphOptions, Lexicon, TrainingGraphCompiler
from hybridasr.kaldi.io.matrix_lengths import feat_lengths
from hybridasr.kaldi.io.table import read_csl, read_text_rspecifier
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.options import option

log = logging.getLogger(__name__)

__all__ = ["EqualAlignOptions", "EqualAlignReport", "equal_align", "align_equal_compiled"]


@dataclass
class EqualAlignOptions:
    seed: int = option(0, "added to each utterance's seed (a hash of its id)")
    num_retries: int = option(100, "random paths tried before an utterance counts as too "
                                   "short for its transcript")
    edge_silence: bool = option(False, "every path begins and ends with the optional silence "
                                       "where the graph has it (false: drawn like every other "
                                       "arc, as Kaldi's align-equal-compiled)")


@dataclass
class EqualAlignReport(TranscriptJobReport):
    too_short: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["num_too_short"], d["num_no_transcript"] = len(self.too_short), len(self.no_transcript)
        d["num_failed"] = len(self.too_short)
        return d


def _arcs(graph):
    """Per state: (ilabel, nextstate) of its arcs that are not self-loops, and its self-loop's
    ilabel (0: none), and whether it is final."""
    import kaldifst

    out, loops, final = [], [], []
    for s in range(graph.num_states):
        arcs, loop = [], 0
        it = kaldifst.ArcIterator(graph, s)
        while not it.done:
            a = it.value
            it.next()
            if a.nextstate == s:
                if a.ilabel != 0 and not loop:
                    loop = a.ilabel
            else:
                arcs.append((a.ilabel, a.nextstate))
        out.append(arcs)
        loops.append(loop)
        final.append(graph.final(s).value != float("inf"))
    return out, loops, final


def equal_align(graph, num_frames: int, rng: np.random.Generator,
                num_retries: int = 100,
                silence_labels: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """Kaldi's ``EqualAlign``: an input-label sequence of exactly ``num_frames`` labels along
    one random path of ``graph``, or None when no path drawn is short enough (or the path has
    no self-loop to stretch). With ``silence_labels`` (a boolean array over the input
    labels), the path's first label is a silence label where the start state leads to one
    through epsilons, and the path ends right after a silence label where the graph has such
    an end: the optional silences at the utterance's edges are taken, those between the
    words drawn as before."""
    if graph.start < 0:
        return None
    arcs, loops, final = _arcs(graph)

    if silence_labels is not None:
        may_end = [_may_end(s, arcs, final) for s in range(len(arcs))]
        quiet_end = _quiet_ends(arcs, may_end, silence_labels)

        def silent(label: int) -> bool:
            return 0 < label < len(silence_labels) and bool(silence_labels[label])

    for _ in range(max(1, num_retries)):
        path, labels = [graph.start], []
        last = 0  # the last non-epsilon label taken
        while True:
            s = path[-1]
            choices = arcs[s]
            may_stop = final[s]
            if silence_labels is not None:
                if last == 0:  # the first label: silence where the start has it
                    first = [a for a in choices if _leads_to_silence(a, arcs, silent)]
                    choices = first or choices
                # the way on keeps a path that ends in silence, where one does
                ends = [a for a in choices if quiet_end[a[1]] or (silent(a[0]) and
                                                                   may_end[a[1]])]
                if ends or may_stop and silent(last):
                    choices = ends
                    may_stop = may_stop and silent(last)
            n = len(choices) + (1 if may_stop else 0)
            if n == 0:  # a dead end (not co-accessible): draw again
                labels = None
                break
            k = int(rng.integers(n))
            if k == len(choices):
                break
            ilabel, nxt = choices[k]
            last = ilabel or last
            path.append(nxt)
            labels.append(ilabel)
        if labels is not None and sum(1 for x in labels if x) <= num_frames:
            break
    else:
        return None
    if labels is None:
        return None
    n_labels = sum(1 for x in labels if x)
    looped = [i for i, s in enumerate(path) if loops[s]]
    extra = num_frames - n_labels
    if extra > 0 and not looped:
        return None
    each, more = divmod(extra, len(looped)) if looped else (0, 0)
    repeats = np.zeros(len(path), dtype=np.int64)
    for j, i in enumerate(looped):
        repeats[i] = each + (1 if j < more else 0)
    out: List[int] = []
    for i, s in enumerate(path):
        out.extend([loops[s]] * int(repeats[i]))  # a state's self-loops, then its way out
        if i < len(labels) and labels[i]:
            out.append(labels[i])
    return np.asarray(out, dtype=np.int32)


def silence_transition_ids(tm, lang_dir: str) -> np.ndarray:
    """A boolean array over the transition-ids: those of the lang dir's silence phones
    (``phones/silence.csl``)."""
    out = np.isin(tm.tid2phone, read_csl(f"{lang_dir}/phones/silence.csl"))
    out[0] = False
    return out


def _may_end(s: int, arcs, final) -> bool:
    """Whether ``s`` is final or reaches a final state through epsilons alone."""
    seen, todo = {s}, [s]
    while todo:
        t = todo.pop()
        if final[t]:
            return True
        for label, nxt in arcs[t]:
            if label == 0 and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def _leads_to_silence(arc, arcs, silent, depth: int = 0) -> bool:
    """A silence arc, or an epsilon arc into a state with one (through epsilons)."""
    label, nxt = arc
    if label:
        return silent(label)
    return depth < 20 and any(_leads_to_silence(a, arcs, silent, depth + 1) for a in arcs[nxt])


def _quiet_ends(arcs, ends, silence_labels) -> List[bool]:
    """Per state: whether a path from it ends (in a state of ``ends``: final, or final through
    epsilons) right after a silence label. A fixed point over the graph, which is small."""
    n = len(arcs)
    quiet = [False] * n
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if quiet[s]:
                continue
            for label, nxt in arcs[s]:
                if quiet[nxt] or (0 < label < len(silence_labels) and silence_labels[label]
                                  and ends[nxt]):
                    quiet[s] = changed = True
                    break
    return quiet


def utterance_rng(utt: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(utt.encode("utf-8")), seed & 0xFFFFFFFF])


def align_equal_compiled(tree_path: str, model_path: str, lang_dir: str, feats_rspecifier: str,
                         text_rspecifier: str, ali_wspecifier: str,
                         opts: EqualAlignOptions = EqualAlignOptions(),
                         graph_opts: GraphOptions = GraphOptions()) -> EqualAlignReport:
    """One flat-start job: the utterances of ``feats_rspecifier`` (only their lengths are
    read) aligned equally on their transcripts' training graphs."""
    tm = read_transition_model(model_path)
    tree = read_tree(tree_path)
    lexicon = Lexicon(lang_dir, graph_opts.normalize_unknown)
    compiler = TrainingGraphCompiler(tm, tree, lexicon, graph_opts)
    text = read_text_rspecifier(text_rspecifier)
    silence_tids = silence_transition_ids(tm, lang_dir) if opts.edge_silence else None
    rep = EqualAlignReport()
    with IntVectorWriter(ali_wspecifier) as writer:
        for utt, n_frames in feat_lengths(feats_rspecifier).items():
            ids = rep.word_ids(lexicon, text, utt, text_rspecifier)
            if ids is None:
                continue
            graph = compiler.compile(ids, utt)
            ali = equal_align(graph, n_frames, utterance_rng(utt, opts.seed), opts.num_retries,
                              silence_tids)
            if ali is None:
                log.warning("utterance %s: %d frames are too few for its transcript (%d words) "
                            "to be aligned: skipped", utt, n_frames, len(ids))
                rep.too_short.append(utt)
                continue
            writer.write(utt, ali)
            rep.aligned += 1
            rep.frames += len(ali)
    log.info("aligned %d of %d utterances equally (%d frames); %d too short for their "
             "transcript, %d without transcript; %d words mapped to the OOV word, %d found "
             "once lower-cased or stripped of punctuation, %d punctuation tokens left out",
             rep.aligned, rep.utterances, rep.frames, len(rep.too_short),
             len(rep.no_transcript), rep.oov_words, rep.normalized_words, rep.dropped_tokens)
    return rep
