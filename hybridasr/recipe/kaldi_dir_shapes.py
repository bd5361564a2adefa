"""Kaldi dirs of other shapes, built from real ones: a speaker subset, audio resampled, the
real alignments re-split into ``ali.1..N.gz`` by speaker (text or binary), the real lang dir,
graph and GMM (``final.mdl`` a real **symlink** to its numbered model). The tests and the
experiment suites try the recipe on the shapes real Kaldi dirs come in with these.

Everything is made from the real files: audio (linked, or resampled and written as 16-bit
wav), data-dir tables filtered to the chosen speakers, the real lang dir and graph (linked),
the real GMM model under its Kaldi name (``40.mdl``) with ``final.mdl`` a symlink to it, and
the real alignments re-split as Kaldi's align scripts write them. Nothing here depends on how
the source dir was copied: a flattened ``final.mdl`` (a file holding ``40.mdl``) is resolved to
the model it names.
"""
from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from hybridasr.align.alignments import iter_alignment_dir
from hybridasr.kaldi.io.intvec import encode_int_vector


def real_model(exp_dir: Path) -> Path:
    """``exp_dir``'s numbered model that ``final.mdl`` names (a symlink, or a flattened one)."""
    final = exp_dir / "final.mdl"
    if final.is_symlink():
        return exp_dir / os.readlink(final)
    if final.stat().st_size < 64:
        return exp_dir / final.read_text().strip()
    return final


def read_kv(path: Path) -> Dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            k, _, v = line.partition(" ")
            out[k] = v.strip()
    return out


def write_kv(path: Path, rows: Dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for k in sorted(rows, key=lambda s: s.encode()):
            f.write(f"{k} {rows[k]}\n")


def write_wav_copy(src: Path, dst: Path, rate: Optional[int] = None,
                   stereo: bool = False) -> None:
    """``src`` as 16-bit wav, resampled to ``rate`` and/or made stereo (the speech in
    channel 0, a quieter reversed copy in channel 1: a wrong channel would show)."""
    import soundfile
    import torch
    import torchaudio.functional as AF

    x, sr = soundfile.read(str(src), dtype="float32", always_2d=True)
    if rate and rate != sr:
        x = AF.resample(torch.from_numpy(x.T.copy()), sr, rate).numpy().T
        sr = rate
    if stereo:
        x = np.concatenate([x[:, :1], x[::-1, :1] * 0.5], axis=1)
    dst.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(dst), np.clip(x, -1, 1), sr, subtype="PCM_16")


def make_data_dir(src_kaldi: Path, src_data: str, dst_kaldi: Path, dst_data: str,
                  utts: Sequence[str], spk_of: Optional[Callable[[str, str], str]] = None,
                  rate: Optional[int] = None, stereo: bool = False) -> None:
    """``dst_kaldi/dst_data``: the chosen utterances of ``src_kaldi/src_data``; speakers
    renamed by ``spk_of(utt, spk)``; audio resampled to ``rate`` (or made stereo) when asked,
    else the recipe-relative wav paths point at a link to the source audio."""
    src = src_kaldi / src_data
    keep = set(utts)
    wav = {k: v for k, v in read_kv(src / "wav.scp").items() if k in keep}
    text = {k: v for k, v in read_kv(src / "text").items() if k in keep}
    utt2spk = {k: v for k, v in read_kv(src / "utt2spk").items() if k in keep}
    if spk_of:
        utt2spk = {u: spk_of(u, s) for u, s in utt2spk.items()}
    if rate or stereo:
        for u, path in list(wav.items()):
            out = dst_kaldi / "audio" / dst_data / f"{u}.wav"
            write_wav_copy(src_kaldi / path, out, rate, stereo)
            wav[u] = str(out.relative_to(dst_kaldi))
    else:
        for top in {p.split("/")[0] for p in wav.values()}:
            link = dst_kaldi / top
            if not link.exists():
                link.symlink_to(src_kaldi / top)
    d = dst_kaldi / dst_data
    write_kv(d / "wav.scp", wav)
    write_kv(d / "text", text)
    write_kv(d / "utt2spk", utt2spk)
    spk2utt: Dict[str, List[str]] = {}
    for u in sorted(utt2spk, key=lambda s: s.encode()):
        spk2utt.setdefault(utt2spk[u], []).append(u)
    write_kv(d / "spk2utt", {s: " ".join(us) for s, us in spk2utt.items()})


