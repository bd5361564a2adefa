"""Kaldi's ``HmmTopology`` (``hmm/hmm-topology.h``): the HMM of each phone.

Each topology entry is a list of states; a state has a forward pdf-class, a self-loop pdf-class
(equal to the forward one for ordinary HMMs; both -1 for the final, non-emitting state) and its
transitions ``(destination state, probability)`` in file order. The order matters: it defines
the transition indices and so Kaldi's transition-ids.

Read layouts (as Kaldi's ``HmmTopology::Read``): binary (phones vector, phone2idx vector,
optional -1 marking the extended forward/self-loop format, then the entries) and text
(``<TopologyEntry> <ForPhones> ... </ForPhones> <State> ...``, as in ``data/lang/topo``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Tuple

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.io_funcs import KaldiObjectReader, KaldiObjectWriter

NO_PDF = -1


@dataclass
class HmmState:
    forward_pdf_class: int = NO_PDF
    self_loop_pdf_class: int = NO_PDF
    transitions: List[Tuple[int, float]] = field(default_factory=list)


class HmmTopology:
    def __init__(self, phones: List[int], phone2idx: List[int], entries: List[List[HmmState]]):
        self.phones = list(phones)
        self.phone2idx = list(phone2idx)
        self.entries = entries

    def topology_for_phone(self, phone: int) -> List[HmmState]:
        if phone < 0 or phone >= len(self.phone2idx) or self.phone2idx[phone] == -1:
            raise FormatError(f"phone {phone} is not covered by the HMM topology")
        return self.entries[self.phone2idx[phone]]

    def is_hmm(self) -> bool:
        """True when every state's forward and self-loop pdf-classes are equal."""
        return all(s.forward_pdf_class == s.self_loop_pdf_class
                   for entry in self.entries for s in entry)

    def __eq__(self, other) -> bool:
        return (isinstance(other, HmmTopology) and self.phones == other.phones
                and self.phone2idx == other.phone2idx and self.entries == other.entries)

    # ---------------------------------------------------------------- reading
    @classmethod
    def read(cls, r: KaldiObjectReader) -> "HmmTopology":
        r.expect_token("<Topology>", "the HMM topology")
        topo = cls._read_text(r) if not r.binary else cls._read_binary(r)
        topo.check(r.name)
        return topo

    @classmethod
    def _read_binary(cls, r: KaldiObjectReader) -> "HmmTopology":
        phones = r.read_int32_vector("the topology's phone list")
        phone2idx = r.read_int32_vector("the topology's phone2idx")
        n = r.read_int32("the number of topology entries")
        is_hmm = True
        if n == -1:  # the extended format with separate self-loop pdf-classes
            is_hmm = False
            n = r.read_int32("the number of topology entries")
        if n < 0 or n > 100000:
            raise FormatError(f"{r.name}: bad number of topology entries {n}")
        entries = []
        for _ in range(n):
            num_states = r.read_int32("the number of states of a topology entry")
            if num_states < 0 or num_states > 10000:
                raise FormatError(f"{r.name}: bad number of HMM states {num_states}")
            entry = []
            for _ in range(num_states):
                fwd = r.read_int32("a forward pdf-class")
                loop = fwd if is_hmm else r.read_int32("a self-loop pdf-class")
                num_trans = r.read_int32("the number of transitions of an HMM state")
                if num_trans < 0 or num_trans > 10000:
                    raise FormatError(f"{r.name}: bad number of transitions {num_trans}")
                trans = [(r.read_int32("a transition's destination"),
                          r.read_float("a transition probability")) for _ in range(num_trans)]
                entry.append(HmmState(fwd, loop, trans))
            entries.append(entry)
        r.expect_token("</Topology>", "the HMM topology")
        return cls(phones, phone2idx, entries)

    @classmethod
    def _read_text(cls, r: KaldiObjectReader) -> "HmmTopology":
        phones: List[int] = []
        phone2idx: List[int] = []
        entries: List[List[HmmState]] = []
        while True:
            tok = r.read_token("<TopologyEntry> or </Topology>")
            if tok == "</Topology>":
                break
            if tok != "<TopologyEntry>":
                raise FormatError(f"{r.name}: reading the HMM topology, expected "
                                  f"<TopologyEntry> or </Topology>, got {tok[:40]!r}")
            r.expect_token("<ForPhones>", "a topology entry")
            entry_phones = []
            while True:
                tok = r.read_token("the phones of a topology entry")
                if tok == "</ForPhones>":
                    break
                try:
                    entry_phones.append(int(tok))
                except ValueError:
                    raise FormatError(f"{r.name}: expected a phone id in <ForPhones>, "
                                      f"got {tok[:40]!r}") from None
            entry: List[HmmState] = []
            tok = r.read_token("<State> or </TopologyEntry>")
            while tok != "</TopologyEntry>":
                if tok != "<State>":
                    raise FormatError(f"{r.name}: expected <State> or </TopologyEntry>, "
                                      f"got {tok[:40]!r}")
                state_id = r.read_int32("a state id")
                if state_id != len(entry):
                    raise FormatError(f"{r.name}: topology states must be numbered in order "
                                      f"from 0: expected {len(entry)}, got {state_id}")
                tok = r.read_token("the contents of a <State>")
                state = HmmState()
                if tok == "<PdfClass>":
                    state.forward_pdf_class = state.self_loop_pdf_class = r.read_int32(
                        "a pdf-class")
                    tok = r.read_token("the contents of a <State>")
                elif tok == "<ForwardPdfClass>":
                    state.forward_pdf_class = r.read_int32("a forward pdf-class")
                    r.expect_token("<SelfLoopPdfClass>", "a <State>")
                    state.self_loop_pdf_class = r.read_int32("a self-loop pdf-class")
                    tok = r.read_token("the contents of a <State>")
                while tok == "<Transition>":
                    state.transitions.append((r.read_int32("a transition's destination"),
                                              r.read_float("a transition probability")))
                    tok = r.read_token("the contents of a <State>")
                if tok != "</State>":
                    raise FormatError(f"{r.name}: expected </State>, got {tok[:40]!r}")
                entry.append(state)
                tok = r.read_token("<State> or </TopologyEntry>")
            index = len(entries)
            entries.append(entry)
            for p in entry_phones:
                if p <= 0:
                    raise FormatError(f"{r.name}: bad phone id {p} in the topology")
                if len(phone2idx) <= p:
                    phone2idx.extend([-1] * (p + 1 - len(phone2idx)))
                if phone2idx[p] != -1:
                    raise FormatError(f"{r.name}: phone {p} is in more than one topology entry")
                phone2idx[p] = index
                phones.append(p)
        return cls(sorted(phones), phone2idx, entries)

    def check(self, name: str) -> None:
        """The structural checks of Kaldi's ``HmmTopology::Check`` that the readers rely on."""
        if not self.entries or not self.phones or not self.phone2idx:
            raise FormatError(f"{name}: empty HMM topology")
        for p in self.phones:
            if p < 0 or p >= len(self.phone2idx) or not 0 <= self.phone2idx[p] < len(self.entries):
                raise FormatError(f"{name}: topology phone {p} has no valid entry")
        for i, entry in enumerate(self.entries):
            if len(entry) < 2:
                raise FormatError(f"{name}: topology entry {i} has fewer than 2 states")
            if entry[-1].transitions or entry[-1].forward_pdf_class != NO_PDF:
                raise FormatError(f"{name}: topology entry {i}: the last state must be final "
                                  f"(non-emitting, no transitions)")
            for j, s in enumerate(entry):
                for dst, _ in s.transitions:
                    if not 0 <= dst < len(entry):
                        raise FormatError(f"{name}: topology entry {i} state {j}: "
                                          f"transition to invalid state {dst}")

    # ---------------------------------------------------------------- writing
    def write(self, w: KaldiObjectWriter, extended: bool = None) -> None:
        """Writes as Kaldi's ``HmmTopology::Write``; ``extended`` forces the forward/self-loop
        layout (default: when the topology is not a plain HMM, as Kaldi decides)."""
        if extended is None:
            extended = not self.is_hmm()
        w.token("<Topology>")
        w.raw_text("\n")
        if w.binary:
            w.int32_vector(self.phones)
            w.int32_vector(self.phone2idx)
            if extended:
                w.int32(-1)
            w.int32(len(self.entries))
            for entry in self.entries:
                w.int32(len(entry))
                for s in entry:
                    w.int32(s.forward_pdf_class)
                    if extended:
                        w.int32(s.self_loop_pdf_class)
                    w.int32(len(s.transitions))
                    for dst, prob in s.transitions:
                        w.int32(dst)
                        w.float(prob)
        else:
            for i, entry in enumerate(self.entries):
                w.token("<TopologyEntry>")
                w.raw_text("\n")
                w.token("<ForPhones>")
                w.raw_text("\n" + "".join(f"{p} " for p, idx in enumerate(self.phone2idx)
                                          if idx == i) + "\n")
                w.token("</ForPhones>")
                w.raw_text("\n")
                for j, s in enumerate(entry):
                    w.token("<State>")
                    w.int32(j)
                    if s.forward_pdf_class != NO_PDF:
                        if extended:
                            w.token("<ForwardPdfClass>")
                            w.int32(s.forward_pdf_class)
                            w.token("<SelfLoopPdfClass>")
                            w.int32(s.self_loop_pdf_class)
                        else:
                            w.token("<PdfClass>")
                            w.int32(s.forward_pdf_class)
                    for dst, prob in s.transitions:
                        w.token("<Transition>")
                        w.int32(dst)
                        w.float(prob)
                    w.token("</State>")
                    w.raw_text("\n")
                w.token("</TopologyEntry>")
                w.raw_text("\n")
        w.token("</Topology>")
        w.raw_text("\n")
