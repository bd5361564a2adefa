"""The experiment suites' own checks (not the toolkit's: tests/ tests the toolkit and imports
nothing from experiments/). Run from the repository root:

    .venv/bin/python -m pytest -q -n 0 experiments/tests

Fixtures: where the repository and ../shared are, and the real Kaldi dir the suites read."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


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
    """The real Kaldi 5.5 digits dir (read only)."""
    return _need(SHARED / "data" / "kaldi_digits")


@pytest.fixture(scope="session")
def kaldi_polish() -> Path:
    """Polish read sentences, 16 kHz, tri1 (read only)."""
    return _need(SHARED / "data" / "kaldi_polish")
