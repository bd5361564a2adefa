"""A monophone GMM from an equal alignment, as Kaldi's ``train_mono.sh``: the aligner of the
GMM-free path that gives pauses to silence.

Kaldi's schedule and defaults: features with per-speaker mean normalisation and deltas
(``apply-cmvn | add-deltas``); every pdf one Gaussian of the features' global mean and
variance (``gmm-init-mono``); statistics of the equal alignment, then ``--num-iters``
iterations of re-estimation (``gmm-est``: weights, means, variances, and the transition
probabilities), realigning (``gmm-align-compiled``, acoustic scale 0.1, self-loop scale 0.1;
beam 6 at the first realignment, 10 after, retry beam 4x) at ``--realign-iters``, and mixing
up by ``(tot_gauss - num_pdfs) / max_iter_inc`` Gaussians an iteration until
``--max-iter-inc``. The last model aligns the data once more, so that the alignment written is
the final model's (Kaldi's ``align_si.sh`` after ``train_mono.sh``).

One process holds every utterance's features (float32: about 160 bytes a frame with deltas);
each iteration is a pass over them.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List

import numpy as np

from hybridasr.align.alignments import iter_alignment_dir
from hybridasr.gmm.diag_gmm import DiagGmmSet, write_gmm_model
from hybridasr.align.training_graphs import GraphOptions, Lexicon, TrainingGraphCompiler
from hybridasr.align.viterbi import AlignOptions, align_utterance
from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.io.table import read_csl, read_text_rspecifier
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.transition_model import TransitionModel, read_transition_model
from hybridasr.kaldi.tree import read_tree
from hybridasr.options import option

log = logging.getLogger(__name__)

__all__ = ["MonoGmmOptions", "MonoGmmReport", "train_mono_gmm", "update_transitions"]


@dataclass
class MonoGmmOptions:
    """train_mono.sh's options and gmm-est's (Kaldi's defaults)."""
    num_iters: int = option(40, "training iterations", minimum=1)
    tot_gauss: int = option(1000, "target number of Gaussians, summed over the pdfs", minimum=1)
    max_iter_inc: int = option(30, "the last iteration that adds Gaussians", minimum=1)
    realign_iters: str = option("1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38",
                                "the iterations that realign the data first")
    power: float = option(0.25, "the Gaussians are shared out by occupancy^power", above=0.0)
    min_count: float = option(20.0, "a pdf is mixed up only while each Gaussian keeps this "
                                    "many frames", minimum=0.0)
    min_gaussian_occupancy: float = option(10.0, "a Gaussian with fewer frames keeps its "
                                                 "parameters and is removed", minimum=0.0)
    first_min_gaussian_occupancy: float = option(3.0, "the same at the first re-estimation "
                                                      "(on the equal alignment)", minimum=0.0)
    min_variance: float = option(0.001, "variance floor", above=0.0)
    first_beam: float = option(6.0, "beam of the first realignment", above=0.0)
    beam: float = option(10.0, "beam of the later realignments (retry beam: 4x)", above=0.0)
    transition_floor: float = option(0.01, "floor of a re-estimated transition probability",
                                     above=0.0, maximum=0.5)
    transition_min_count: float = option(5.0, "a transition state with fewer frames keeps its "
                                              "probabilities", minimum=0.0)
    boost_silence: float = option(1.0, "factor of the optional silence phone's likelihoods "
                                       "in the alignments (gmm-boost-silence on "
                                       "phones/optional_silence.csl, as Kaldi's "
                                       "train_mono.sh)", above=0.0)
    seed: int = option(0, "seed of the mixing up's random perturbations")

    def realign_set(self) -> set:
        try:
            return {int(x) for x in self.realign_iters.replace(",", " ").split()}
        except ValueError:
            raise ConfigError(f"--realign-iters: a list of integers, not "
                              f"{self.realign_iters!r}") from None


@dataclass
class MonoGmmReport:
    utterances: int = 0
    used: int = 0
    frames: int = 0
    no_alignment: List[str] = field(default_factory=list)
    length_mismatch: List[str] = field(default_factory=list)
    failed_last_alignment: List[str] = field(default_factory=list)
    kept_alignments: int = 0  # realignments that failed both beams: the previous one kept
    num_gauss: int = 0
    num_pdfs: int = 0
    log_like_per_frame: List[float] = field(default_factory=list)  # per iteration
    seconds: float = 0.0

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 2)
        d["log_like_per_frame"] = [round(x, 4) for x in self.log_like_per_frame]
        return d


