"""The floors of the library (docs/design.md): a package imports only from its own floor's
lower neighbours, never upwards, and nothing but ``pybin/`` (and ``hybridasr.cli`` itself)
imports the CLI. Checked on the source (every import, also those inside functions)."""
from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "hybridasr"

# floor of each top-level module/package; a module may import from lower floors and its own
# package only. cli sits above all: the command line is the bins' business.
FLOORS = {
    "errors": 0,
    "options": 1, "utils": 1, "jobs": 1,
    "kaldi": 2, "registry": 2, "device": 2,
    "datadir": 3,
    "features": 4, "align": 4, "lang": 4,
    "data": 5, "graph": 5, "tree": 5,
    "models": 6, "ctc": 6, "chain": 6, "gmm": 6,
    "train": 7, "decode": 7, "recipe": 7,
    "cli": 8,
}


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "hybridasr" and len(parts) > 1:
                yield node.lineno, parts[1]
            elif parts[0] == "hybridasr" and isinstance(node, ast.ImportFrom):
                for a in node.names:
                    yield node.lineno, a.name


def _package_of(path: Path) -> str:
    rel = path.relative_to(LIB).parts
    return rel[0][:-3] if len(rel) == 1 else rel[0]


def test_every_library_package_has_a_floor():
    tops = {p.name[:-3] if p.suffix == ".py" else p.name for p in LIB.iterdir()
            if (p.suffix == ".py" and p.name != "__init__.py") or
            (p.is_dir() and (p / "__init__.py").exists())}
    assert tops <= set(FLOORS), f"give these a floor in FLOORS and docs/design.md: " \
                                f"{sorted(tops - set(FLOORS))}"


def test_no_import_goes_up_a_floor_or_sideways():
    bad = []
    for path in sorted(LIB.rglob("*.py")):
        if path.name == "__init__.py" and path.parent == LIB:
            continue
        own = _package_of(path)
        for lineno, target in _imports(path):
            if target == own or target not in FLOORS:
                continue
            if FLOORS[target] >= FLOORS[own]:
                bad.append(f"{path.relative_to(REPO)}:{lineno}: {own} (floor {FLOORS[own]}) "
                           f"imports {target} (floor {FLOORS[target]})")
    assert not bad, "\n".join(bad)


def test_only_the_bins_import_the_cli():
    bad = [f"{p.relative_to(REPO)}:{n}" for p in sorted(LIB.rglob("*.py"))
           if _package_of(p) != "cli" for n, t in _imports(p) if t == "cli"]
    assert not bad, "library modules importing hybridasr.cli: " + ", ".join(bad)


