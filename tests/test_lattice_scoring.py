"""steps/score.sh on lattices without Kaldi binaries: Kaldi's own lat.1.gz of kaldi_digits and
kaldi_polish swept in one pass (lattice_best_path_sweep.py) over LM weights and the default word
insertion penalties (0.0,0.5,1.0, Kaldi's score_kaldi.sh): penalty 0.0 reproduces Kaldi's
scoring/*.tra and wer_* files, the dir's WER is the best (LMWT, penalty) for every reader of
wer_* (utils/best_wer.sh, the recipe's summary, the experiments' per-utterance errors), and
decode_summary.json has density and oracle WER; --lattices true makes lat.1.gz from
log-likelihoods once (latgen_faster_mapped.py) and sweeps penalties too."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from hybridasr.decode.lattice_table import oracle_errors
from hybridasr.kaldi.lattice import read_lattices
from hybridasr.decode.lattice_best_path import best_path
from hybridasr.kaldi.symbol_table import read_symbol_table
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.kaldi.io.table_writer import ArkScpWriter
from hybridasr.recipe.summary import best_wer as summary_best_wer

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_decode_pdf_graph import gmm_loglikes  # noqa: E402


def _score(repo_dir, env, cwd, *args):
    return subprocess.run([str(repo_dir / "steps/score.sh"), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("which", ["kaldi_digits/exp/mono", "kaldi_polish/exp/tri1"])
def test_score_sh_on_kaldi_lattices(which, shared_dir, repo_dir, env_with_path, tmp_path):
    src = shared_dir / "data" / which
    kaldi_dir = src.parent.parent
    dec = tmp_path / "decode"
    dec.mkdir()
    shutil.copy(src / "decode/lat.1.gz", dec / "lat.1.gz")
    p = _score(repo_dir, env_with_path, tmp_path, "--min-lmwt", 7, "--max-lmwt", 17,
               kaldi_dir / "data/test", src / "graph", dec)
    assert p.returncode == 0, p.stdout + p.stderr
    wips = ("0.0", "0.5", "1.0")
    assert sorted(x.name for x in dec.glob("wer_*")) == \
        sorted(f"wer_{lmwt}_{wip}" for lmwt in range(7, 18) for wip in wips)
    for lmwt in range(7, 18):  # penalty 0.0: Kaldi's own scoring (its local/score.sh)
        assert (dec / f"scoring/penalty_0.0/{lmwt}.tra").read_text() == \
            (src / f"decode/scoring/{lmwt}.tra").read_text(), lmwt
        assert (dec / f"wer_{lmwt}_0.0").read_text().splitlines()[1:] == \
            (src / f"decode/wer_{lmwt}").read_text().splitlines()[1:], lmwt
    summary = json.loads((dec / "decode_summary.json").read_text())
    assert summary["num_lattices"] == len(read_text_archive(str(kaldi_dir / "data/test/text")))
    assert summary["lattice_density_arcs_per_frame"] > 0

    def errors(name):
        m = re.search(r"%WER \S+ \[ (\d+) / (\d+),", (dec / name).read_text())
        return int(m.group(1)), int(m.group(2))
    at = {(lmwt, wip): errors(f"wer_{lmwt}_{wip}")[0] for lmwt in range(7, 18) for wip in wips}
    fewest = min(at.values())
    best = 100.0 * fewest / errors("wer_7_0.0")[1]
    assert 0 <= summary["oracle_wer"] <= best
    # the dir's WER, as each reader of wer_* finds it: the best over LM weights and penalties
    line = subprocess.run(f"grep WER {dec}/wer_* | {repo_dir}/utils/best_wer.sh", shell=True,
                          env=env_with_path, capture_output=True, text=True).stdout
    lmwt, wip = re.search(r"/wer_(\d+)_([0-9.]+):%WER", line).groups()
    assert at[int(lmwt), wip] == fewest
    assert summary_best_wer(str(dec))[0] == pytest.approx(best, abs=0.005)
    # the best weight's transcript (scoring/penalty_WIP/LMWT.tra) holds those errors, utterance
    # by utterance
    import kaldialign
    words = read_symbol_table(str(src / "graph/words.txt"))
    refs = read_text_archive(str(dec / "scoring/test_filt.txt"))
    hyps = read_text_archive(str(dec / f"scoring/penalty_{wip}/{lmwt}.tra"))
    per_utt = [kaldialign.edit_distance(ref, [words[int(w)] for w in hyps.get(u, [])])["total"]
               for u, ref in refs.items()]
    assert sum(per_utt) == fewest
    if "polish" in which:
        assert summary["oracle_wer"] < best  # the lattices hold better paths than the 1-best
        # Kaldi's tri1 inserts words (23 at its best LM weight 17): a penalty does better
        # than every LM weight without one, and that is the dir's WER
        assert fewest < min(n for (_, w), n in at.items() if w == "0.0")
        assert wip != "0.0"


def test_oracle_errors_against_best_path(kaldi_polish):
    words = read_symbol_table(str(kaldi_polish / "exp/tri1/graph/words.txt"))
    ids = {w: i for i, w in words.items()}
    refs = read_text_archive(str(kaldi_polish / "exp/tri1/decode/scoring/test_filt.txt"))
    import kaldialign
    for key, lat in read_lattices(f"ark:gunzip -c {kaldi_polish}/exp/tri1/decode/lat.1.gz|"):
        ref = [ids.get(w, -1) for w in refs[key]]
        hyp = best_path(lat, lm_scale=12).words
        errs = kaldialign.edit_distance(ref, hyp)["total"]
        oracle = oracle_errors(lat, ref)
        assert 0 <= oracle <= errs
    assert oracle_errors(lat, [-1]) >= 1


def test_score_sh_makes_lattices_once(kaldi_digits, repo_dir, env_with_path, tmp_path):
    tm, lls = gmm_loglikes(kaldi_digits, "exp/mono_ali/final.mdl", 12)
    exp = tmp_path / "exp/gmm"
    dec = exp / "decode"
    dec.mkdir(parents=True)
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    keys = sorted(lls)
    for job, part in ((1, keys[:6]), (2, keys[6:])):
        with ArkScpWriter(str(dec / f"loglikes.{job}.ark"), str(dec / f"loglikes.{job}.scp")) as w:
            for k in part:
                w.write(k, lls[k])
    data = tmp_path / "data"
    data.mkdir()
    text = read_text_archive(str(kaldi_digits / "data/test/text"))
    (data / "text").write_text("".join(f"{k} {' '.join(text[k])}\n" for k in keys))
    p = _score(repo_dir, env_with_path, tmp_path, "--lattices", "true", "--word-ins-penalty",
               "0.0,0.5", "--min-lmwt", 8, "--max-lmwt", 10, data,
               kaldi_digits / "exp/mono/graph", dec)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(x.name for x in dec.glob("lat.*.gz")) == ["lat.1.gz", "lat.2.gz"]
    lats = dict(read_lattices(f"ark:gunzip -c {dec}/lat.*.gz|"))
    assert sorted(lats) == keys
    # our lat.*.gz as kaldifst reads them (OpenFst's shortest path): the same best paths
    from test_lattice_io import _kaldifst_best
    for k, lat in lats.items():
        ours = best_path(lat)
        words, tids, g, a = _kaldifst_best(lat)
        assert (words, tids) == (ours.words, ours.tids), k
        assert g == pytest.approx(ours.graph_cost, abs=1e-2)
        assert a == pytest.approx(ours.acoustic_cost, rel=1e-5)
    for lmwt in (8, 9, 10):
        for wip in ("0.0", "0.5"):
            assert (dec / f"wer_{lmwt}_{wip}").read_text().splitlines()[1] == \
                "%WER 0.00 [ 0 / 12, 0 ins, 0 del, 0 sub ]"
            assert len(read_text_archive(str(dec / f"scoring/penalty_{wip}/{lmwt}.tra"))) == 12
    summary = json.loads((dec / "decode_summary.json").read_text())
    assert summary["oracle_wer"] == 0.0 and summary["num_frames"] > 0
    # the best weight sits at an end of 8..10 (all equal: the lowest is picked): a warning
    assert "at an end of the range 8..10" in p.stderr
    # --word-symbol-table logs each utterance's best words, as Kaldi's latgen does
    p = subprocess.run(["latgen_faster_mapped.py", "--beam=13", "--lattice-beam=6",
                        f"--word-symbol-table={kaldi_digits}/exp/mono/graph/words.txt",
                        str(exp / "final.mdl"), str(kaldi_digits / "exp/mono/graph/HCLG.fst"),
                        f"scp:{dec}/loglikes.1.scp", f"ark:{tmp_path}/lat.ark"],
                       env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    logged = {}
    for line in p.stderr.splitlines():
        toks = line.split()
        for k in set(keys[:6]) & set(toks):
            logged[k] = toks[toks.index(k) + 1:]
    assert logged == {k: text[k] for k in keys[:6]}
