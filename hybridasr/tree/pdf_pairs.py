"""The (forward pdf, self-loop pdf) pairs a tree gives one HMM state of a phone, over every
context, as Kaldi's ``ContextDependency::GetPdfInfo`` with pdf-class pairs (used by
``TransitionModel::ComputeTuplesNotHmm`` for topologies whose states have separate forward
and self-loop pdf-classes, e.g. the chain topology of ``gen_topo.py``).

The two pdf-classes are looked up together over the same context window: the event maps of
both are walked jointly, keeping for each context position the set of values still possible
(a ``SE`` question splits the set, a ``TE`` table enumerates it), so only pairs that some
window actually gives are returned."""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Sequence, Set, Tuple

from hybridasr.kaldi.tree import PDF_CLASS_KEY, ContextDependency, Node

__all__ = ["pdf_pairs_for"]


def pdf_pairs_for(tree: ContextDependency, phone: int, forward_pdf_class: int,
                  self_loop_pdf_class: int, context_values: Sequence[int]
                  ) -> List[Tuple[int, int]]:
    """Sorted (forward pdf, self-loop pdf) pairs of ``phone`` (the window's central phone);
    ``context_values`` are the values the other window positions may take (the topology's
    phones and 0, the utterance edge)."""
    universe = frozenset(int(v) for v in context_values) | {0}
    found: Set[Tuple[int, int]] = set()
    fixed = {tree.central_position: int(phone)}
    free: Dict[int, FrozenSet[int]] = {k: universe for k in range(tree.context_width)
                                       if k != tree.central_position}
    pcs = (int(forward_pdf_class), int(self_loop_pdf_class))
    stack = [(tree.to_pdf, tree.to_pdf, free)]
    while stack:
        a, b, allowed = stack.pop()
        if a is None or b is None:
            continue
        if a[0] == "CE" and b[0] == "CE":
            found.add((a[1], b[1]))
            continue
        which = 0 if a[0] != "CE" else 1
        node = (a, b)[which]
        key = node[1]
        if key == PDF_CLASS_KEY or key in fixed:
            value = pcs[which] if key == PDF_CLASS_KEY else fixed[key]
            nxt = _child(node, value)
            stack.append((nxt, b, allowed) if which == 0 else (a, nxt, allowed))
            continue
        values = allowed.get(key, frozenset())
        if node[0] == "TE":
            groups = [(frozenset([v]), node[2][v]) for v in sorted(values)
                      if 0 <= v < len(node[2])]
        else:
            groups = [(values & node[2], node[3]), (values - node[2], node[4])]
        for vals, child in groups:
            if not vals:
                continue
            sub = dict(allowed)
            sub[key] = vals
            stack.append((child, b, sub) if which == 0 else (a, child, sub))
    return sorted(found)


def _child(node: Node, value: int) -> Node:
    if node[0] == "TE":
        return node[2][value] if 0 <= value < len(node[2]) else None
    return node[3] if value in node[2] else node[4]
