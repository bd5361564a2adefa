"""hybridasr.utils.atomic: whole files or none, with the permissions a plain open gives."""
from __future__ import annotations

import os
import stat

import pytest

from hybridasr.kaldi.conf import write_config_file
from hybridasr.utils.atomic import atomic_open, atomic_path, current_umask, tmp_path_for


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_current_umask_reads_the_real_one(umask_027):
    assert current_umask() == 0o027
    assert os.umask(0o027) == 0o027  # unchanged by reading it


def test_new_file_gets_0666_less_umask_not_mkstemps_0600(tmp_path, umask_027):
    out = tmp_path / "text"
    with atomic_open(str(out), "w", encoding="utf-8") as f:
        f.write("utt1 a b\n")
    assert out.read_text() == "utt1 a b\n"
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert _mode(out) == _mode(plain) == 0o640
    os.umask(0o022)
    write_config_file(str(tmp_path / "a.conf"), {"num_ceps": 13})
    assert _mode(tmp_path / "a.conf") == 0o644


def test_atomic_path_and_tmp_path_for_modes(tmp_path, umask_027):
    out = tmp_path / "model.bin"
    with atomic_path(str(out)) as tmp:
        assert _mode(tmp) == 0o640 and os.path.dirname(tmp) == str(tmp_path)
        with open(tmp, "wb") as f:
            f.write(b"\0B")
    assert _mode(out) == 0o640 and out.read_bytes() == b"\0B"
    tmp = tmp_path_for(str(tmp_path / "other"))
    assert _mode(tmp) == 0o640
    os.unlink(tmp)


def test_existing_file_keeps_its_mode(tmp_path, umask_027):
    out = tmp_path / "run.sh"
    out.write_text("old\n")
    os.chmod(out, 0o755)
    with atomic_open(str(out), "w") as f:
        f.write("new\n")
    assert out.read_text() == "new\n" and _mode(out) == 0o755


def test_error_leaves_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "feats.scp"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(str(out), "w") as f:
            f.write("half")
            raise RuntimeError("writer died")
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["feats.scp"]
