"""Per-utterance training graphs, as Kaldi's ``compile-train-graphs`` + ``AddTransitionProbs``.

Kaldi builds H o C o L o W for the word sequence W of an utterance: L from the lang dir
(``L.fst``), C with ``ComposeContext`` from the tree's context width and central position, and
H from the tree and the TransitionModel (``GetHTransducer``), then adds the HMM self-loops
(``AddSelfLoops`` with ``reorder=true``: a state's self-loop comes after the transition that
left it) and the transition probabilities (``--transition-scale``, ``--self-loop-scale``).

Here ``L o W`` and the context expansion are kaldifst's (``compose``, ``compose_context``); H,
the self-loops and the probabilities are applied in one step: each arc of ``C o L o W`` whose
input is a phone window is replaced by the HMM of that window (its pdfs from the tree), in the
reordered layout Kaldi's ``AddSelfLoopsReorder`` produces. H is the closure of the per-window
HMMs, so this is H o (C o L o W). The graph is not determinized or minimized (Kaldi does
both): that changes neither the paths nor, for the usual topologies where a transition-id
sequence has one path, their costs, and Viterbi alignment needs only those.

A path's cost: ``-transition_scale * log p(transition | not a self-loop)`` for each forward
transition, ``-self_loop_scale * log p(self-loop)`` per self-loop and ``-self_loop_scale *
log(1 - p(self-loop))`` on leaving a state, plus L's costs (silence probabilities).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.kaldi.hmm_topology import NO_PDF
from hybridasr.kaldi.io.table import read_int_list
from hybridasr.kaldi.symbol_table import read_symbol_table
from hybridasr.kaldi.transition_model import TransitionModel
from hybridasr.kaldi.tree import ContextDependency
from hybridasr.options import option
from hybridasr.utils.words import normalized_word

__all__ = ["GraphOptions", "Lexicon", "TrainingGraphCompiler", "HmmTemplate", "accepts",
           "graph_path_cost"]


@dataclass
class GraphOptions:
    """Scales of the graph's HMM probabilities (Kaldi's alignment scripts: 1.0 and 0.1)."""
    transition_scale: float = option(1.0, "scale of the transition probabilities (relative "
                                          "to the acoustics)")
    self_loop_scale: float = option(0.1, "scale of the self-loop probabilities (relative "
                                         "to the acoustics)")
    normalize_unknown: bool = option(True, "a transcript word missing from words.txt is "
                                           "looked up again lower-cased and without leading "
                                           "and trailing punctuation (counted); a token of "
                                           "punctuation only is left out (counted); false: "
                                           "every such word is the OOV word, as Kaldi's "
                                           "sym2int.pl --map-oov")


class Lexicon:
    """What a lang dir gives training graphs: ``L.fst`` (sorted on its output labels), the
    disambiguation phones, ``words.txt`` and the OOV word's id."""

    def __init__(self, lang_dir: str, normalize_unknown: bool = False):
        import kaldifst

        self.lang_dir = lang_dir
        path = os.path.join(lang_dir, "L.fst")
        if not os.path.isfile(path):
            raise FormatError(f"missing lexicon FST {path}")
        fst = kaldifst.StdVectorFst.read(path)
        if fst is None or fst.start < 0:
            raise FormatError(f"{path}: not a readable lexicon FST")
        kaldifst.arcsort(fst, "olabel")
        self.fst = fst
        self.disambig = read_int_list(os.path.join(lang_dir, "phones", "disambig.int"),
                                   missing_ok=True)
        self.word2id = {w: i for i, w in read_symbol_table(
            os.path.join(lang_dir, "words.txt")).items()}
        oov = read_int_list(os.path.join(lang_dir, "oov.int"), missing_ok=True)
        self.oov_id: Optional[int] = oov[0] if oov else None
        self.normalize_unknown = normalize_unknown
        self.normalized = 0  # words found after normalising (counts over all calls)
        self.dropped = 0     # punctuation-only tokens left out

    def word_ids(self, words: Sequence[str], utt: str = "") -> Tuple[List[int], int]:
        """Word ids of a transcript, words missing from words.txt as ``oov.int`` (with
        ``normalize_unknown``: first looked up normalised, see ``GraphOptions``); returns
        (ids, number of OOVs). Without ``oov.int`` an unknown word is an error."""
        ids, n_oov = [], 0
        for w in words:
            i = self.word2id.get(w)
            if i is None and self.normalize_unknown:
                norm = normalized_word(w, self.word2id)
                if norm == "":
                    self.dropped += 1
                    continue
                if norm is not None:
                    i = self.word2id[norm]
                    self.normalized += 1
            if i is None:
                if self.oov_id is None:
                    raise FormatError(f"utterance {utt}: word {w!r} is not in "
                                      f"{self.lang_dir}/words.txt and there is no oov.int")
                i, n_oov = self.oov_id, n_oov + 1
            ids.append(i)
        return ids, n_oov


