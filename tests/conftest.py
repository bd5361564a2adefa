"""Shared fixtures: where ../shared is, and the real Kaldi directory inside it."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"needs {path} (the ../shared folder beside the checkout), which is absent")
    return path


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _need(SHARED)


@pytest.fixture(scope="session")
def kaldi_digits() -> Path:
    """The real Kaldi 5.5 experiment dir (read only: copy before changing anything)."""
    return _need(SHARED / "data" / "kaldi_digits")


@pytest.fixture
def kaldi_digits_copy(tmp_path, kaldi_digits) -> Path:
    """A writable copy of kaldi_digits (audio and arks included; ~3 MB)."""
    dst = tmp_path / "kaldi_digits"
    shutil.copytree(kaldi_digits, dst, symlinks=True)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
    return dst


@pytest.fixture(scope="session")
def env_with_path(repo_dir) -> dict:
    """An environment for running step scripts and pybin tools as a user would."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([str(repo_dir / "pybin"), str(repo_dir / "utils"),
                                   venv_bin, env.get("PATH", "")])
    env["PYTHONPATH"] = str(repo_dir) + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
    env["LC_ALL"] = "C"
    env["PYTHONUNBUFFERED"] = "1"
    return env