def update_transitions(tm: TransitionModel, counts: np.ndarray, floor: float = 0.01,
                       min_count: float = 5.0) -> int:
    """Kaldi's ``TransitionModel::MleUpdate`` in place from per-transition-id ``counts``
    (index 0 unused); returns the number of transition states left as they were."""
    skipped = 0
    log_probs = tm.log_probs.copy()
    for s in range(1, tm.num_transition_states + 1):
        lo, hi = int(tm.state2id[s]), int(tm.state2id[s + 1])
        c = counts[lo:hi].astype(np.float64)
        tot = c.sum()
        if tot < min_count:
            skipped += 1
            continue
        p = c / tot
        for _ in range(3):  # Kaldi's: renormalise and floor, three times
            p = np.maximum(p / p.sum(), floor)
        log_probs[lo:hi] = np.log(p)
    tm.log_probs = log_probs.astype(np.float32)
    return skipped


def _features(data_dir: str, utts_wanted) -> Dict[str, np.ndarray]:
    """Kaldi's ``apply-cmvn | add-deltas`` features (those of the tree statistics)."""
    from hybridasr.tree.accumulate import iter_tree_features

    return dict(iter_tree_features(data_dir, keys=utts_wanted))


def train_mono_gmm(data_dir: str, lang_dir: str, model_in: str, tree_path: str,
                   ali_in_dir: str, model_out: str, ali_wspecifier: str,
                   opts: MonoGmmOptions = MonoGmmOptions(),
                   graph_opts: GraphOptions = GraphOptions()) -> MonoGmmReport:
    """Trains from ``ali_in_dir``'s (equal) alignment; writes ``model_out`` (Kaldi's GMM
    ``final.mdl``) and the final model's alignment of every usable utterance."""
    t_start = time.perf_counter()
    rep = MonoGmmReport()
    realign = opts.realign_set()
    tm = read_transition_model(model_in)
    tree = read_tree(tree_path)
    lexicon = Lexicon(lang_dir, graph_opts.normalize_unknown)
    text = read_text_rspecifier(f"ark:{data_dir}/text")
    ali = {utt: a for _, utt, a in iter_alignment_dir(ali_in_dir)}
    feats = _features(data_dir, ali)
    rep.utterances = len(text)
    rep.no_alignment = sorted(u for u in text if u not in ali)
    for utt in list(ali):
        if utt not in feats or utt not in text:
            del ali[utt]
        elif len(feats[utt]) != len(ali[utt]):
            rep.length_mismatch.append(utt)
            del ali[utt]
    if rep.length_mismatch:
        log.warning("%d utterances have alignments of another length than their features "
                    "(first: %s): left out", len(rep.length_mismatch), rep.length_mismatch[0])
    if not ali:
        raise FormatError(f"{ali_in_dir}: no alignment of an utterance of {data_dir}")
    utts = sorted(ali)
    word_ids = {u: lexicon.word_ids(text[u], u)[0] for u in utts}
    rep.used, rep.frames = len(utts), sum(len(ali[u]) for u in utts)
    rep.num_pdfs = tm.num_pdfs

    x1 = sum(feats[u].sum(0, dtype=np.float64) for u in utts)  # (no copy of all features)
    x2 = sum(np.square(feats[u], dtype=np.float64).sum(0) for u in utts)
    mean = x1 / rep.frames
    gmms = DiagGmmSet.init_global(tm.num_pdfs, mean, x2 / rep.frames - mean * mean
                                  + opts.min_variance)
    rng = np.random.default_rng(opts.seed)
    # (Kaldi boosts the optional silence only: not spn, the OOV words' phone)
    silence_pdfs = tm.pdfs_of_phones(read_csl(f"{lang_dir}/phones/optional_silence.csl"))
    num_gauss = tm.num_pdfs
    inc_gauss = max(0, (opts.tot_gauss - num_gauss) // opts.max_iter_inc)

    def realign_all(beam: float, final: bool = False) -> None:
        compiler = TrainingGraphCompiler(tm, tree, lexicon, graph_opts)
        am = gmms.to_am()
        aopts = AlignOptions(beam=beam, retry_beam=4 * beam)
        for u in utts:
            graph, local2tid = compiler.compile(word_ids[u], u, compact=True)
            loglikes = am.log_likelihoods(feats[u])
            loglikes[:, silence_pdfs] += np.log(opts.boost_silence)
            res = align_utterance(graph, tm, loglikes, aopts, u, local2tid)
            if res.ok:
                ali[u] = res.alignment
            elif final:
                rep.failed_last_alignment.append(u)
            else:  # its previous alignment stays (Kaldi's leaves it out of that iteration)
                rep.kept_alignments += 1

    for it in range(opts.num_iters):
        t0 = time.perf_counter()
        if it in realign:
            realign_all(opts.first_beam if it == min(realign) else opts.beam)
        am = gmms.to_am()
        stats = gmms.new_stats()
        counts = np.zeros(tm.num_transition_ids + 1)
        for u in utts:
            a = ali[u]
            gmms.accumulate(am, feats[u], tm.tid2pdf[a], stats)
            np.add.at(counts, a, 1.0)
        rep.log_like_per_frame.append(stats.log_like / stats.frames)
        gmms.update(stats, opts.min_variance, opts.first_min_gaussian_occupancy if it == 0
                    else opts.min_gaussian_occupancy)
        update_transitions(tm, counts, opts.transition_floor, opts.transition_min_count)
        gmms.split_by_count(stats.pdf_occupancy(), num_gauss, rng, power=opts.power,
                            min_count=opts.min_count)
        if 1 <= it <= opts.max_iter_inc:  # (Kaldi's: after iterations 1..max_iter_inc)
            num_gauss += inc_gauss
        took, elapsed = time.perf_counter() - t0, time.perf_counter() - t_start
        log.info("iteration %d of %d: log-likelihood %.3f a frame over %d frames, %d "
                 "Gaussians%s (%.1f s, %.0f frames/s; ETA %.0f s)", it + 1, opts.num_iters,
                 rep.log_like_per_frame[-1], stats.frames, gmms.num_gauss(),
                 ", realigned" if it in realign else "", took, stats.frames / max(took, 1e-9),
                 elapsed / (it + 1) * (opts.num_iters - it - 1))

    realign_all(opts.beam, final=True)
    write_gmm_model(tm, gmms, model_out)
    failed = set(rep.failed_last_alignment)
    with IntVectorWriter(ali_wspecifier) as w:
        for u in utts:
            if u not in failed:
                w.write(u, ali[u])
    rep.num_gauss = gmms.num_gauss()
    rep.seconds = time.perf_counter() - t_start
    log.info("monophone GMM: %d pdfs, %d Gaussians, %d of %d utterances (%d frames); %d "
             "without an alignment to start from, %d of another length, %d not aligned by "
             "the final model; %.1f s", rep.num_pdfs, rep.num_gauss, rep.used,
             rep.utterances, rep.frames, len(rep.no_alignment), len(rep.length_mismatch),
             len(rep.failed_last_alignment), rep.seconds)
    return rep
