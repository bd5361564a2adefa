"""One alignment job: training graphs compiled on the fly and Viterbi alignment of each
utterance's log-likelihoods, as Kaldi's ``compile-train-graphs | align-compiled-mapped``.

Utterances without a transcript, or whose alignment fails with both beams, are counted, named
in the report and skipped, never fatal; transcript words missing from ``words.txt`` are mapped
to ``oov.int`` and counted.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

from hybridasr.align.training_graphs import GraphOptions, Lexicon, TrainingGraphCompiler
from hybridasr.align.viterbi import AlignOptions, align_utterance
from hybridasr.kaldi.io.matrix_reader import read_matrices
from hybridasr.kaldi.io.table import read_text_rspecifier
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.transition_model import read_transition_model
from hybridasr.kaldi.tree import read_tree

log = logging.getLogger(__name__)


@dataclass
class TranscriptJobReport:
    """What every alignment job counts: utterances, aligned ones and their frames, those
    without a transcript (named), transcript words mapped to the OOV word."""
    utterances: int = 0
    aligned: int = 0
    frames: int = 0
    no_transcript: List[str] = field(default_factory=list)
    oov_words: int = 0
    utterances_with_oov: int = 0
    normalized_words: int = 0  # found in words.txt lower-cased / without punctuation
    dropped_tokens: int = 0    # punctuation-only tokens left out

    def word_ids(self, lexicon: Lexicon, text: Dict[str, List[str]], utt: str,
                 text_rspecifier: str) -> Optional[List[int]]:
        """The word ids of ``utt``'s transcript (OOVs counted), or None (counted, named)
        when it has none."""
        self.utterances += 1
        words = text.get(utt)
        if words is None:
            log.warning("utterance %s: no transcript in %s: skipped", utt, text_rspecifier)
            self.no_transcript.append(utt)
            return None
        before = lexicon.normalized, lexicon.dropped
        ids, n_oov = lexicon.word_ids(words, utt)
        self.normalized_words += lexicon.normalized - before[0]
        self.dropped_tokens += lexicon.dropped - before[1]
        self.oov_words += n_oov
        self.utterances_with_oov += n_oov > 0
        return ids


@dataclass
class GraphJobReport(TranscriptJobReport):
    """A job that searches each utterance's training graph: the utterances it failed (named)
    and the seconds spent compiling graphs and searching them (``search_seconds``, named in
    the JSON as each job calls it). ``utils/align_report.sh`` sums the JSON of any of them."""
    failed: List[str] = field(default_factory=list)
    graph_seconds: float = 0.0
    search_seconds: float = 0.0
    search_name = "search_seconds"

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["num_failed"], d["num_no_transcript"] = len(self.failed), len(self.no_transcript)
        d["graph_seconds"] = round(self.graph_seconds, 3)
        d[self.search_name] = round(d.pop("search_seconds"), 3)
        return d


@dataclass
class AlignReport(GraphJobReport):
    retried: int = 0
    total_cost: float = 0.0
    search_name = "align_seconds"

    def to_dict(self) -> Dict:
        d = super().to_dict()
        d["cost_per_frame"] = round(self.total_cost / self.frames, 4) if self.frames else None
        d["total_cost"] = round(self.total_cost, 3)
        return d


class GraphJob:
    """What a job over training graphs reads: the transition model, the graph compiler of the
    tree and lang dir, the transcripts; ``utterances`` walks the log-likelihoods."""

    def __init__(self, tree_path: str, model_path: str, lang_dir: str, text_rspecifier: str,
                 graph_opts: GraphOptions):
        self.tm = read_transition_model(model_path)
        self.lexicon = Lexicon(lang_dir, graph_opts.normalize_unknown)
        self.compiler = TrainingGraphCompiler(self.tm, read_tree(tree_path), self.lexicon,
                                              graph_opts)
        self.text_rspecifier = text_rspecifier
        self.text = read_text_rspecifier(text_rspecifier)

    def utterances(self, loglikes_rspecifier: str, rep: TranscriptJobReport):
        """(utterance, log-likelihoods, word ids, start time) of each utterance with a
        transcript (those without are counted in ``rep``)."""
        for utt, loglikes in read_matrices(loglikes_rspecifier):
            t0 = time.perf_counter()
            ids = rep.word_ids(self.lexicon, self.text, utt, self.text_rspecifier)
            if ids is not None:
                yield utt, loglikes, ids, t0


def align_mapped(tree_path: str, model_path: str, lang_dir: str, loglikes_rspecifier: str,
                 text_rspecifier: str, ali_wspecifier: str,
                 graph_opts: GraphOptions = GraphOptions(),
                 align_opts: AlignOptions = AlignOptions()) -> AlignReport:
    job = GraphJob(tree_path, model_path, lang_dir, text_rspecifier, graph_opts)
    tm = job.tm
    rep = AlignReport()
    with IntVectorWriter(ali_wspecifier) as writer:
        for utt, loglikes, ids, t0 in job.utterances(loglikes_rspecifier, rep):
            graph, local2tid = job.compiler.compile(ids, utt, compact=True)
            t1 = time.perf_counter()
            res = align_utterance(graph, tm, loglikes, align_opts, utt, local2tid)
            rep.graph_seconds += t1 - t0
            rep.search_seconds += time.perf_counter() - t1
            rep.retried += res.retried
            if not res.ok:
                log.warning("utterance %s: alignment failed with beam %g and retry-beam %g "
                            "(%d frames): skipped", utt, align_opts.beam, align_opts.retry_beam,
                            len(loglikes))
                rep.failed.append(utt)
                continue
            writer.write(utt, res.alignment)
            rep.aligned += 1
            rep.frames += len(res.alignment)
            rep.total_cost += res.cost
    log.info("aligned %d of %d utterances (%d frames; %d retried, %d failed, %d without "
             "transcript); %d words mapped to the OOV word in %d utterances; %d found in "
             "words.txt once lower-cased or stripped of punctuation, %d punctuation tokens "
             "left out", rep.aligned, rep.utterances, rep.frames, rep.retried,
             len(rep.failed), len(rep.no_transcript), rep.oov_words, rep.utterances_with_oov,
             rep.normalized_words, rep.dropped_tokens)
    return rep