class HmmTemplate:
    """The reordered HMM of one (phone, pdfs): one node per non-self-loop transition, entered
    by emitting its transition-id, then self-loops of the state it left.

    ``tids[n]``, ``in_cost[n]`` (cost of taking that transition), ``loop_tid[n]`` (0: none),
    ``loop_cost[n]``, ``out_cost[n]`` (leaving the node); ``entry``: nodes out of HMM state 0;
    ``edges``: (from node, to node); ``exits``: nodes whose transition reaches the final state.
    """

    def __init__(self, tm: TransitionModel, phone: int, pdfs: Sequence[int], opts: GraphOptions):
        entry = tm.topology.topology_for_phone(phone)
        final = len(entry) - 1
        self.tids: List[int] = []
        self.in_cost: List[float] = []
        self.loop_tid: List[int] = []
        self.loop_cost: List[float] = []
        self.out_cost: List[float] = []
        leaving: Dict[int, List[int]] = {}
        dest: List[int] = []
        for k, st in enumerate(entry):
            if st.forward_pdf_class == NO_PDF:
                if k != final or st.transitions:
                    raise FormatError(f"phone {phone}: non-emitting HMM state {k} that is not "
                                      f"the final state: topology not supported")
                continue
            ts = tm.tuple_to_transition_state(phone, k, pdfs[st.forward_pdf_class],
                                              pdfs[st.self_loop_pdf_class])
            loop = tm.self_loop_of(ts)
            p_loop = math.exp(float(tm.log_probs[loop])) if loop else 0.0
            log_not_loop = math.log1p(-p_loop) if p_loop < 1.0 else -math.inf
            for j, (d, _) in enumerate(st.transitions):
                if d == k:
                    continue
                tid = tm.pair_to_transition_id(ts, j)
                leaving.setdefault(k, []).append(len(self.tids))
                dest.append(d)
                self.tids.append(tid)
                self.in_cost.append(-opts.transition_scale *
                                    (float(tm.log_probs[tid]) - log_not_loop))
                self.loop_tid.append(loop)
                self.loop_cost.append(-opts.self_loop_scale * float(tm.log_probs[loop])
                                      if loop else 0.0)
                self.out_cost.append(-opts.self_loop_scale * log_not_loop)
        if entry[0].forward_pdf_class == NO_PDF:
            raise FormatError(f"phone {phone}: HMM state 0 is non-emitting: not supported")
        self.entry = leaving.get(0, [])
        self.edges = [(a, b) for a, d in enumerate(dest) if d != final
                      for b in leaving.get(d, [])]
        self.exits = [a for a, d in enumerate(dest) if d == final]


