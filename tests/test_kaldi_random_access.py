"""Random access over scp files (``kaldi.io.random_access``) with archives kept open per process
(``kaldi.io.open_files``), on the real digits features and imported targets."""
from __future__ import annotations

import os
import shutil

import kaldiio
import numpy as np
import pytest

from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import read_int_vector_scp
from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
from hybridasr.kaldi.io.open_files import OpenFiles
from hybridasr.kaldi.io.random_access import int_vectors, matrices
from hybridasr.kaldi.io.table_writer import ArkScpWriter, MatrixWriter


@pytest.fixture()
def feats_scp(kaldi_digits, tmp_path):
    """The digits train features with absolute paths (Kaldi's compressed ark)."""
    out = tmp_path / "feats.scp"
    with open(kaldi_digits / "data/train/feats.scp") as f, open(out, "w") as g:
        for line in f:
            key, rx = line.split()
            g.write(f"{key} {kaldi_digits}/{rx}\n")
    return str(out)


def test_matrices_equal_the_sequential_kaldi_exact_reader(feats_scp):
    expected = dict(iter_feature_scp(feats_scp))
    table = matrices(feats_scp)
    assert list(table.keys()) == list(expected) and len(table) == 120
    keys = list(expected)
    rng = np.random.default_rng(0)
    for k in rng.permutation(keys):  # random order: seeks back and forth in one open ark
        np.testing.assert_array_equal(table[k], expected[k])
    assert len(table._files) == 1  # one ark, opened once
    # kaldiio's decompression differs from Kaldi's by an ulp at most
    ref = kaldiio.load_scp(feats_scp)
    np.testing.assert_allclose(table[keys[0]], ref[keys[0]], atol=1e-4)
    with pytest.raises(KeyError):
        table["no_such_utt"]
    table.close()


def test_row_ranges_are_read_kaldi_exact(feats_scp, tmp_path):
    full = dict(iter_feature_scp(feats_scp))
    k0, k1 = list(full)[:2]
    line = {k: rx for k, rx in (l.split() for l in open(feats_scp))}
    scp = tmp_path / "ranged.scp"
    scp.write_text(f"a {line[k0]}[2:9]\nb {line[k1]}[0:4,3:7]\n")
    table = matrices(str(scp))
    np.testing.assert_array_equal(table["a"], full[k0][2:10])
    np.testing.assert_array_equal(table["b"], full[k1][0:5, 3:8])
    assert dict(iter_feature_scp(str(scp)))["b"].shape == (5, 5)
    scp.write_text(f"c {line[k0]}[0:100000]\n")
    with pytest.raises(FormatError, match=r"ranged.scp:1: .*range outside"):
        matrices(str(scp))["c"]


def test_int_vectors_equal_the_scp_reader_and_errors_name_the_line(kaldi_digits, tmp_path):
    rng = np.random.default_rng(1)
    values = {f"u{i}": rng.integers(0, 500, size=int(rng.integers(0, 40))).astype(np.int32)
              for i in range(30)}
    with ArkScpWriter(str(tmp_path / "t.ark"), str(tmp_path / "t.scp")) as w:
        for k, v in values.items():
            w.write(k, v)
    table = int_vectors(str(tmp_path / "t.scp"))
    whole = read_int_vector_scp(str(tmp_path / "t.scp"))
    for k in reversed(list(values)):
        np.testing.assert_array_equal(table[k], values[k])
        np.testing.assert_array_equal(whole[k], values[k])
    assert len(table._files._maps) == 0 and len(table._files) == 1  # read, not mapped
    # text values (ark,t), a last line without its newline included
    text = "u0 1 2 3 \nu1 4 5 \nu2 7 8"
    (tmp_path / "t.txt.ark").write_text(text)
    offs = [3, text.index("u1") + 3, text.index("u2") + 3]
    (tmp_path / "txt.scp").write_text("".join(f"u{i} {tmp_path}/t.txt.ark:{o}\n"
                                              for i, o in enumerate(offs)))
    txt = int_vectors(str(tmp_path / "txt.scp"))
    assert [txt[k].tolist() for k in ("u2", "u0", "u1")] == [[7, 8], [1, 2, 3], [4, 5]]
    # a missing ark: the scp line is named, at the first read
    (tmp_path / "bad.scp").write_text(f"u0 {tmp_path}/t.ark:0\nu1 {tmp_path}/gone.ark:7\n")
    bad = int_vectors(str(tmp_path / "bad.scp"))
    with pytest.raises(FormatError, match=r"bad.scp:2: u1: cannot open .*gone.ark"):
        bad["u1"]
    (tmp_path / "dup.scp").write_text(f"u0 {tmp_path}/t.ark:0\nu0 {tmp_path}/t.ark:0\n")
    with pytest.raises(FormatError, match=r"dup.scp:2: duplicate key 'u0'"):
        int_vectors(str(tmp_path / "dup.scp"))


