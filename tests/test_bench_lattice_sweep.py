"""bench/lattice_sweep.py on kaldi_digits' real test utterances (the monophone GMM's
log-likelihoods): every route prints a JSON line with seconds and best WER, the lattice routes
their ratios to the re-decoding sweep, and --markdown writes one table row per route."""
import json
import subprocess
import sys
from pathlib import Path

from hybridasr.kaldi.io.table_writer import ArkScpWriter

sys.path.insert(0, str(Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402

BENCH = Path(__file__).resolve().parents[1] / "bench" / "lattice_sweep.py"


def test_lattice_sweep_bench_on_digits(kaldi_digits, tmp_path, env_with_path):
    tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 4)
    with ArkScpWriter(str(tmp_path / "ll.ark"), str(tmp_path / "ll.scp")) as w:
        for k, m in lls.items():
            w.write(k, m)
    doc = tmp_path / "sweep.md"
    p = subprocess.run(
        [sys.executable, str(BENCH), "--model", str(kaldi_digits / "exp/mono_ali/final.mdl"),
         "--graph", str(kaldi_digits / "exp/mono/graph"), "--loglikes", f"scp:{tmp_path}/ll.scp",
         "--text", str(kaldi_digits / "data/test/text"), "--min-lmwt", "8", "--max-lmwt", "10",
         "--lattice-configs", "13:8,13:8:words", "--markdown", str(doc)],
        env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["route"] for r in rows] == ["redecode_pdf", "lattice", "lattice"]
    assert [r.get("determinization") for r in rows] == [None, "phones first", "words only"]
    for r in rows:
        assert r["seconds"] > 0 and r["utts"] == 4 and r["frames"] > 0
        assert r["best_wer"] == 0.0  # the GMM gets these digits right
    for r in rows[1:]:
        assert r["seconds_over_redecoding"] > 0 and r["best_wer_minus_redecoding"] == 0.0
        assert r["lattice_density_arcs_per_frame"] > 0
    table = [line for line in doc.read_text().splitlines() if line.startswith("| ")]
    assert len(table) == 2 + len(rows)  # header, rule, one row per route
    assert "bench/lattice_sweep.py --model" in doc.read_text()
