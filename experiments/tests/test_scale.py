"""python -m experiments.scale at a tiny size: the synthetic corpus imports, every stage runs,
the JSON lines carry seconds, peak RSS and the growth exponent computed from the two sizes."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from hybridasr.align.phones import split_to_phones
from hybridasr.kaldi.transition_model import read_transition_model

REPO = Path(__file__).resolve().parents[2]
SCALE = [sys.executable, "-m", "experiments.scale"]  # run from REPO


def test_scale_bench_tiny(tmp_path):
    doc = tmp_path / "performance.md"
    p = subprocess.run([*SCALE, "--sizes", "40,80", "--pdfs", "150", "--decode-utts", "4",
                        "--train-batches", "2", "--in-process", "--work-dir", str(tmp_path / "w"),
                        "--keep", "--write-doc", str(doc)], cwd=REPO,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    by = {(r["size"], r["stage"]): r for r in rows}
    for stage in ("generate", "import", "first_batch", "plan laplace:8", "plan frame_shuffle",
                  "loader_w0", "loader_w2", "train", "forward", "decode"):
        for n in (40, 80):
            r = by[(n, stage)]
            assert r["seconds"] >= 0 and r["peak_rss_mb"] > 0
        small, big = by[(40, stage)], by[(80, stage)]
        assert "exponent" not in small
        want = math.log(max(big["seconds"] / max(small["seconds"], 1e-9), 1e-9)) / math.log(2)
        assert big["exponent_from"] == 40
        assert abs(big["exponent"] - want) < 0.02 * max(1.0, abs(want)) + 0.01
    # every frame of the corpus is imported and goes through one epoch of the loader
    for n in (40, 80):
        assert by[(n, "import")]["frames"] == by[(n, "generate")]["frames"]
        assert by[(n, "loader_w0")]["frames"] == by[(n, "loader_w2")]["frames"] \
            == by[(n, "generate")]["frames"]
        assert by[(n, "decode")]["utts"] == by[(n, "forward")]["utts"] == 4
        train = by[(n, "train")]  # the real trainer on the whole corpus, the test set as cv
        assert (train["train_utts"], train["cv_utts"], train["steps"]) == (n, 4, 2)
        assert abs(train["seconds"] - train["startup_seconds"] -
                   train["first_batch_seconds"]) < 2e-4  # each rounded to 4 places
    assert not any(r["stage"].startswith("gpu") for r in rows)  # no CUDA here: no gpu rows
    assert by[(80, "generate")]["num_pdfs"] == 150
    # the model and alignments are Kaldi's: the toolkit's reader takes them back
    ali = tmp_path / "w" / "80" / "ali"
    tm = read_transition_model(str(ali / "final.mdl"))
    assert tm.num_pdfs == 150 and sorted(p.name for p in ali.glob("ali.*.gz")) == \
        [f"ali.{j}.gz" for j in range(1, 5)]
    from hybridasr.align.alignments import iter_alignment_dir
    seen = 0
    for _, utt, a in iter_alignment_dir(str(ali)):
        ends, ok = split_to_phones(tm, np.asarray(a))
        assert ok and ends[-1] == len(a)
        seen += 1
    assert seen == 80
    text = doc.read_text()
    assert "| 80 | import |" in text and "cores" in text and "python -m experiments.scale" in text


def test_scale_bench_gpu_section_runs_on_the_cpu(tmp_path):
    """The GPU section's code path, on the CPU: our epoch and the bare loop see the same
    batches (the same real frames), the loader row counts them too."""
    p = subprocess.run([*SCALE, "--sizes", "30", "--pdfs", "60",
                        "--stages", "import,gpu", "--gpu-device", "cpu", "--gpu-utts", "3",
                        "--gpu-layers", "1", "--gpu-hidden", "16", "--gpu-max-frames", "2500",
                        "--gpu-workers", "0", "--in-process", "--work-dir", str(tmp_path)],
                       cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    by = {r["stage"]: r for r in map(json.loads, p.stdout.splitlines())}
    loader, ours, bare = by["gpu loader w0"], by["gpu ours fp32"], by["gpu bare fp32"]
    assert loader["frames"] == ours["frames"] == bare["frames"] > 0
    assert ours["utts"] == 3 and ours["batches"] == loader["batches"]
    assert bare["ratio"] == round(ours["frames_per_second"] / bare["frames_per_second"], 3)
    assert "gpu ours bf16" not in by  # bf16 only on a GPU
