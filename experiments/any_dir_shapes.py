"""Reshaped copies of the real Kaldi dirs in ../shared, for ``experiments/any_dir.py``: each
carries one shape that newcomers' dirs have and the five real dirs do not (or not all).

A copy is made under a work dir and never writes into the source: every entry that is not
changed is a symlink to the real one (audio, ``exp/``, ``data/lang`` ...), and only what the
shape changes is written (a conf, data-dir tables, resampled wavs, alignments under new ids).
Nothing here depends on whether ../shared's ``final.mdl`` files are symlinks or flattened
files naming their model: they are linked (or resolved by ``real_model``) as found.

Also the dir's best Kaldi system: the best ``%WER`` among its own ``exp/*/decode*/wer_*``.
"""
from __future__ import annotations

import glob
import gzip
import os
import re
import shutil
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from experiments.kaldi_shapes import make_data_dir, read_kv, real_model, write_kv, write_wav_copy
from hybridasr.align.alignments import iter_alignment_dir
from hybridasr.kaldi.io.intvec import encode_int_vector
from hybridasr.recipe.summary import best_wer

_RATE_LINE = re.compile(r"^\s*--sample[-_]frequency\s*=")


def best_kaldi_system(kaldi_dir: Path) -> Optional[Tuple[float, str, str]]:
    """(WER, system, %WER line) of the best-scoring decode among ``exp/*/decode*`` (the
    system: the exp dir's name, ``tri3b``; with the decode dir where it is not ``decode``,
    ``tri3b/decode.si``); the first in sorted order on a tie. None where nothing is scored."""
    best = None
    for d in sorted(glob.glob(os.path.join(str(kaldi_dir), "exp", "*", "decode*"))):
        b = best_wer(d)
        if b and (best is None or b[0] < best[0]):
            system, decode = Path(d).parent.name, Path(d).name
            best = (b[0], system if decode == "decode" else f"{system}/{decode}", b[1])
    return best


def _write_spk2utt(d: Path) -> None:
    spk2utt: Dict[str, List[str]] = {}
    for u, s in sorted(read_kv(d / "utt2spk").items(), key=lambda kv: kv[0].encode()):
        spk2utt.setdefault(s, []).append(u)
    write_kv(d / "spk2utt", {s: " ".join(us) for s, us in spk2utt.items()})


def flattened_links(src: Path) -> Dict[str, str]:
    """Files under ``src/exp`` that are symlinks copied as files (``final.mdl`` holding
    ``35.mdl``, as in a flattened copy of ../shared): relative path -> the sibling it names."""
    out = {}
    for root, _, files in os.walk(src / "exp"):
        for name in files:
            p = Path(root) / name
            if p.is_symlink() or p.stat().st_size > 255:
                continue
            target = p.read_bytes().strip()
            if target and b"/" not in target and b" " not in target \
                    and target.decode(errors="replace") != name \
                    and (p.parent / target.decode(errors="replace")).is_file():
                out[str(p.relative_to(src))] = target.decode()
    return out


def linked_copy(src: Path, dst: Path, leave_out: Iterable[str] = ()) -> Path:
    """``dst``: ``src`` with every entry a symlink to the real one, except the relative paths
    in ``leave_out`` (absent: the caller writes them), whose parent dirs are real dirs; a
    symlink that ``src`` holds flattened (``flattened_links``) is a symlink again, as Kaldi
    left it, so the copy is the real dir whether or not ../shared was copied with links."""
    flat = flattened_links(src)
    leave = {Path(p) for p in leave_out} | {Path(p) for p in flat}
    parents = {q for p in leave for q in p.parents if str(q) != "."}

    def walk(rel: Path) -> None:
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(os.listdir(src / rel)):
            r = rel / name
            if r in leave:
                continue
            if r in parents:
                walk(r)
            else:
                (dst / r).symlink_to(src / r)

    walk(Path("."))
    for rel, target in flat.items():
        if Path(rel) not in {Path(p) for p in leave_out} and (dst / rel).parent.is_dir():
            (dst / rel).symlink_to(target)
    return dst


def write_conf(path: Path, text: str) -> None:
    if path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def without_rate(conf_text: str) -> str:
    """A feature conf with its ``--sample-frequency`` (or ``--sample_frequency``) line removed."""
    return "\n".join(ln for ln in conf_text.splitlines() if not _RATE_LINE.match(ln)) + "\n"


def with_rate(conf_text: str, rate: int) -> str:
    return without_rate(conf_text) + f"--sample-frequency={rate}\n"


def no_rate_copy(src: Path, dst: Path) -> Path:
    """``src`` whose ``conf/mfcc.conf`` names no sample rate (Kaldi then assumes 16 kHz: wrong
    for 8 kHz audio such as kaldi_digits')."""
    linked_copy(src, dst, ["conf/mfcc.conf"])
    write_conf(dst / "conf" / "mfcc.conf", without_rate((src / "conf/mfcc.conf").read_text()))
    return dst


