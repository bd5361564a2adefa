"""The conftest hook that makes a skipped test fail the run in CI (CI=true, or
HYBRIDASR_NO_SKIPS=1 as .ci/run sets), except tests marked gpu or returnn: run on small test
files in a pytester dir, whose conftest takes its hooks from this suite's own conftest.py."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
HOOKS = ("pytest_runtest_logreport", "pytest_collectreport", "pytest_sessionfinish",
         "pytest_terminal_summary")

PASSING = '''
import pytest

def test_passes():
    assert True
'''
SHARED_ABSENT = '''
@pytest.fixture
def shared():
    pytest.skip("needs ../shared, which is absent")

def test_needs_shared(shared):
    assert shared
'''
OPTIONAL = '''
@pytest.mark.gpu
def test_on_gpu():
    pytest.skip("no CUDA GPU")

@pytest.mark.returnn
def test_with_returnn():
    pytest.skip("RETURNN is not installed")

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
'''
TESTS = PASSING + SHARED_ABSENT + OPTIONAL


@pytest.fixture
def run(pytester, monkeypatch):
    pytester.makeconftest(
        "import importlib.util\n"
        f"_spec = importlib.util.spec_from_file_location('suite_conftest', {str(CONFTEST)!r})\n"
        "_mod = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_mod)\n"
        + "".join(f"{h} = _mod.{h}\n" for h in HOOKS))
    pytester.makeini("[pytest]\nmarkers =\n    gpu: g\n    returnn: r\n")
    for name in ("CI", "HYBRIDASR_NO_SKIPS"):
        monkeypatch.delenv(name, raising=False)

    def go(files, **env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        pytester.makepyfile(**files)
        return pytester.runpytest("-p", "no:cacheprovider")
    return go


def test_skips_pass_outside_ci(run):
    r = run({"test_some": TESTS})
    r.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert r.ret == pytest.ExitCode.OK
    assert "fail this run" not in r.stdout.str()


@pytest.mark.parametrize("env", [{"CI": "true"}, {"HYBRIDASR_NO_SKIPS": "1"}])
def test_a_skip_fails_ci_and_is_listed(run, env):
    r = run({"test_some": TESTS}, **env)
    r.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["*= 1 skipped test(s) fail this run =*",
                            "test_some.py::test_needs_shared: Skipped: needs ../shared, which is "
                            "absent"])
    out = r.stdout.str()
    assert "test_on_gpu:" not in out and "test_with_returnn:" not in out


def test_module_skipped_at_import_fails_ci(run):
    r = run({"test_imp": "import pytest\npytest.importorskip('no_such_module_here')\n",
             "test_fine": "def test_passes():\n    assert True\n"}, CI="true")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["test_imp.py: Skipped: could not import 'no_such_module_here'*"])


def test_only_optional_skips_pass_ci(run):
    r = run({"test_opt": PASSING + OPTIONAL}, CI="true")
    r.assert_outcomes(passed=1, skipped=2, xfailed=1)
    assert r.ret == pytest.ExitCode.OK
    assert "fail this run" not in r.stdout.str()


def test_failures_keep_their_exit_status(run):
    r = run({"test_bad": "import pytest\n\ndef test_fails():\n    assert False\n\n"
                         "def test_skips():\n    pytest.skip('why')\n"}, CI="true")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["test_bad.py::test_skips: Skipped: why"])
