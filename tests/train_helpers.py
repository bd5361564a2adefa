"""Shared setup for the training tests: kaldi_digits' real features and alignments split by
speaker into a training and a cross-validation set (two held-out speakers)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CV_SPEAKERS = ("jackson_3", "theo_4")


def _abs_scp(src: Path, dst: Path, base: Path, keep) -> None:
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            key, rest = line.rstrip("\n").split(" ", 1)
            if keep(key):
                out.write(f"{key} {base / rest}\n")


def _subset(src: Path, dst: Path, keep) -> None:
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            if keep(line.split(" ", 1)[0]):
                out.write(line)


def make_tr_cv(kaldi_digits: Path, out: Path):
    """data_tr, data_cv (feats/cmvn scp with absolute paths) and an imported alignment dir."""
    from hybridasr.align.importer import import_alignments

    src = kaldi_digits / "data" / "train"
    utt2spk = dict(line.split() for line in open(src / "utt2spk", encoding="utf-8"))
    dirs = {}
    for name, in_cv in (("tr", False), ("cv", True)):
        d = out / f"data_{name}"
        d.mkdir(parents=True, exist_ok=True)
        utt_ok = lambda u, in_cv=in_cv: (utt2spk[u] in CV_SPEAKERS) == in_cv  # noqa: E731
        spk_ok = lambda s, in_cv=in_cv: (s in CV_SPEAKERS) == in_cv  # noqa: E731
        _abs_scp(src / "feats.scp", d / "feats.scp", kaldi_digits, utt_ok)
        _abs_scp(src / "cmvn.scp", d / "cmvn.scp", kaldi_digits, spk_ok)
        _subset(src / "utt2spk", d / "utt2spk", utt_ok)
        _subset(src / "spk2utt", d / "spk2utt", spk_ok)
        _subset(src / "text", d / "text", utt_ok)
        dirs[name] = d
    all_dir = out / "data_all"
    all_dir.mkdir(exist_ok=True)
    _abs_scp(src / "feats.scp", all_dir / "feats.scp", kaldi_digits, lambda u: True)
    _subset(src / "utt2spk", all_dir / "utt2spk", lambda u: True)
    ali = out / "ali_train"
    cwd = os.getcwd()
    import_alignments(str(kaldi_digits / "exp" / "mono_ali"), str(all_dir), str(ali))
    os.chdir(cwd)
    return dirs["tr"], dirs["cv"], ali


def free_port() -> int:
    """A free TCP port on the loopback interface (for a torch.distributed rendezvous)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_pybin(name: str):
    """The module of ``pybin/<name>.py`` (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"pybin_{name}", REPO / "pybin" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
