"""Frame agreement of two alignment dirs (``ali.*.gz`` + ``final.mdl`` each), at the pdf and
the phone level, per utterance and overall. Each dir's alignments are read with its own
transition model; the utterances of both are compared over the shorter length (a length
difference is counted)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from hybridasr.align.alignments import iter_alignment_dir
from hybridasr.errors import FormatError
from hybridasr.kaldi.transition_model import read_transition_model


@dataclass
class Agreement:
    utterances: int = 0
    frames: int = 0
    pdf_same: int = 0
    phone_same: int = 0
    length_differs: int = 0
    only_in_first: List[str] = field(default_factory=list)
    only_in_second: List[str] = field(default_factory=list)
    per_utterance: Dict[str, Dict] = field(default_factory=dict)

    def summary(self) -> Dict:
        f = max(self.frames, 1)
        return {"utterances": self.utterances, "frames": self.frames,
                "pdf_agreement": round(100.0 * self.pdf_same / f, 3),
                "phone_agreement": round(100.0 * self.phone_same / f, 3),
                "length_differs": self.length_differs,
                "num_only_in_first": len(self.only_in_first),
                "num_only_in_second": len(self.only_in_second),
                "only_in_first": self.only_in_first[:100],
                "only_in_second": self.only_in_second[:100]}


def _model(ali_dir: str):
    path = os.path.join(ali_dir, "final.mdl")
    if not os.path.exists(path):
        raise FormatError(f"alignment dir {ali_dir} has no final.mdl")
    return read_transition_model(path)


def compare_alignment_dirs(first: str, second: str, utterances=None) -> Agreement:
    """``utterances``: compare only these (e.g. a data dir's); default all in both."""
    tm1, tm2 = _model(first), _model(second)
    if tm1.num_pdfs != tm2.num_pdfs:
        raise FormatError(f"{first} has {tm1.num_pdfs} pdfs, {second} {tm2.num_pdfs}: "
                          f"pdf agreement needs the same tree")
    keep = None if utterances is None else set(utterances)
    a = {u: x for _, u, x in iter_alignment_dir(first) if keep is None or u in keep}
    out = Agreement()
    seen = set()
    for _, utt, y in iter_alignment_dir(second):
        if keep is not None and utt not in keep:
            continue
        seen.add(utt)
        x = a.get(utt)
        if x is None:
            out.only_in_second.append(utt)
            continue
        n = min(len(x), len(y))
        out.length_differs += len(x) != len(y)
        x1, y1 = tm1.ali_to_pdf(x[:n], utt), tm2.ali_to_pdf(y[:n], utt)
        pdf_same = int((x1 == y1).sum())
        phone_same = int((tm1.tid2phone[x[:n]] == tm2.tid2phone[y[:n]]).sum())
        out.utterances += 1
        out.frames += n
        out.pdf_same += pdf_same
        out.phone_same += phone_same
        out.per_utterance[utt] = {"frames": n, "pdf_agreement": round(100.0 * pdf_same / max(n, 1), 2),
                                  "phone_agreement": round(100.0 * phone_same / max(n, 1), 2)}
    out.only_in_first = sorted(set(a) - seen)
    out.only_in_second.sort()
    return out


def phone_agreement(tm, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of frames of two alignments (same model) on the same phone."""
    n = min(len(x), len(y))
    return float((tm.tid2phone[x[:n]] == tm.tid2phone[y[:n]]).mean()) if n else 1.0