def resampled_copy(src: Path, dst: Path, rate: int = 44100, stale_fbank_rate: int = 16000,
                   sets: Iterable[str] = ("data/train", "data/test")) -> Path:
    """``src`` with every wav of ``sets`` resampled to ``rate`` (under ``dst/audio/``), its
    ``conf/mfcc.conf`` saying ``rate`` (as a Kaldi user who resampled would have it) and a
    stale ``conf/fbank.conf`` at ``stale_fbank_rate``. The GMM's alignments stay valid: frames
    are 10 ms whatever the rate."""
    sets = list(sets)
    linked_copy(src, dst, sets + ["conf/mfcc.conf", "conf/fbank.conf"])
    for s in sets:
        make_data_dir(src, s, dst, s, list(read_kv(src / s / "wav.scp")), rate=rate)
    mfcc = (src / "conf/mfcc.conf").read_text()
    write_conf(dst / "conf" / "mfcc.conf", with_rate(mfcc, rate))
    write_conf(dst / "conf" / "fbank.conf",
               f"--num-mel-bins=40\n--sample-frequency={stale_fbank_rate}\n")
    return dst


def mixed_copy(src: Path, dst: Path, sets: Iterable[str] = ("data/train", "data/test"),
               rates: Tuple[int, int] = (8000, 16000)) -> Path:
    """``src`` (8 kHz mono audio) with its utterances in turn: at ``rates[0]`` mono, at
    ``rates[1]`` mono, at ``rates[0]`` stereo, at ``rates[1]`` stereo (under ``dst/audio/``);
    ``conf/mfcc.conf`` as ``src`` has it."""
    sets = list(sets)
    linked_copy(src, dst, sets)
    for s in sets:
        wav = read_kv(src / s / "wav.scp")
        out = {}
        for i, u in enumerate(sorted(wav, key=lambda k: k.encode())):
            path = dst / "audio" / s / f"{u}.wav"
            write_wav_copy(src / wav[u], path, rate=rates[i % 2], stereo=(i // 2) % 2 == 1)
            out[u] = str(path.relative_to(dst))
        write_kv(dst / s / "wav.scp", out)
        for name in ("text", "utt2spk"):
            shutil.copyfile(src / s / name, dst / s / name)
        _write_spk2utt(dst / s)
    return dst


def replicated_copy(src: Path, dst: Path, copies: int = 10, ali: str = "exp/mono_ali",
                    train: str = "data/train") -> Path:
    """``src`` whose ``train`` holds ``copies`` replicas of every utterance under new
    utterance and speaker ids (``r01-<utt>``, ``r01-<spk>``: the speaker still a prefix of
    the utterance), the wavs the same files, and ``ali`` holding the GMM's alignment of each
    replica under its new id (model, tree as the real ones)."""
    linked_copy(src, dst, [train, ali])
    wav, text, u2s = (read_kv(src / train / n) for n in ("wav.scp", "text", "utt2spk"))
    new = {u: [f"r{k:02d}-{u}" for k in range(1, copies + 1)] for u in wav}
    d = dst / train
    write_kv(d / "wav.scp", {n: wav[u] for u in wav for n in new[u]})
    write_kv(d / "text", {n: text[u] for u in wav for n in new[u]})
    write_kv(d / "utt2spk", {n: f"{n.split('-')[0]}-{u2s[u]}" for u in wav for n in new[u]})
    _write_spk2utt(d)
    src_ali, dst_ali = src / ali, dst / ali
    dst_ali.mkdir(parents=True)
    model = real_model(src_ali)
    shutil.copyfile(model, dst_ali / model.name)
    if model.name != "final.mdl":
        (dst_ali / "final.mdl").symlink_to(model.name)
    for name in ("tree", "phones.txt", "cmvn_opts"):
        if (src_ali / name).exists():
            shutil.copyfile(src_ali / name, dst_ali / name)
    with gzip.open(dst_ali / "ali.1.gz", "wb") as f:
        for _, u, a in iter_alignment_dir(str(src_ali)):
            for n in new.get(u, []):
                f.write(n.encode() + b" " + encode_int_vector(a, text=True))
    (dst_ali / "num_jobs").write_text("1\n")
    return dst


def without_test_decodes_copy(src: Path, dst: Path) -> Path:
    """``src`` (kaldi_hindi_sat) without the SAT system's decode dirs (``exp/tri3b/decode``,
    ``decode.si``): no fMLLR transforms of the test speakers anywhere, as for a test set that
    Kaldi never decoded."""
    return linked_copy(src, dst, ["exp/tri3b/decode", "exp/tri3b/decode.si"])


def dict_only_copy(src: Path, dst: Path, lang: str = "data/lang") -> Path:
    """``src`` without ``lang``: a GMM dir whose only lexicon is ``data/local/dict``."""
    return linked_copy(src, dst, [lang])


# Kaldi's egs/yesno/s5/input/task.arpabo: YES and NO equally likely, no context
YESNO_ARPA = ("\\data\\\nngram 1=4\n\n\\1-grams:\n-1\tNO\n-1\tYES\n-99\t<s>\n-1\t</s>\n\n"
              "\\end\\\n")


def yesno_dir(src: Path, dst: Path) -> Path:
    """The Kaldi dir that ``egs/yesno/s5`` prepares before any GMM, from ``src`` (the 60 wavs
    of waves_yesno): ``data/train_yesno`` the first 30 files in sorted order, ``data/test_yesno``
    the other 30 (utterance id: the file name, speaker ``global``, words ``YES``/``NO``), the
    dict dir ``data/local/dict`` (``<SIL> SIL``, ``YES Y``, ``NO N``), the unigram
    ``data/local/lm_tg.arpa`` and ``conf/mfcc.conf`` (8 kHz, no energy). No ``exp/``: the
    recipe's own flat start (``--ali none``) is what trains here."""
    wavs = sorted(p for p in src.iterdir() if p.suffix == ".wav")
    if len(wavs) != 60:
        raise ValueError(f"{src}: expected the 60 wavs of waves_yesno, found {len(wavs)}")
    words = {"0": "NO", "1": "YES"}
    for name, part in (("train_yesno", wavs[:30]), ("test_yesno", wavs[30:])):
        d = dst / "data" / name
        write_kv(d / "wav.scp", {w.stem: str(w.resolve()) for w in part})
        write_kv(d / "text", {w.stem: " ".join(words[c] for c in w.stem.split("_"))
                              for w in part})
        write_kv(d / "utt2spk", {w.stem: "global" for w in part})
        _write_spk2utt(d)
    dict_dir = dst / "data" / "local" / "dict"
    write_kv(dict_dir / "lexicon.txt", {"<SIL>": "SIL", "YES": "Y", "NO": "N"})
    write_conf(dict_dir / "nonsilence_phones.txt", "N\nY\n")
    write_conf(dict_dir / "silence_phones.txt", "SIL\n")
    write_conf(dict_dir / "optional_silence.txt", "SIL\n")
    write_conf(dst / "data" / "local" / "lm_tg.arpa", YESNO_ARPA)
    write_conf(dst / "conf" / "mfcc.conf", "--use-energy=false\n--sample-frequency=8000\n")
    return dst


def yesno_after_gmm_dir(src: Path, dst: Path) -> Path:
    """Kaldi's ``egs/yesno/s5`` dir after its ``run.sh``, from ``src`` (waves_yesno):
    ``yesno_dir``'s data and dict dir, then the script's steps run in the dir with the toolkit's
    own ``steps/`` and ``utils/`` (linked there, as a Kaldi s5 dir links Kaldi's): the lang dir
    ``data/lang`` made with ``--position-dependent-phones false`` (phones SIL, N, Y), its
    ``data/lang_test_tg`` from the unigram, MFCCs and CMVN stats of both sets (``mfcc/``), the
    monophone GMM ``exp/mono0a`` (``steps/train_mono.sh --totgauss 400``, the script's options:
    a stand-in for Kaldi's own mono0a, whose published WER is 0%) and its graph
    ``exp/mono0a/graph_tgpr``. The GMM's own alignment (``ali.1.gz``) is in ``exp/mono0a``."""
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    yesno_dir(src, dst)
    for name in ("steps", "utils"):
        os.symlink(repo / name, dst / name)
    shutil.copy2(repo / "egs/digits/s5/path.sh", dst / "path.sh")
    steps = [["utils/prepare_lang.sh", "--position-dependent-phones", "false", "data/local/dict",
              "<SIL>", "data/local/lang", "data/lang"],
             ["utils/format_lm.sh", "data/lang", "data/local/lm_tg.arpa",
              "data/local/dict/lexicon.txt", "data/lang_test_tg"]]
    for x in ("train_yesno", "test_yesno"):
        steps += [["steps/make_mfcc.sh", "--nj", "1", f"data/{x}", f"exp/make_mfcc/{x}", "mfcc"],
                  ["steps/compute_cmvn_stats.sh", f"data/{x}", f"exp/make_mfcc/{x}", "mfcc"]]
    steps += [["steps/train_mono.sh", "--nj", "1", "--totgauss", "400", "data/train_yesno",
               "data/lang", "exp/mono0a"],
              ["utils/mkgraph.sh", "data/lang_test_tg", "exp/mono0a", "exp/mono0a/graph_tgpr"]]
    env = dict(os.environ, HYBRIDASR_ROOT=str(repo))
    with open(dst / "run.log", "w") as log:
        for cmd in steps:
            log.write("# " + " ".join(cmd) + "\n")
            log.flush()
            if subprocess.run(cmd, cwd=dst, env=env, stdout=log, stderr=subprocess.STDOUT).returncode:
                raise RuntimeError(f"{' '.join(cmd)} failed in {dst}: see {dst / 'run.log'}")
    return dst
