"""python -m experiments.seeds --smoke on the real kaldi_polish: the five experiments run as
real trainings (1 epoch, 2 configurations each, a few utterances, a tiny model) and
docs/results.md's tables parse: the columns of each experiment, one row per configuration,
finite numbers; the plots exist; the JSON lines name every run; a second run reads the
finished runs back."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # an end-to-end smoke of ~1.5 min (10 real trainings)

COLUMNS = {
    1: ["configuration", "utterances/s", "frames/s", "peak RSS (MB)", "padding ratio",
        "CV FER % (epoch 1)", "test WER %"],
    2: ["configuration", "utterances/s", "frames/s", "peak RSS (MB)", "padding ratio",
        "CV FER % (epoch 1)", "test WER %"],
    3: ["configuration", "Q", "bucket order", "epoch seconds", "relative to Q=1",
        "padding ratio", "CV loss e0", "CV loss e1"],
    4: ["configuration", "processes", "sync every K batches", "train seconds/epoch",
        "CV loss e0", "CV loss e1", None],  # None: "CV loss at T s"
    5: ["(streams, window)", "frames per step", "APR mean %", "APR sd %",
        "padding ratio (trainer)", "frames/s", "CV FER % (epoch 1)"],
}
ROWS = {1: ["random", "laplace:8"], 2: ["full", "chunks of 50"], 3: ["Q=1", "Q=2"],
        4: ["1 process", "2 processes, K=1"], 5: ["(8, 10)", "(4, 20)"]}
TEXT_COLUMNS = {"configuration", "bucket order", "(streams, window)", "sync every K batches"}


def tables(md: str) -> dict:
    """{experiment: (header, rows)} of each '## Experiment N' section's table."""
    out = {}
    for sec in re.split(r"^## ", md, flags=re.M)[1:]:
        n = int(re.match(r"Experiment (\d):", sec).group(1))
        lines = [ln for ln in sec.splitlines() if ln.startswith("|")]
        cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
        assert set(cells[1]) == {"---"}, sec
        out[n] = (cells[0], cells[2:], sec)
    return out


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, kaldi_polish, repo_dir):
    d = tmp_path_factory.mktemp("seeds")
    cmd = [sys.executable, "-m", "experiments.seeds", "--smoke",
           f"--kaldi-dir={kaldi_polish}", f"--work-dir={d / 'work'}",
           f"--out={d / 'docs' / 'results.md'}"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=repo_dir)
    assert res.returncode == 0, res.stderr[-3000:]
    return d, cmd, res


def test_smoke_tables_parse(smoke):
    d, _, res = smoke
    md = (d / "docs" / "results.md").read_text(encoding="utf-8")
    assert "- machine: " in md and "python -m experiments.seeds --smoke" in md
    got = tables(md)
    assert sorted(got) == [1, 2, 3, 4, 5]
    for n, (header, rows, sec) in got.items():
        want = COLUMNS[n]
        assert len(header) == len(want), (n, header)
        for h, w in zip(header, want):
            assert h == w if w else re.fullmatch(r"CV loss at [0-9.]+ s", h), (n, header)
        assert [r[0] for r in rows] == ROWS[n]
        for r in rows:
            for h, c in zip(header, r):
                if h not in TEXT_COLUMNS:
                    assert math.isfinite(float(c)), (n, h, c)
        assert "Paper (SEEDS.md): " in sec and "Ours against the paper" in sec
        png = d / "docs" / f"results_exp{n}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(results_exp{n}.png)" in sec
    # figures a run cannot fake: WER out of 0..100, padding >= 1, APR in 0..100
    for n in (1, 2):
        for r in got[n][1]:
            assert 0 <= float(r[-1]) <= 100 and float(r[4]) >= 1
    for r in got[5][1]:
        assert 0 <= float(r[2]) < 100


def test_smoke_json_lines_and_reuse(smoke, repo_dir):
    d, cmd, res = smoke
    recs = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [(r["experiment"], r["configuration"]) for r in recs] == \
        [(n, c) for n in sorted(ROWS) for c in ROWS[n]]
    for r in recs:
        assert r["epochs"] == 1 and r["peak_rss_mb"] > 10 and r["frames_per_s"] > 0
        assert len(r["cv_loss"]) == 2 and all(math.isfinite(x) for x in r["cv_loss"])
    by = {(r["experiment"], r["configuration"]): r for r in recs}
    # one configuration shared by two tables is one run
    assert by[1, "random"]["run_dir"] == by[2, "full"]["run_dir"]
    assert by[1, "laplace:8"]["run_dir"] == by[4, "1 process"]["run_dir"]
    assert by[4, "2 processes, K=1"]["processes"] == 2
    # again: every run is read back (same figures), only the report is written anew
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=repo_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    recs2 = [json.loads(line) for line in again.stdout.splitlines() if line.startswith("{")]
    assert [r["train_seconds"] for r in recs2] == [r["train_seconds"] for r in recs]