class TrainingGraphCompiler:
    """Compiles word-id sequences to training graphs (kaldifst ``StdVectorFst``, input labels
    transition-ids, output labels words)."""

    def __init__(self, tm: TransitionModel, tree: ContextDependency, lexicon: Lexicon,
                 opts: GraphOptions = GraphOptions()):
        if tree.num_pdfs > tm.num_pdfs:
            raise FormatError(f"the tree {tree.name} has {tree.num_pdfs} pdfs, the model "
                              f"{tm.name} {tm.num_pdfs}: they do not belong together")
        self.tm, self.tree, self.lexicon, self.opts = tm, tree, lexicon, opts
        self._templates: Dict[Tuple[int, ...], HmmTemplate] = {}

    def template(self, window: Sequence[int]) -> HmmTemplate:
        """The HMM of a phone window (cached by window)."""
        window = tuple(window)
        t = self._templates.get(window)
        if t is None:
            phone = window[self.tree.central_position]
            if phone <= 0:
                raise FormatError(f"phone window {list(window)} has no central phone")
            entry = self.tm.topology.topology_for_phone(phone)
            n_classes = 1 + max(max(s.forward_pdf_class, s.self_loop_pdf_class) for s in entry)
            pdfs = []
            for c in range(n_classes):
                pdf = self.tree.compute(window, c)
                if pdf is None:
                    raise FormatError(f"the tree {self.tree.name} has no pdf for phone window "
                                      f"{list(window)}, pdf-class {c}: tree and lang dir do "
                                      f"not match")
                pdfs.append(pdf)
            t = self._templates[window] = HmmTemplate(self.tm, phone, pdfs,
                                                      self.opts)
        return t

    def compile(self, word_ids: Sequence[int], utt: str = "", compact: bool = False):
        """H o C o L o W for one utterance, self-loops and probabilities added.

        With ``compact``, returns ``(graph, local2tid)``: the graph's input labels are then
        1..K, standing for the transition-ids ``local2tid[1..K]`` (int32, index 0 unused), so
        that a decodable needs K columns instead of one per transition-id of the model."""
        import kaldifst

        words = kaldifst.make_linear_acceptor(list(word_ids))
        lw = kaldifst.compose(self.lexicon.fst, words)
        if lw.start < 0 or lw.num_states == 0:
            raise FormatError(f"utterance {utt}: the lexicon cannot produce its words "
                              f"(L o W is empty)")
        clw, ilabels = kaldifst.compose_context(self.lexicon.disambig, self.tree.context_width,
                                                self.tree.central_position,
                                                kaldifst.StdVectorFst(lw))
        local: Optional[Dict[int, int]] = {} if compact else None
        graph = self._expand(clw, ilabels, utt, local)
        if not compact:
            return graph
        local2tid = np.zeros(len(local) + 1, dtype=np.int32)
        for tid, i in local.items():
            local2tid[i] = tid
        return graph, local2tid

    def _expand(self, clw, ilabels: List[List[int]], utt: str,
                local: Optional[Dict[int, int]] = None):
        import kaldifst

        Arc = kaldifst.StdArc
        out = kaldifst.StdVectorFst()
        n = clw.num_states
        for _ in range(n):
            out.add_state()
        out.start = clw.start
        zero = math.inf
        for s in range(n):
            fw = clw.final(s).value
            if fw != zero:
                out.set_final(s, fw)
            it = kaldifst.ArcIterator(clw, s)
            while not it.done:
                arc = it.value
                it.next()
                info = ilabels[arc.ilabel] if arc.ilabel < len(ilabels) else None
                w = arc.weight.value
                # epsilon [], disambiguation symbols [-sym], the pseudo-epsilon [0]
                if arc.ilabel == 0 or not info or info[0] < 0 or info == [0]:
                    out.add_arc(s, Arc(0, arc.olabel, w, arc.nextstate))  # eps or disambig
                    continue
                if len(info) != self.tree.context_width:
                    raise FormatError(f"utterance {utt}: context window {info} does not fit "
                                      f"the tree's context width {self.tree.context_width}")
                t = self.template(info)
                if local is None:
                    tids, loops = t.tids, t.loop_tid
                else:
                    tids = [local.setdefault(x, len(local) + 1) for x in t.tids]
                    loops = [local.setdefault(x, len(local) + 1) if x else 0 for x in t.loop_tid]
                base = out.num_states
                for k in range(len(t.tids)):
                    node = out.add_state()
                    if loops[k]:
                        out.add_arc(node, Arc(loops[k], 0, t.loop_cost[k], node))
                for k in t.entry:
                    out.add_arc(s, Arc(tids[k], arc.olabel, w + t.in_cost[k], base + k))
                for a, b in t.edges:
                    out.add_arc(base + a, Arc(tids[b], 0, t.out_cost[a] + t.in_cost[b],
                                              base + b))
                for a in t.exits:
                    out.add_arc(base + a, Arc(0, 0, t.out_cost[a], arc.nextstate))
        return out


def accepts(graph, tids: Sequence[int]) -> bool:
    """Whether ``graph`` has a path whose non-epsilon input labels are ``tids`` (a check for
    tests and debugging: compose with a linear acceptor)."""
    import kaldifst

    a = kaldifst.make_linear_acceptor([int(t) for t in tids])
    g = kaldifst.StdVectorFst(graph)
    kaldifst.arcsort(g, "ilabel")
    c = kaldifst.compose(a, g)
    return c.num_states > 0 and c.start >= 0


def graph_path_cost(graph, tids: Sequence[int]) -> float:
    """Cost of the best path of ``graph`` with input ``tids`` (inf if none)."""
    import kaldifst

    a = kaldifst.make_linear_acceptor([int(t) for t in tids])
    g = kaldifst.StdVectorFst(graph)
    kaldifst.arcsort(g, "ilabel")
    c = kaldifst.compose(a, g)
    if c.num_states == 0 or c.start < 0:
        return math.inf
    best = kaldifst.shortest_path(c)
    ok, _, _, weight = kaldifst.get_linear_symbol_sequence(best)
    return float(weight.value) if ok else math.inf
