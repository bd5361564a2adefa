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
# pytest-xdist runs two workers (pyproject addopts), one per core: their processes (the
# recipes' trainings and decodings) take one thread each instead of competing with two
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


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


@pytest.fixture(scope="session")
def kaldi_polish() -> Path:
    """The second real Kaldi dir: Polish read sentences, 16 kHz, tri1 with 1,192 pdfs (read
    only; its final.mdl may be a symlink or, in a flattened copy, a file naming 35.mdl)."""
    return _need(SHARED / "data" / "kaldi_polish")


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


# ------------------------------------------------------------------ which files start first
# pytest-xdist (pyproject addopts: -n 2 --dist loadfile) runs each file whole on one worker, in
# the order the files are handed out. A long file handed out near the end keeps one worker busy
# while the other has nothing left: the files in LONG_FILES start first, longest first (about
# the seconds each takes in CI, .ci/run's --durations; only their order matters), then the
# other files with tests marked slow, then the rest in collection order. pyproject's
# --no-loadscope-reorder keeps this order (xdist would otherwise hand out the files with the
# most tests first, which put the recipe tests, a few long tests per file, at the end).
LONG_FILES = {
    "test_recipe_e2e.py": 120,
    "test_recipe_shapes.py": 105,
    "test_flatstart.py": 95,
    "test_reliability_kill.py": 95,
    "test_recipe_shapes_one_speaker.py": 70,
    "test_align_recipe.py": 65,
    "test_sequence_steps.py": 60,
    "test_train.py": 55,
    "test_ctc_recipe.py": 55,
    "test_fullsum.py": 50,
    "test_train_multinode.py": 45,
    "test_chain_recipe.py": 45,
    "test_graph_chain.py": 45,
    "test_ctc_train.py": 45,
    "test_decode_model.py": 40,
    "test_slurm_jobs.py": 35,
    "test_chain_train.py": 30,
    "test_transcribe.py": 30,
    "test_data_defaults.py": 30,
    "test_import_floors.py": 25,
    "test_recipe_sample_rate.py": 25,
    "test_recipe_shapes_polish.py": 25,
    "test_export_model.py": 25,
    "test_confidence_calibration.py": 20,
    "test_recipe_shapes_44k.py": 20,
    "test_train_distributed.py": 20,
    "test_recipe_dict_gmm.py": 20,
    "test_tree_build.py": 20,
}


def pytest_collection_modifyitems(config, items):
    files: dict = {}  # a test file -> [its seconds in LONG_FILES, any test marked slow, position]
    for i, item in enumerate(items):
        path = item.nodeid.split("::")[0]
        f = files.setdefault(path, [LONG_FILES.get(path.rsplit("/", 1)[-1], 0), False, i])
        f[1] = f[1] or item.get_closest_marker("slow") is not None

    def order(item):
        seconds, slow, position = files[item.nodeid.split("::")[0]]
        return (-seconds, not slow, position)

    items.sort(key=order)  # (stable: a file's tests keep their order)


# ------------------------------------------------------------------ no skips in CI
# With CI=true (CI runs `.ci/run` so) or HYBRIDASR_NO_SKIPS=1 (`.ci/run` sets it), a skipped
# test fails the run unless it is marked `gpu` or `returnn` (it needs a GPU, or the optional
# RETURNN peer): any other skip hides a missing dependency, module or ../shared. Elsewhere skips
# are allowed (e.g. a checkout without ../shared beside it).
OPTIONAL_MARKERS = ("gpu", "returnn")
_unexpected_skips: list = []


def skips_fail_the_run() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1") or \
        os.environ.get("HYBRIDASR_NO_SKIPS") == "1"


def _note_skip(report) -> None:
    # a collection report (a whole module skipped at import) carries no markers: never optional
    if report.skipped and not hasattr(report, "wasxfail") and \
            not any(m in getattr(report, "keywords", {}) for m in OPTIONAL_MARKERS):
        _unexpected_skips.append(report)


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):
    _note_skip(report)


def pytest_sessionfinish(session, exitstatus):
    if _unexpected_skips and skips_fail_the_run() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if not (_unexpected_skips and skips_fail_the_run()):
        return
    tr = terminalreporter
    tr.section(f"{len(_unexpected_skips)} skipped test(s) fail this run", sep="=", red=True)
    for r in _unexpected_skips:
        reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        tr.line(f"{r.nodeid or r.fspath}: {reason}", red=True)
    tr.line(f"(CI=true or HYBRIDASR_NO_SKIPS=1: only tests marked {' or '.join(OPTIONAL_MARKERS)} "
            f"may skip; install what is missing, or put ../shared beside the checkout)")