def make_ali_dir(src_ali: Path, dst_ali: Path, utt2spk: Dict[str, str], num_jobs: int = 1,
                 binary: bool = False, model_name: str = "40.mdl",
                 extra_utts: int = 0) -> None:
    """An alignment dir: ``<model_name>`` (the real model), ``final.mdl`` a symlink to it,
    tree, phones.txt, and the alignments of ``utt2spk``'s utterances (plus ``extra_utts``
    others, as an ali dir made on a larger set has) in ``ali.1..num_jobs.gz``, split by speaker
    as Kaldi's align scripts split, text or binary."""
    dst_ali.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(real_model(src_ali), dst_ali / model_name)
    (dst_ali / "final.mdl").symlink_to(model_name)
    for name in ("tree", "phones.txt", "cmvn_opts"):
        if (src_ali / name).exists():
            shutil.copyfile(src_ali / name, dst_ali / name)
    alis = {utt: ali for _, utt, ali in iter_alignment_dir(str(src_ali))}
    chosen = [u for u in sorted(alis) if u in utt2spk]
    others = [u for u in sorted(alis) if u not in utt2spk][:extra_utts]
    speakers = sorted({utt2spk.get(u, u) for u in chosen + others})
    job_of = {s: i * num_jobs // len(speakers) for i, s in enumerate(speakers)}
    jobs: List[List[str]] = [[] for _ in range(num_jobs)]
    for u in chosen + others:
        jobs[job_of[utt2spk.get(u, u)]].append(u)
    for n, us in enumerate(jobs, start=1):
        with gzip.open(dst_ali / f"ali.{n}.gz", "wb") as f:
            for u in sorted(us):
                f.write(u.encode() + b" " + encode_int_vector(alis[u], text=not binary))
    (dst_ali / "num_jobs").write_text(f"{num_jobs}\n")


def _link_lang_and_graph(src: Path, dst: Path, gmm_dir: str) -> None:
    """``data/lang`` and the GMM system's ``graph/`` and ``decode/`` (read only: links)."""
    (dst / "data" / "lang").symlink_to(src / "data" / "lang")
    (dst / gmm_dir).mkdir(parents=True)
    for name in ("graph", "decode"):
        (dst / gmm_dir / name).symlink_to(src / gmm_dir / name)


def digits_dir(shared_digits: Path, dst: Path, train_spk: Sequence[str],
               test_spk: Sequence[str], person_speakers: bool = False,
               rate: Optional[int] = None, stereo: bool = False, ali_jobs: int = 1,
               ali_binary: bool = False, extra_ali_utts: int = 0,
               test_from: str = "test") -> Path:
    """A Kaldi s5 dir cut from kaldi_digits: the named train/test speakers (sessions like
    ``jackson_0``; with ``person_speakers`` the speaker becomes the person, ``jackson``); the
    test speakers are taken from kaldi_digits' ``data/<test_from>`` (``train``: other sessions
    of a training speaker)."""
    dst.mkdir(parents=True)
    spk_of = (lambda u, s: s.split("_")[0]) if person_speakers else None
    for part, src, spks in (("train", "train", train_spk), ("test", test_from, test_spk)):
        u2s = read_kv(shared_digits / "data" / src / "utt2spk")
        make_data_dir(shared_digits, f"data/{src}", dst, f"data/{part}",
                      [u for u, s in u2s.items() if s in spks], spk_of, rate, stereo)
    (dst / "conf").mkdir()
    conf = (shared_digits / "conf" / "mfcc.conf").read_text()
    if rate:
        conf = conf.replace("--sample_frequency=8000", f"--sample_frequency={rate}")
    (dst / "conf" / "mfcc.conf").write_text(conf)
    _link_lang_and_graph(shared_digits, dst, "exp/mono")
    make_ali_dir(shared_digits / "exp" / "mono_ali", dst / "exp" / "mono_ali",
                 read_kv(dst / "data" / "train" / "utt2spk"), ali_jobs, ali_binary,
                 extra_utts=extra_ali_utts)
    return dst


def polish_dir(shared_polish: Path, dst: Path, train_utts: Sequence[str],
               ali_jobs: int = 1, ali_binary: bool = True) -> Path:
    """A Kaldi s5 dir cut from kaldi_polish: the given training utterances, its real test set
    (10 utterances of one speaker), lang, tri1 graph/decode and the tri1 alignments."""
    dst.mkdir(parents=True)
    make_data_dir(shared_polish, "data/train", dst, "data/train", train_utts)
    test = read_kv(shared_polish / "data" / "test" / "utt2spk")
    make_data_dir(shared_polish, "data/test", dst, "data/test", list(test))
    (dst / "conf").mkdir()
    shutil.copyfile(shared_polish / "conf" / "mfcc.conf", dst / "conf" / "mfcc.conf")
    _link_lang_and_graph(shared_polish, dst, "exp/tri1")
    make_ali_dir(shared_polish / "exp" / "tri1", dst / "exp" / "tri1_ali",
                 read_kv(dst / "data" / "train" / "utt2spk"), ali_jobs, ali_binary,
                 model_name="35.mdl", extra_utts=3)
    return dst


def utt_durations(shared_kaldi: Path, data: str) -> Dict[str, float]:
    return {k: float(v) for k, v in read_kv(shared_kaldi / data / "utt2dur").items()}
