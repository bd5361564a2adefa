"""Outputs that are not regular files (a device such as /dev/null, a FIFO) are written in
place, never replaced by a temporary renamed over them; a device given as an input lexicon
(format_lm.sh's /dev/null in make_denlats.sh) is read as an empty file.

The devices are made in tmp_path (``mknod``, as root: CI's machine and the developers' are),
never the real /dev/null."""
from __future__ import annotations

import os
import stat
import threading

import numpy as np
import pytest
import torch

from hybridasr.kaldi.io.table_writer import IntVectorWriter, MatrixWriter
from hybridasr.lang.arpa_to_fst import empty_words
from hybridasr.utils.atomic import atomic_open, atomic_path, writes_in_place
from train_helpers import load_pybin


def _null_device(tmp_path) -> str:
    """A character device 1,3 (what /dev/null is) made in tmp_path."""
    path = str(tmp_path / "null")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD): CI and the developers' machines run as root")
    return path


def _still_a_device(path: str) -> None:
    st = os.stat(path)
    assert stat.S_ISCHR(st.st_mode), f"{path} is no longer a character device"
    assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3)
    leftovers = [n for n in os.listdir(os.path.dirname(path)) if n != os.path.basename(path)]
    assert leftovers == [], f"temporaries left beside {path}: {leftovers}"


def test_a_table_written_to_a_device_leaves_it_a_device(tmp_path):
    null = _null_device(tmp_path)
    assert writes_in_place(null)
    with MatrixWriter(f"ark:{null}") as w:
        w.write("utt1", np.ones((3, 4), dtype=np.float32))
    _still_a_device(null)
    with IntVectorWriter(f"ark,t:{null}") as w:
        w.write("utt1", np.arange(5, dtype=np.int32))
    _still_a_device(null)
    with open(null, "rb") as f:  # still discards what is written
        assert f.read() == b""


def test_copy_feats_to_a_device(tmp_path, kaldi_digits):
    null = _null_device(tmp_path)
    scp = kaldi_digits / "data/test/feats.scp"
    cwd = os.getcwd()
    os.chdir(kaldi_digits)  # (the scp's paths are relative to the Kaldi dir)
    try:
        load_pybin("copy_feats").main(["--compress=true", f"scp:{scp}", f"ark:{null}"])
    finally:
        os.chdir(cwd)
    _still_a_device(null)


def test_an_aborted_table_to_a_device_leaves_it_a_device(tmp_path):
    null = _null_device(tmp_path)
    with pytest.raises(RuntimeError):
        with MatrixWriter(f"ark:{null}") as w:
            w.write("utt1", np.zeros((2, 2), dtype=np.float32))
            raise RuntimeError("stop")
    _still_a_device(null)


def test_atomic_writers_write_a_device_in_place(tmp_path):
    null = _null_device(tmp_path)
    with atomic_open(null, "w") as f:
        f.write("text\n")
    _still_a_device(null)
    with atomic_path(null) as p:
        assert p == null
        torch.save({"a": torch.zeros(2)}, p)
    _still_a_device(null)


def test_a_fifo_is_written_not_replaced(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    with IntVectorWriter(f"ark,t:{fifo}") as w:
        w.write("utt1", np.array([1, 2, 3], dtype=np.int32))
    reader.join(timeout=30)
    assert got == [b"utt1 1 2 3 \n"] or got == [b"utt1 1 2 3\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["fifo"]


def test_regular_files_still_go_through_a_temporary(tmp_path):
    out = str(tmp_path / "a.ark")
    assert not writes_in_place(out)
    with MatrixWriter(f"ark:{out}") as w:
        w.write("utt1", np.ones((2, 2), dtype=np.float32))
    assert stat.S_ISREG(os.stat(out).st_mode)
    assert writes_in_place("/dev/stdout") and writes_in_place("/proc/self/fd/1")


def test_a_device_as_the_lexicon_has_no_empty_words(tmp_path):
    """make_denlats.sh runs format_lm.sh <lang> <arpa> /dev/null <out>: the lexicon a device
    (os.path.isfile is False for it) reads as empty, not as a missing file."""
    null = _null_device(tmp_path)
    assert empty_words(null) == set()
    lex = tmp_path / "lexicon.txt"
    lex.write_text("a a\n<eps_word>\n")
    assert empty_words(str(lex)) == {"<eps_word>"}
    with pytest.raises(Exception, match="missing lexicon"):
        empty_words(str(tmp_path / "absent.txt"))
    with pytest.raises(Exception, match="missing lexicon"):
        empty_words(str(tmp_path))
