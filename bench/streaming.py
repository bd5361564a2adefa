#!/usr/bin/env python3
"""Streaming transcription speed on one CPU core (``transcribe.py --online``,
hybridasr.decode.online), with the offline transcription of the same recordings as the
baseline in the same run.

Per recording of ``--wav-scp`` (default: kaldi_polish's data/test, 10 recordings), with a
model dir and graph dir (default: a polish BLSTM the default recipe trained, /tmp/polc/exp/blstm,
and the tri1 graph /tmp/polish_k/exp/tri1/graph), the audio read once (not timed), then:
- ``offline``: ``Transcriber``'s features, log-likelihoods (the same ``--chunking``) and
  decoding of the whole recording (``network_s``: features and network, ``decode_s``: search,
  lattice determinization and best path; ``search_s``: the search alone, run once more:
  what is left to ``finish`` of an incremental decoder is about ``decode_s - search_s``);
  ``offline_whole``: the same on whole recordings (no chunks, what transcribe.py does without
  --chunking);
- ``online``: ``OnlineRecognizer`` fed pieces of ``--piece-seconds`` (0.1 s) one after the
  other, as fast as it takes them: ``rtf`` (compute seconds / audio seconds),
  ``last_piece_to_final_s`` (the last piece's ``accept_waveform`` and ``finish``: the compute
  between the end of the audio and the final result), ``finish_s`` (``finish_network_s``: its
  last windows of the network), ``max_piece_s`` (the
  slowest piece: the partial result's worst delay), ``ratio_to_offline`` (online compute /
  offline compute) and whether the words are the offline ones.
One JSON object per line, per recording, then a ``summary`` line (audio-weighted RTFs, the
worst ``last_piece_to_final_s``). ``incremental_decoder``: whether the lattice decoder advances
piece by piece (``LatticeDecoder.online_*``) or, without it, decodes at ``finish``; without it,
``estimate_last_piece_to_final_s_incremental`` is what an incremental decoder would leave to
the end (an estimate: the last piece, the last windows, and the offline ``decode_s -
search_s``, determinization and best path; the last frames' search not counted). The machine
is shared: only figures of the same run compare.

Usage: bench/streaming.py [--model-dir D] [--graph-dir G] [--wav-scp S] [--piece-seconds 0.1]
                          [--chunking size:step]
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before torch starts its threads

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
POLISH = REPO.parent / "shared" / "data" / "kaldi_polish"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", default="/tmp/polc/exp/blstm")
    p.add_argument("--graph-dir", default="/tmp/polish_k/exp/tri1/graph")
    p.add_argument("--wav-scp", default=str(POLISH / "data/test/wav.scp"),
                   help="relative paths are relative to the wav.scp's data dir's parent's "
                        "parent (a Kaldi s5 dir)")
    p.add_argument("--piece-seconds", type=float, default=0.1)
    p.add_argument("--chunking", default="", help="default: as transcribe.py --online")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from hybridasr.decode.forward import ChunkOptions
    from hybridasr.decode.model_dir import load_model_dir
    from hybridasr.decode.online import OnlineRecognizer, online_chunking
    from hybridasr.decode.transcribe import (Recording, TranscribeOptions, Transcriber,
                                             read_audio)
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.models import load_model

    chunking, source = online_chunking(args.chunking, args.model_dir)
    model, meta = load_model(os.path.join(args.model_dir, "final.nnet"), torch.device("cpu"))
    transform = FeatureTransform.from_dict(meta["transform"])
    md = load_model_dir(args.model_dir, norm_means=transform.norm_means)
    t = Transcriber(md, model, meta, args.graph_dir, TranscribeOptions(chunking=chunking))
    rec_online = OnlineRecognizer(t)
    base = Path(args.wav_scp).resolve().parents[2]
    recs = []
    for line in Path(args.wav_scp).read_text().splitlines():
        key, path = line.split(maxsplit=1)
        path = path if os.path.isabs(path) else str(base / path)
        recs.append(Recording(key, path, spec=path))
    print(json.dumps({"model_dir": args.model_dir, "graph_dir": args.graph_dir,
                      "chunking": chunking, "chunking_from": source,
                      "piece_seconds": args.piece_seconds, "threads": torch.get_num_threads(),
                      "incremental_decoder": rec_online.incremental,
                      "recordings": len(recs)}), flush=True)

    def offline(audio, rec, chunks):
        saved, t.chunks = t.chunks, chunks
        try:
            start = time.perf_counter()
            ll = t.loglikes(t.features(audio, rec.source))
            mid = time.perf_counter()
            ids, ctm = t.decode(rec.key, ll)
            r = t.result(rec.key, ids, ctm)
            end = time.perf_counter()
            search_s = None
            if t.lattice_decoder is not None:  # the search alone, once more
                t.lattice_decoder.search(ll, t.opts.acwt, rec.key)
                search_s = time.perf_counter() - end
            return end - start, r.words, {"network_s": round(mid - start, 4),
                                          "decode_s": round(end - mid, 4),
                                          "search_s": None if search_s is None
                                          else round(search_s, 4)}
        finally:
            t.chunks = saved

    # one recording first, untimed: imports, lazy initialisation
    warm = read_audio(recs[0])
    offline(warm, recs[0], t.chunks)
    rec_online.transcribe(recs[0], args.piece_seconds)

    # the network's last windows at finish, timed apart
    model_finish, timed = rec_online.model.finish, {}

    def finish_timed():
        start = time.perf_counter()
        out = model_finish()
        timed["network"] = time.perf_counter() - start
        return out

    rec_online.model.finish = finish_timed
    tot = {"audio": 0.0, "online": 0.0, "offline": 0.0, "whole": 0.0}
    worst_final, worst_estimate, same = 0.0, 0.0, 0
    for rec in recs:
        audio = read_audio(rec)
        seconds = len(audio.samples) / audio.rate
        off_s, off_words, parts = offline(audio, rec, t.chunks)
        whole_s, whole_words, _ = offline(audio, rec, ChunkOptions())
        step = max(1, int(round(args.piece_seconds * audio.rate)))
        rec_online.start(rec.key, rec.source)
        piece_times = []
        for i in range(0, len(audio.samples), step):
            start = time.perf_counter()
            rec_online.accept_waveform(audio.samples[i:i + step], audio.rate)
            piece_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = rec_online.finish()
        finish_s = time.perf_counter() - start
        online_s = sum(piece_times) + finish_s
        last = piece_times[-1] + finish_s
        worst_final = max(worst_final, last)
        estimate = None
        if parts["search_s"] is not None and not rec_online.incremental:
            # an incremental decoder's finish: the last windows, determinization, best path
            estimate = (piece_times[-1] + timed["network"]
                        + max(0.0, parts["decode_s"] - parts["search_s"]))
            worst_estimate = max(worst_estimate, estimate)
        same += result.words == off_words
        for k, v in (("audio", seconds), ("online", online_s), ("offline", off_s),
                     ("whole", whole_s)):
            tot[k] += v
        print(json.dumps({
            "recording": rec.key, "audio_s": round(seconds, 3), "pieces": len(piece_times),
            "online": {"rtf": round(online_s / seconds, 4),
                       "last_piece_to_final_s": round(last, 4),
                       "finish_s": round(finish_s, 4),
                       "finish_network_s": round(timed["network"], 4),
                       "estimate_last_piece_to_final_s_incremental":
                           None if estimate is None else round(estimate, 4),
                       "max_piece_s": round(max(piece_times), 4),
                       "ratio_to_offline": round(online_s / off_s, 3),
                       "same_words_as_offline": result.words == off_words,
                       "words": len(result.words)},
            "offline": {"rtf": round(off_s / seconds, 4), "seconds": round(off_s, 4),
                        **parts},
            "offline_whole": {"rtf": round(whole_s / seconds, 4),
                              "same_words_as_chunked": whole_words == off_words}}), flush=True)
    print(json.dumps({"summary": {
        "audio_s": round(tot["audio"], 2),
        "online_rtf": round(tot["online"] / tot["audio"], 4),
        "offline_rtf": round(tot["offline"] / tot["audio"], 4),
        "offline_whole_rtf": round(tot["whole"] / tot["audio"], 4),
        "online_ratio_to_offline": round(tot["online"] / tot["offline"], 3),
        "worst_last_piece_to_final_s": round(worst_final, 4),
        "worst_estimate_last_piece_to_final_s_incremental":
            None if rec_online.incremental else round(worst_estimate, 4),
        "recordings_with_offline_words": f"{same}/{len(recs)}",
        "incremental_decoder": rec_online.incremental}}), flush=True)
    t.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
