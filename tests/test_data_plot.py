"""pybin/plot_batches.py on the real digits data dir (lengths from the feats.scp headers)."""
from __future__ import annotations

import json
import subprocess
import sys


def test_plot_batches_draws_every_strategy(repo_dir, kaldi_digits, env_with_path, tmp_path):
    png = tmp_path / "batches.png"
    r = subprocess.run([sys.executable, str(repo_dir / "pybin" / "plot_batches.py"),
                        "--strategies=random,sorted,bucketing,laplace:4,optimal_buckets:3",
                        "--bucket-width=20", "--max-frames=400", "data/train", str(png)],
                       cwd=kaldi_digits, env=env_with_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["strategy"] for x in lines] == ["random", "sorted", "bucketing", "laplace:4",
                                              "optimal_buckets:3"]
    assert all(x["num_sequences"] == 120 for x in lines)
    assert lines[1]["padding_ratio"] <= lines[0]["padding_ratio"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = subprocess.run([sys.executable, str(repo_dir / "pybin" / "plot_batches.py"),
                          "--strategies=bucketing", "data/train", str(png)],
                         cwd=kaldi_digits, env=env_with_path, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 1 and "bucket-width" in bad.stderr