def test_open_files_are_bounded_and_values_stay_right(tmp_path):
    rng = np.random.default_rng(2)
    mats, lines = {}, []
    for j in range(3):  # three arks, a cache of two
        ark, scp = tmp_path / f"m{j}.ark", tmp_path / f"m{j}.scp"
        with MatrixWriter(f"ark,scp:{ark},{scp}") as w:
            for i in range(4):
                m = rng.standard_normal((5 + i, 3)).astype(np.float32)
                mats[f"m{j}_{i}"] = m
                w.write(f"m{j}_{i}", m)
        lines.append(scp.read_text())
    (tmp_path / "all.scp").write_text("".join(lines))
    table = matrices(str(tmp_path / "all.scp"))
    table._files = OpenFiles(max_open=2)
    for _ in range(2):
        for k in sorted(mats, key=lambda k: (k[-1], k)):  # alternate between the arks
            np.testing.assert_array_equal(table[k], mats[k])
            assert len(table._files) <= 2


def test_a_forked_child_opens_its_own_files(feats_scp):
    """After a fork the child must not use the parent's open files: a shared file offset would
    interleave the seeks of both (a loader worker and the main process)."""
    table = matrices(feats_scp)
    keys = list(table.keys())
    expected = dict(iter_feature_scp(feats_scp))
    table[keys[0]]  # the parent opens the ark before the fork
    parent_file = table._files.file(table._archives[0])
    parent_file.seek(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: reads everything, then leaves its own file at offset 777
        os.close(r)
        ok = True
        try:
            for k in reversed(keys):
                ok &= bool(np.array_equal(table[k], expected[k]))
            table._files.file(table._archives[0]).seek(777)
            ok &= table._files._pid == os.getpid()
        except Exception:  # noqa: BLE001 - reported through the pipe
            ok = False
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    child_ok = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert child_ok == b"1"
    # the parent's file offset is its own: the child's seeks did not move it
    assert os.lseek(parent_file.fileno(), 0, os.SEEK_CUR) != 777
    for k in keys:
        np.testing.assert_array_equal(table[k], expected[k])


def test_the_table_pickles_without_open_files(feats_scp):
    import pickle

    table = matrices(feats_scp)
    k = next(iter(table))
    a = table[k]
    copy = pickle.loads(pickle.dumps(table))
    assert len(copy._files) == 0 and len(table._files) == 1
    np.testing.assert_array_equal(copy[k], a)


def test_a_removed_ark_is_reported_at_read_not_at_open(feats_scp, tmp_path):
    ark_dir = tmp_path / "arks"
    ark_dir.mkdir()
    src = open(feats_scp).readline().split()[1].rsplit(":", 1)[0]
    shutil.copy(src, ark_dir / "a.ark")
    scp = tmp_path / "moved.scp"
    scp.write_text("".join(f"{l.split()[0]} {ark_dir}/a.ark:{l.split()[1].rsplit(':', 1)[1]}\n"
                           for l in open(feats_scp)))
    table = matrices(str(scp))  # the scp is read, no ark opened yet
    os.unlink(ark_dir / "a.ark")
    with pytest.raises(FormatError, match=r"moved.scp:1: .*cannot open .*a.ark"):
        table[next(iter(table))]
