"""The recipe's defaults chosen from the training data's size.

``./run.sh`` leaves eight choices to this rule unless they are given: ``--feat-type``,
``--speed-perturb``, ``--model-config`` (network kind, size and dropout) with its
``--batching-config``, ``--flat-model-config`` (the flat start's networks, ``--ali none``),
``--schedule-config`` (learning rate and epochs), ``--chain-model-config`` (the TDNN-F of
``--chain true``, also ``local/chain/run_tdnn.sh --model-config auto``) and ``--gmm-weight``
(decoding with the alignment GMM's log-likelihoods added, ``steps/nnet/decode.sh --gmm-dir``). The rule reads ``data/train`` after stage 0
(hours of audio, utterances, speakers, and the cv set stage 2 will hold out: the split of
``utils/subset_data_dir_tr_cv.sh --train-all-if-words-lost``, planned here without writing
it, with its utterances, words, frames and held-out speakers) and picks, with the reason for
each pick. A cv set *judges an epoch* when training keeps its words and it has at least
``MIN_CV_UTTERANCES`` utterances and ``MIN_CV_WORDS`` words; one smaller (the 1-2 held-out
utterances of a tutorial-sized dir) counts as none, and stage 2 then trains on every utterance
(``--train-all``: the recipe does so with ``conf/schedule_all_data.conf``).

========================  ======================================  ==========================
choice                    rule                                    measured on
========================  ======================================  ==========================
feat_type                 fbank from ``FBANK_MIN_HOURS`` of       kaldi_polish (0.88 h):
                          audio, else mfcc                        fbank -2.1% of test+cv
                                                                  errors; 20 digit utterances:
                                                                  fbank rejects every epoch
speed_perturb             true where a cv set judges an epoch,    polish -3.3%; 2 speakers / 20
                          false where every utterance is          utts: 1.67% vs 3.33%; 1 speaker
                          trained on                              / 10 utts (no cv): 17.8% vs 4.4%
model_config              ``MODEL_TIERS``: 2x128 BLSTM below      polish: 2x256 -2.4% with fbank
                          0.5 h, 2x256 below 20 h, 3x512 above    + speed copies (both seeds), for
                                                                  2.5x the training time; 3x512:
                                                                  nnet1 / RETURNN convention,
                                                                  not measured here
                          below 0.5 h with no cv set to judge     kaldi_tiny_1spk: 32/180 errors
                          an epoch, on a GMM's alignment:         over 6 seeds against 48/180;
                          ``FRAME_MODEL``, 2x512 ReLU MLP on +-5  kaldi_tiny_2spk: 17/360
                          frames (the flat start's alignment      against 16/360 (on its tri1:
                          keeps the BLSTM)                        18/360 against 14/360); yesno
                                                                  (flat start): 88/720 against
                                                                  30/720
batching_config           frame shuffling for the MLP, whole
                          utterances (``conf/batching.conf``)
                          for a BLSTM
flat_model_config         the BLSTM of ``MODEL_TIERS`` (full-sum  docs/flatstart.md
                          training needs whole utterances)
chain_model_config        ``CHAIN_MODEL_TIERS``: Kaldi's 1k        mini_librispeech's size;
                          TDNN-F from 5 h, the small one below    kaldi_digits: the 1k one
                                                                  takes hours an epoch on a
                                                                  core
schedule_config           newbob on the cv loss where a cv set    kaldi_tiny_2spk / _1spk (cv
                          judges an epoch (``MIN_CV_UTTERANCES``  sets of 2 / 1 utterances):
                          utterances, ``MIN_CV_WORDS`` words),    newbob kept epoch 1; all
                          else 4 fixed epochs on every            data, 4 epochs: 3.33/5.00/
                          utterance (``conf/schedule_all_data``   3.33% and 23.33/36.67/20.00%
                          ``.conf``)                              over 3 seeds; kaldi_digits
                                                                  (cv 10 utts, 10 words) and
                                                                  polish (54, 734) keep newbob
gmm_weight                ``GMM_WEIGHT`` (the GMM of ``--ali``    test errors over 3 seeds,
                          and the network, 0.5 each) below        both / network / GMM:
                          ``GMM_FUSION_MAX_HOURS`` on a GMM's     kaldi_hindi_sat (SAT GMM)
                          alignment, else 0 (the network alone)   20 / 36 / 33 of 180
                          where no cv set judges an epoch:        over 9 seeds, 0.67 / 0.5 /
                          ``GMM_WEIGHT_NO_CV`` (the GMM 0.67)     network / GMM:
                                                                  kaldi_tiny_2spk 18 / 19 / 24
                                                                  / 18 of 540; kaldi_tiny_1spk
                                                                  43 / 43 / 51 / 63 of 270
                                                                  (docs/gmm_fusion_tiny.md)
========================  ======================================  ==========================

The figures are in ``docs/accuracy.md`` (``python -m experiments.accuracy``). Each choice is
written with its reason to ``data/defaults.json`` and printed; training saves the values it ran
with (``exp/<name>/train.conf``), and the recipe copies ``defaults.json`` beside them.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Dict, List, Tuple

from hybridasr.datadir.files import data_file, has, read_table, read_utt2spk
from hybridasr.datadir.tr_cv import TrCvOptions, plan_tr_cv
from hybridasr.features.utt2dur import utt2dur_entries
from hybridasr.utils.atomic import atomic_open

# fbank from this much training audio (kaldi_polish, 0.88 h, gains; 20 digit utterances fail)
FBANK_MIN_HOURS = 0.5
# (hours of training audio below which the model conf applies, the conf), smallest first
MODEL_TIERS: Tuple[Tuple[float, str], ...] = (
    (0.5, "conf/model/blstm_small.conf"),     # 2 x 128 cells a direction
    (20.0, "conf/model/blstm_medium.conf"),   # 2 x 256
    (float("inf"), "conf/model/blstm.conf"),  # 3 x 512
)
# where no cv set judges an epoch (the all-data schedule) in the smallest tier, on a GMM's
# alignment: a frame-level MLP on +-5 frames, frame-shuffled. kaldi_tiny_1spk (10 utterances of
# 3-digit strings, the test's strings reversed): 32/180 errors over 6 seeds against the
# BLSTM's 48/180, every seed at the GMM's 7/30 or better; the BLSTM learns the training's word
# order (docs/accuracy.md). Not on the flat start's alignment, which gives pauses to words:
# the MLP inserts words there (yesno)
FRAME_MODEL = "conf/model/mlp_small.conf"
FRAME_BATCHING = "conf/batching/frame_shuffle.conf"
SEQUENCE_BATCHING = "conf/batching.conf"  # whole utterances (the recipe's)
# the chain model's (local/chain/run_tdnn.sh --model-config auto): Kaldi's 1k TDNN-F from
# mini_librispeech's size (5 h) up; below it the small one (on kaldi_digits the 1k network
# trained at about 20 frames/s on one core, hours an epoch)
CHAIN_MODEL_TIERS: Tuple[Tuple[float, str], ...] = (
    (5.0, "conf/model/tdnnf_small.conf"),   # 6 TDNN-F layers of 256 (bottleneck 32)
    (float("inf"), "conf/model/tdnnf.conf"),  # Kaldi's run_tdnn_1k.sh: 12 layers of 768
)
# a cv set judges an epoch (newbob keeps or rejects it on its loss) from this many words and
# utterances: one of 1-2 utterances (3-6 words: kaldi_tiny_*) kept newbob on epoch 1 at 68% cv
# frame error; kaldi_digits' (10 one-digit utterances of a held-out speaker) and kaldi_polish's
# (54 sentences, 734 words) steer newbob as measured (docs/accuracy.md)
MIN_CV_WORDS = 10
MIN_CV_UTTERANCES = 5
SCHEDULE_WITH_CV = "conf/schedule.conf"          # newbob on the cv loss
SCHEDULE_ALL_DATA = "conf/schedule_all_data.conf"  # a fixed schedule, every utterance trained
# decoding adds the log-likelihoods of the GMM whose alignment the network learnt (the same
# tree: steps/nnet/decode.sh --gmm-dir), each at 0.5 as Kaldi's steps/decode_combine.sh, below
# this much audio: on the small real dirs the two err apart (kaldi_hindi_sat's SAT GMM 11/60,
# its network 11-13/60, the sum 6-7/60: docs/gmm_fusion.md); from polish's size (0.88 h, its
# GMM 63% against the network's 49%) not measured, so the network alone (from FBANK_MIN_HOURS,
# too, the network reads fbank, which a GMM of MFCCs cannot score)
GMM_FUSION_MAX_HOURS = 0.5
GMM_WEIGHT = "0.5"
# where no cv set judges an epoch (every utterance trained on for a fixed schedule: the frame
# MLP of FRAME_MODEL on a tutorial-sized dir), the GMM counts for two thirds: kaldi_tiny_2spk
# 18/540 test errors over 9 seeds against 19/540 at 0.5 (seed 1: 2 against 3, the GMM's own 2
# on every seed), kaldi_tiny_1spk 43/270 both (docs/gmm_fusion_tiny.md)
GMM_WEIGHT_NO_CV = "0.67"
CHOICES = ("feat_type", "speed_perturb", "model_config", "batching_config",
           "flat_model_config", "schedule_config", "chain_model_config", "gmm_weight")
# the rule's version, written to defaults.json: one chosen by an earlier rule is chosen again
RULE_VERSION = 6  # 2: the cv set's size (MIN_CV_WORDS); 3: chain_model_config; 4: the MLP;
                  # 5: gmm_weight; 6: GMM_WEIGHT_NO_CV


@dataclass
class DataSize:
    utterances: int
    speakers: int
    hours: float
    cv_set: bool   # a cv set that can judge an epoch: training keeps its words, it is not small
    split: str     # what the tr/cv split will do (its note)
    cv_utterances: int = 0  # the cv set stage 2 holds out: its size
    cv_words: int = 0
    cv_frames: int = 0      # (10 ms frames of its audio)
    cv_speakers: int = 0    # speakers held out whole (0: an utterance split)
    cv_small: bool = False  # a cv set exists whose words training has, but too small to judge


def cv_too_small(cv_words: int, cv_utterances: int) -> bool:
    """Whether a cv set of ``cv_words`` words in ``cv_utterances`` utterances is too small for
    newbob to judge an epoch on (the frames of one utterance are no independent samples: a
    few utterances' loss swings with each of them)."""
    return cv_words < MIN_CV_WORDS or cv_utterances < MIN_CV_UTTERANCES


def measure(data: str, seed: int = TrCvOptions.seed) -> DataSize:
    """The size of the training data dir ``data`` (durations as ``utils/data/get_utt2dur.sh``
    finds them) and the tr/cv split stage 2 will make of it."""
    pairs = read_utt2spk(data).entries
    if has(data, "utt2dur"):  # (the Kaldi dir's, as get_utt2dur.sh leaves it: no audio read)
        durs = {e.key: float(e.value) for e in read_table(data_file(data, "utt2dur")).entries}
    else:
        durs = dict(utt2dur_entries(data))
    split = plan_tr_cv(data, seed=seed, train_all_if_words_lost=True)
    words = ({e.key: len(e.value.split()) for e in read_table(data_file(data, "text")).entries}
             if has(data, "text") else {})
    cv = [u for u, _ in split.cv]
    cv_words = sum(words.get(u, 0) for u in cv)
    words_kept = len(split.tr) < len(pairs)
    small = words_kept and cv_too_small(cv_words, len(cv))
    return DataSize(utterances=len(pairs), speakers=len({e.value for e in pairs}),
                    hours=round(sum(durs.values()) / 3600.0, 4),
                    cv_set=words_kept and not small, split=split.note,
                    cv_utterances=len(cv), cv_words=cv_words,
                    cv_frames=int(round(100 * sum(durs.get(u, 0.0) for u in cv))),
                    cv_speakers=len({s for _, s in split.cv}) if split.by == "speaker" else 0,
                    cv_small=small)


def choose(size: DataSize, kaldi_feats: bool = False,
           flat_start: bool = False) -> Dict[str, Dict[str, str]]:
    """{choice: {"value": ..., "why": ...}} for each of ``CHOICES``; ``kaldi_feats``: the
    features are the Kaldi dir's own (``--use-kaldi-feats true``), not made from the audio;
    ``flat_start``: the targets will be the flat start's alignment (``--ali none``), not a
    GMM's."""
    h = f"{size.hours:.3g} h of training audio"
    out: Dict[str, Dict[str, str]] = {}
    fbank = size.hours >= FBANK_MIN_HOURS
    out["feat_type"] = {
        "value": "fbank" if fbank else "mfcc",
        "why": f"{h}, {'at least' if fbank else 'below'} {FBANK_MIN_HOURS:g} h: "
               + ("40 log mel filterbanks (kaldi_polish: -2.1% of the errors)" if fbank else
                  "MFCCs (fbank rejected every epoch on 20 digit utterances)")}
    if kaldi_feats:
        out["feat_type"]["why"] = "unused: the features are the Kaldi dir's (--use-kaldi-feats)"
    if size.cv_small:
        no_cv = (f"the cv set ({size.cv_utterances} utterance(s), {size.cv_words} words, "
                 f"{size.cv_frames} frames) is below {MIN_CV_WORDS} words or "
                 f"{MIN_CV_UTTERANCES} utterances, too small to judge an epoch (every "
                 f"utterance is trained on): ")
    else:
        no_cv = "no cv set whose words training has (every utterance is trained on): "
    if kaldi_feats:
        out["speed_perturb"] = {"value": "false", "why": "the features are the Kaldi dir's "
                                "(--use-kaldi-feats true): none are made of perturbed audio"}
    elif size.cv_set:
        out["speed_perturb"] = {"value": "true", "why": "a cv set exists: training on the "
                                "speeds 0.9, 1.0 and 1.1 (kaldi_polish: -3.3% of the errors)"}
    else:
        out["speed_perturb"] = {"value": "false", "why": no_cv + "speed copies made 1 speaker / "
                                "10 utterances worse (17.8% against 4.4%)"}
    if size.cv_set:
        out["schedule_config"] = {"value": SCHEDULE_WITH_CV,
                                  "why": f"a cv set of {size.cv_utterances} utterances, "
                                         f"{size.cv_words} words (at least "
                                         f"{MIN_CV_UTTERANCES} and {MIN_CV_WORDS}): newbob on "
                                         f"its loss"}
    else:
        out["schedule_config"] = {"value": SCHEDULE_ALL_DATA,
                                  "why": no_cv + "a fixed schedule, no cv loss to steer by"}
    bound, conf = next((b, c) for b, c in MODEL_TIERS if size.hours < b)
    if not size.cv_set and bound == MODEL_TIERS[0][0] and not flat_start:
        out["model_config"] = {"value": FRAME_MODEL, "why": f"{h}, below {bound:g} h, and "
                               + no_cv + "a frame-level MLP on +-5 frames, which cannot learn "
                               "the training's word strings (kaldi_tiny_1spk: 32/180 errors "
                               "over 6 seeds against the BLSTM's 48/180)"}
        out["batching_config"] = {"value": FRAME_BATCHING,
                                  "why": "the MLP's: frames shuffled across utterances"}
    else:
        why = f"{h}, below {bound:g} h"
        if not size.cv_set and bound == MODEL_TIERS[0][0]:  # (the flat start's targets)
            why += (", no cv set to judge an epoch, but the flat start's alignment (--ali "
                    "none): a BLSTM (yesno: the frame MLP inserted words in the pauses that "
                    "alignment gives to words, 88 of 720 against 30 over 3 seeds)")
        out["model_config"] = {"value": conf, "why": why}
        out["batching_config"] = {"value": SEQUENCE_BATCHING,
                                  "why": "a recurrent network's: whole utterances"}
    out["flat_model_config"] = {"value": conf, "why": f"{h}, below {bound:g} h (the networks of "
                                "the flat start (--ali none): full-sum training on whole "
                                "utterances, a BLSTM)"}
    bound, conf = next((b, c) for b, c in CHAIN_MODEL_TIERS if size.hours < b)
    out["chain_model_config"] = {"value": conf, "why": f"{h}, below {bound:g} h (the chain "
                                                       f"model of local/chain/run_tdnn.sh)"}
    if flat_start:
        out["gmm_weight"] = {"value": "0", "why": "no GMM of the network's tree (--ali none): "
                                                  "the network's log-likelihoods alone"}
    elif size.hours < GMM_FUSION_MAX_HOURS and size.cv_set:
        out["gmm_weight"] = {"value": GMM_WEIGHT, "why": f"{h}, below "
                             f"{GMM_FUSION_MAX_HOURS:g} h: decoding adds the log-likelihoods of "
                             f"the GMM of --ali, {GMM_WEIGHT} each (kaldi_hindi_sat: 20/180 "
                             f"test errors over 3 seeds against the network's 36/180 and the "
                             f"GMM's 33/180)"}
    elif size.hours < GMM_FUSION_MAX_HOURS:
        out["gmm_weight"] = {"value": GMM_WEIGHT_NO_CV, "why": f"{h}, below "
                             f"{GMM_FUSION_MAX_HOURS:g} h, and " + no_cv + "decoding adds the "
                             f"log-likelihoods of the GMM of --ali at {GMM_WEIGHT_NO_CV}, the "
                             f"network's at the rest (kaldi_tiny_2spk: 18/540 test errors over 9 "
                             f"seeds against 19/540 at {GMM_WEIGHT} each; kaldi_tiny_1spk "
                             f"43/270 both; the network alone 24/540 and 51/270)"}
    else:
        out["gmm_weight"] = {"value": "0", "why": f"{h}, at least {GMM_FUSION_MAX_HOURS:g} h: "
                             f"the network's log-likelihoods alone (its features are fbank "
                             f"from this size, which a GMM of MFCCs cannot score; the sum not "
                             f"measured at this size)"}
    return out


def choose_for(data: str, kaldi_feats: bool = False, seed: int = TrCvOptions.seed,
               flat_start: bool = False) -> dict:
    size = measure(data, seed)
    return {"data": data, "kaldi_feats": kaldi_feats, "flat_start": flat_start,
            "rule": RULE_VERSION, "measured": asdict(size),
            "chosen": choose(size, kaldi_feats, flat_start)}


def read_defaults(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def is_current(path: str, data: str, kaldi_feats: bool, flat_start: bool = False) -> bool:
    """``path`` was made from ``data`` as it is now (newer than its files), the same
    features and targets choices and this version of the rule."""
    if not os.path.isfile(path):
        return False
    stamp = os.path.getmtime(path)
    for name in ("utt2spk", "wav.scp", "segments", "text", "feats.scp"):
        f = os.path.join(data, name)
        if os.path.exists(f) and os.path.getmtime(f) > stamp:
            return False
    try:
        doc = read_defaults(path)
    except (OSError, ValueError):
        return False
    return (doc.get("data") == data and doc.get("kaldi_feats") == kaldi_feats
            and doc.get("flat_start", False) == flat_start and doc.get("rule") == RULE_VERSION)


def write_defaults(doc: dict, path: str) -> None:
    with atomic_open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def describe(doc: dict) -> List[str]:
    """The lines the recipe prints: what was measured, each choice and why."""
    m = doc["measured"]
    cv = "yes" if m["cv_set"] else ("too small to judge an epoch" if m.get("cv_small") else "no")
    size = (f": {m['cv_utterances']} utterance(s), {m['cv_words']} words, {m['cv_frames']} "
            f"frames" if "cv_words" in m else "")
    lines = [f"{doc['data']}: {m['utterances']} utterances of {m['speakers']} speaker(s), "
             f"{m['hours']:.3g} h; cv set: {cv}{size} ({m['split']})"]
    for name in CHOICES:
        c = doc["chosen"][name]
        lines.append(f"  --{name.replace('_', '-')} {c['value']}  ({c['why']})")
    return lines