def test_the_checker_sees_imports_inside_functions(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from hybridasr.train.loop import run_epoch\n")
    assert list(_imports(src)) == [(2, "train")]


def test_nothing_imports_kaldi_hmm_gmm():
    """kaldi-hmm-gmm 1.1.4 hangs the process when imported after kaldifst 1.8 (docs/design.md,
    "Lang dirs and graphs"): the library and the bins never import it."""
    bad = []
    for top in ("hybridasr", "pybin"):
        for path in sorted((REPO / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                bad += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names
                        if n.split(".")[0] == "kaldi_hmm_gmm"]
    assert not bad, "kaldi_hmm_gmm imported at " + ", ".join(bad)
    # the check sees it
    probe = ast.parse("import kaldi_hmm_gmm as k\n")
    assert any(isinstance(n, ast.Import) and n.names[0].name == "kaldi_hmm_gmm"
               for n in ast.walk(probe))


@pytest.mark.parametrize("first,second", [("kaldi_hmm_gmm", "kaldifst"),
                                          ("kaldifst", "kaldi_hmm_gmm")])
def test_kaldifst_and_kaldi_hmm_gmm_import_orders(first, second):
    """The pinned pair (kaldifst 1.8.3, kaldi-hmm-gmm 1.1.4, a test dependency): kaldi_hmm_gmm
    first imports; kaldifst first hangs (no CPU, no error), the pitfall docs/design.md names.
    When a new release fixes it this test fails: drop the warning there and here."""
    code = f"import {first}, {second}; print('ok')"
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=20)
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    if first == "kaldi_hmm_gmm":
        assert not hung and r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    else:
        assert hung, "kaldifst then kaldi_hmm_gmm no longer hangs: update docs/design.md"


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_graph():
    """hybridasr module -> the hybridasr modules it imports (every import, also inside
    functions; ``from pkg import name`` counts as ``pkg.name`` when that is a module)."""
    modules = {_module_name(p): p for p in LIB.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            else:
                continue
            out.update(t for t in targets if t in modules and t != name)
        graph[name] = out
    return graph


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_modules():
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    graph = _module_graph()
    assert "hybridasr.jobs.cluster" in graph and len(graph) > 100
    cycles = _cycles(graph)
    assert not cycles, "modules importing each other: " + "; ".join(" <-> ".join(c)
                                                                  for c in cycles)
    # the walker finds a cycle where there is one
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_job_runners_need_nothing_but_the_standard_library():
    """utils/run.pl runs ``python3 -m hybridasr.jobs`` with any python3."""
    graph = _module_graph()
    jobs = {m for m in graph if m.startswith("hybridasr.jobs")}
    assert jobs and all(t.startswith("hybridasr.jobs") or t == "hybridasr"
                        for m in jobs for t in graph[m])
    for path in sorted((LIB / "jobs").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for n in names:
                top = n.split(".")[0]
                assert top in sys.stdlib_module_names or top in ("hybridasr", "__future__"), \
                    f"{path.name} imports {n}"


def test_no_package_holds_more_than_a_fifth_of_the_library():
    """Small rooms with one purpose: no package directly under hybridasr/ holds
    more than 20% of the library's lines."""
    lines = {}
    for path in LIB.rglob("*.py"):
        rel = path.relative_to(LIB).parts
        top = rel[0] if len(rel) > 1 else "(modules)"
        lines[top] = lines.get(top, 0) + len(path.read_text(encoding="utf-8").splitlines())
    total = sum(lines.values())
    big = {k: f"{v / total:.1%}" for k, v in lines.items() if v > 0.2 * total}
    assert total > 10000 and not big, f"packages over 20% of {total} lines: {big}"


def test_the_strategy_is_built_in_one_place_and_no_path_hacks():
    """``make_strategy`` is called in at most two places of the library; no
    ``sys.path.insert`` outside tests/ (bench/ and experiments/ import the installed package)."""
    calls, hacks = [], []
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[0] in (".venv", "tests") or "site-packages" in rel.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name == "make_strategy" and rel.parts[0] == "hybridasr":
                    calls.append(f"{rel}:{node.lineno}")
                if name == "insert" and isinstance(f, ast.Attribute) and \
                        isinstance(f.value, ast.Attribute) and f.value.attr == "path":
                    hacks.append(f"{rel}:{node.lineno}")
    assert 1 <= len(calls) <= 2, calls
    assert not hacks, "sys.path.insert outside tests/: " + ", ".join(hacks)


def _objective_comparisons(path: Path, names):
    """Lines of ``path`` that compare something named ``*objective*`` with an objective's
    name (``tcfg.objective == "ctc"``, ``objective in ("ce", ...)``)."""
    def mentions_objective(node):
        return any("objective" in (getattr(n, "id", "") or getattr(n, "attr", ""))
                   for n in ast.walk(node))

    def strings(node):
        return {n.value for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(mentions_objective(s) for s in sides) and \
                    any(strings(s) & names for s in sides):
                out.append(f"{path.name}:{node.lineno}")
    return out


def test_no_objective_is_special_cased_outside_its_module():
    from hybridasr.train.objectives import OBJECTIVES

    own = {Path(inspect.getfile(OBJECTIVES[n])).resolve() for n in OBJECTIVES}
    own.add((LIB / "train" / "objectives.py").resolve())
    bad = [hit for path in sorted(LIB.rglob("*.py")) if path.resolve() not in own
           for hit in _objective_comparisons(path, set(OBJECTIVES))]
    assert not bad, "objective names compared outside their modules: " + ", ".join(bad)


def test_the_special_case_check_sees_one(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f(tcfg, opts):\n    if tcfg.objective == 'ctc':\n        pass\n"
                   "    return opts.objective in ('ce', 'fullsum'), opts.model == 'ce'\n")
    assert _objective_comparisons(src, {"ce", "ctc"}) == ["m.py:2", "m.py:4"]


def _experiments_imports(path: Path):
    """Lines of ``path`` that import the experiment suites (``import experiments...``,
    ``from experiments... import``), also inside functions."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        out += [f"{path.name}:{node.lineno}" for n in names if n.split(".")[0] == "experiments"]
    return out


def test_the_toolkit_tests_import_no_experiment():
    """tests/ tests the toolkit: the experiment suites' checks live in experiments/tests/."""
    files = sorted((REPO / "tests").glob("*.py"))
    assert len(files) > 50
    bad = [hit for path in files for hit in _experiments_imports(path)]
    assert not bad, "tests importing experiments/: " + ", ".join(bad)


def test_the_experiments_import_check_sees_one(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import experiments.seeds\ndef f():\n    from experiments import any_dir\n"
                   "    import experimental, os\n")
    assert _experiments_imports(src) == ["m.py:1", "m.py:3"]
