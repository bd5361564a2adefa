"""The synthetic LVCSR corpus of ``experiments/scale.py``: a context-dependent TransitionModel,
valid alignments, compressed features, a data dir, ``ali.1..N.gz`` (all with the toolkit's own
writers), and a phone-loop decoding graph over the model's transition-ids."""
from __future__ import annotations

import math
import os

import numpy as np

SELF_LOOP_PROB = 0.75


def make_transition_model(num_pdfs: int, num_phones: int):
    """A context-dependent TransitionModel: one topology (3 emitting states, Kaldi's
    left-to-right HMM) for phones 1..num_phones; pdf j belongs to (phone, state) j mod
    3*num_phones. Returns the model and its context variants: chains [C, 3] of
    transition-states (1-based) and the phone of each chain [C]."""
    from hybridasr.kaldi.hmm_topology import NO_PDF, HmmState, HmmTopology
    from hybridasr.kaldi.transition_model import TransitionModel

    if num_pdfs < 3 * num_phones:
        raise SystemExit(f"--pdfs must be at least 3 x --phones ({3 * num_phones})")
    entry = [HmmState(k, k, [(k, SELF_LOOP_PROB), (k + 1, 1 - SELF_LOOP_PROB)])
             for k in range(3)] + [HmmState(NO_PDF, NO_PDF, [])]
    topo = HmmTopology(list(range(1, num_phones + 1)), [-1] + [0] * num_phones, [entry])
    pair = np.arange(num_pdfs) % (3 * num_phones)
    tuples = np.stack([pair // 3 + 1, pair % 3, np.arange(num_pdfs), np.arange(num_pdfs)], 1)
    tuples = tuples[np.lexsort((tuples[:, 2], tuples[:, 1], tuples[:, 0]))]  # Kaldi's order
    log_probs = np.zeros(2 * num_pdfs + 1, np.float32)  # tids: self-loop, forward per tstate
    log_probs[1::2], log_probs[2::2] = np.log(SELF_LOOP_PROB), np.log(1 - SELF_LOOP_PROB)
    tm = TransitionModel(topo, tuples, log_probs, name="scale.mdl")
    chains, chain_phone = [], []
    for p in range(1, num_phones + 1):
        per_state = [np.flatnonzero((tuples[:, 0] == p) & (tuples[:, 1] == k)) + 1
                     for k in range(3)]
        for c in range(max(len(s) for s in per_state)):
            chains.append([s[c % len(s)] for s in per_state])
            chain_phone.append(p)
    return tm, np.array(chains, np.int64), np.array(chain_phone, np.int64)


def make_alignment(tm, chains, chain_phone, n: int, rng):
    """Transition-ids of n frames: n // 10 phones (context variants), each state >= 1 frame."""
    phones = max(1, n // 10)
    states = 3 * phones
    cuts = np.sort(rng.choice(n - 1, states - 1, replace=False) + 1)
    dur = np.diff(np.concatenate([[0], cuts, [n]]))
    cid = rng.integers(0, len(chains), phones)
    ts = chains[cid].reshape(-1)
    tids = np.repeat(tm.state2id[ts].astype(np.int64), dur)  # self-loop: first tid
    tids[np.cumsum(dur) - 1] += 1  # the last frame of a state takes its forward transition
    return tids.astype(np.int32), chain_phone[cid]


def generate(d: str, num_utts: int, a) -> dict:
    from hybridasr.kaldi.io.table import write_map
    from hybridasr.kaldi.io.table_writer import ArkScpWriter, IntVectorWriter
    from hybridasr.kaldi.transition_model import write_transition_model

    rng = np.random.default_rng(a.seed)
    data, ali = os.path.join(d, "data"), os.path.join(d, "ali")
    for sub in (data, ali, os.path.join(data, "test")):
        os.makedirs(sub, exist_ok=True)
    tm, chains, chain_phone = make_transition_model(a.pdfs, a.phones)
    write_transition_model(tm, os.path.join(ali, "final.mdl"))
    with open(os.path.join(ali, "num_jobs"), "w") as f:
        f.write(f"{a.nj}\n")
    write_map(os.path.join(ali, "phones.txt"),
              [("<eps>", 0)] + [(f"p{p}", p) for p in range(1, a.phones + 1)])
    sigma2 = math.log(1 + (a.sd / a.mean) ** 2)
    lens = np.maximum(20, np.round(rng.lognormal(math.log(a.mean) - sigma2 / 2,
                                                 math.sqrt(sigma2), num_utts))).astype(int)
    spk = [f"spk{i // a.utts_per_spk:05d}" for i in range(num_utts)]
    utts = [f"{s}-utt{i:07d}" for i, s in enumerate(spk)]
    base = rng.normal(size=(int(lens.max()), a.dim)).astype(np.float32)
    compressed = {}  # length -> bytes of the compressed matrix (what MatrixWriter writes)
    per_job = math.ceil(num_utts / a.nj)
    text = []
    with ArkScpWriter(os.path.join(data, "feats.ark"), os.path.join(data, "feats.scp"),
                      compression_method=1) as wf:
        for j in range(a.nj):
            with IntVectorWriter(f"ark:| gzip -c > {os.path.join(ali, f'ali.{j + 1}.gz')}") \
                    as wa:
                for i in range(j * per_job, min(num_utts, (j + 1) * per_job)):
                    n = int(lens[i])
                    blob = compressed.get(n)
                    if blob is None:
                        blob = compressed[n] = wf.encode(base[:n])
                    wf.write_encoded(utts[i], blob)  # one compression per length
                    tids, phones = make_alignment(tm, chains, chain_phone, n, rng)
                    wa.write(utts[i], tids)
                    text.append((utts[i], " ".join(f"p{p}" for p in phones)))
    write_map(os.path.join(data, "utt2num_frames"), zip(utts, lens.tolist()))
    write_map(os.path.join(data, "utt2spk"), zip(utts, spk))
    spk2utt = {}
    for u, s in zip(utts, spk):
        spk2utt.setdefault(s, []).append(u)
    write_map(os.path.join(data, "spk2utt"), spk2utt)
    write_map(os.path.join(data, "text"), text)
    # the test set: --decode-utts utterances spread over the corpus, pointing into the big ark
    pick = set(np.linspace(0, num_utts - 1, min(a.decode_utts, num_utts)).astype(int).tolist())
    with open(os.path.join(data, "feats.scp"), encoding="utf-8") as f:
        scp = [line for i, line in enumerate(f) if i in pick]
    with open(os.path.join(data, "test", "feats.scp"), "w", encoding="utf-8") as f:
        f.writelines(scp)
    write_map(os.path.join(data, "test", "utt2num_frames"),
              [(utts[i], int(lens[i])) for i in sorted(pick)])
    return {"frames": int(lens.sum()), "distinct_lengths": len(compressed),
            "num_pdfs": tm.num_pdfs, "num_transition_ids": tm.num_transition_ids,
            "context_variants": len(chains),
            "feats_ark_mb": round(os.path.getsize(os.path.join(data, "feats.ark")) / 2**20, 1)}


def phone_loop_graph(tm, chains, chain_phone):
    """A decoding graph over transition-ids: state 0 (start, final) -eps-> each context
    variant's chain of 3 HMM states (self-loop arcs, forward arcs), the last forward arc
    emitting the phone as the word and returning to 0."""
    import kaldifst

    f = kaldifst.StdVectorFst()
    f.add_state()
    f.start = 0
    f.set_final(0, 0.0)
    loop_cost = -math.log(SELF_LOOP_PROB)
    fwd_cost = -math.log(1 - SELF_LOOP_PROB)
    enter = math.log(len(chains))
    for c, p in zip(chains.tolist(), chain_phone.tolist()):
        s = [f.add_state() for _ in range(3)]
        f.add_arc(0, kaldifst.StdArc(0, 0, enter, s[0]))
        for k in range(3):
            first = int(tm.state2id[c[k]])
            f.add_arc(s[k], kaldifst.StdArc(first, 0, loop_cost, s[k]))
            nxt = s[k + 1] if k < 2 else 0
            f.add_arc(s[k], kaldifst.StdArc(first + 1, p if k == 2 else 0, fwd_cost, nxt))
    return f
