"""The embedded decoder against Kaldi's own decoding of kaldi_digits' test set: the alignment
model's GMM (exp/mono_ali/final.mdl, the same model as exp/mono's 40.mdl that Kaldi decoded
with) scores data/test through apply-cmvn + add-deltas; decoding those log-likelihoods on
exp/mono/graph must reproduce gmm-latgen-faster's words and per-frame log-likelihoods
(exp/mono/decode/log/decode.1.log), and steps/score.sh must reproduce its wer_7..wer_17 and
scoring/*.tra."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hybridasr.data.dataset import UtteranceDataset
from hybridasr.features.transform import FeatureTransform
from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
from hybridasr.kaldi.gmm_model import read_gmm_model
from hybridasr.decode.graph import load_graph_dir
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.decode.wer import compute_wer
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.table_writer import ArkScpWriter

ACWT = 0.083333  # exp/mono/decode's --acoustic-scale


@pytest.fixture(scope="module")
def gmm_test(kaldi_digits):
    """(transition model, GMM, {utt: log-likelihoods of data/test}) in Kaldi's order."""
    tm, gmm = read_gmm_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    cwd = os.getcwd()
    os.chdir(kaldi_digits)  # the scp paths are relative to the experiment dir
    try:
        ds = UtteranceDataset.from_data_dir(
            "data/test", transform=FeatureTransform(norm_means=True, delta_order=2))
        lls = {u: gmm.log_likelihoods(ds.load(u)[0]) for u in ds}
    finally:
        os.chdir(cwd)
    return tm, gmm, lls


def kaldi_log_likes(kaldi_digits):
    log = (kaldi_digits / "exp/mono/decode/log/decode.1.log").read_text()
    return {m[1]: (float(m[2]), int(m[3])) for m in
            re.finditer(r"Log-like per frame for utterance (\S+) is (\S+) over (\d+) frames", log)}


def test_gmm_model_read(gmm_test):
    tm, gmm, lls = gmm_test
    assert (gmm.dim, gmm.num_pdfs, tm.num_pdfs) == (39, 70, 70)
    assert gmm.offsets[0] == 0 and np.all(np.diff(gmm.offsets) >= 1)
    assert len(lls) == 30 and all(m.shape[1] == 70 and m.dtype == np.float32
                                  for m in lls.values())
    # a frame's best pdf has a sane log-likelihood for 39-dim MFCC+deltas
    best = np.concatenate([m.max(1) for m in lls.values()])
    assert -150 < best.mean() < -30
    with pytest.raises(FormatError, match="dim 39"):
        gmm.log_likelihoods(np.zeros((3, 13), np.float32))


def test_decode_reproduces_kaldi_gmm_latgen(gmm_test, kaldi_digits):
    tm, _, lls = gmm_test
    graph = load_graph_dir(str(kaldi_digits / "exp/mono/graph"))
    dec = MappedDecoder(graph.fst, tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=13, max_active=7000, min_active=200),
                        max_ilabel=graph.max_ilabel)
    kaldi = kaldi_log_likes(kaldi_digits)
    assert len(kaldi) == 30
    hyps = {}
    for utt, ll in lls.items():
        r = dec.decode(ll, ACWT, utt)
        assert r.ok and r.reached_final, utt
        per_frame = -(r.graph_cost + r.acoustic_cost) / r.num_frames
        assert r.num_frames == kaldi[utt][1]
        assert per_frame == pytest.approx(kaldi[utt][0], abs=1e-4), utt
        hyps[utt] = [graph.words[w] for w in r.words]
    refs = read_text_archive(str(kaldi_digits / "data/test/text"))
    stats = compute_wer(refs, hyps)
    assert (stats.word_errs, stats.num_words, stats.num_absent) == (0, 30, 0)
    # not vacuous: flattening the acoustics leaves the graph alone to choose, and it errs
    flat = {u: [graph.words[w] for w in dec.decode(np.zeros_like(ll), ACWT, u).words]
            for u, ll in list(lls.items())[:10]}
    assert compute_wer({u: refs[u] for u in flat}, flat).word_errs >= 5


def test_score_sh_reproduces_kaldi_wer_files(gmm_test, kaldi_digits, repo_dir, env_with_path,
                                             tmp_path):
    tm, _, lls = gmm_test
    exp = tmp_path / "exp/gmm"
    dec = exp / "decode_test"
    dec.mkdir(parents=True)
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    data = tmp_path / "data/test"
    data.mkdir(parents=True)
    shutil.copy(kaldi_digits / "data/test/text", data / "text")
    keys = list(lls)
    for job, part in ((1, keys[:15]), (2, keys[15:])):
        with ArkScpWriter(str(dec / f"loglikes.{job}.ark"), str(dec / f"loglikes.{job}.scp")) as w:
            for k in part:
                w.write(k, lls[k])
    # one penalty, 0.0: Kaldi's local/score.sh that wrote the dir's wer_LMWT files
    p = subprocess.run([str(repo_dir / "steps/score.sh"), "--min-lmwt", "7", "--max-lmwt", "17",
                        "--word-ins-penalty", "0.0", "data/test",
                        str(kaldi_digits / "exp/mono/graph"), "exp/gmm/decode_test"],
                       cwd=tmp_path, env=env_with_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    kdec = kaldi_digits / "exp/mono/decode"
    for lmwt in range(7, 18):
        ours = (dec / f"wer_{lmwt}").read_text().splitlines(True)
        theirs = (kdec / f"wer_{lmwt}").read_text().splitlines(True)
        assert ours[0].startswith("compute_wer.py --text --mode=present ")
        assert ours[1:] == theirs[1:], lmwt
        assert (dec / f"scoring/{lmwt}.tra").read_text() == \
            (kdec / f"scoring/{lmwt}.tra").read_text(), lmwt
    assert (dec / "scoring/test_filt.txt").read_text() == \
        (kdec / "scoring/test_filt.txt").read_text()
    best = subprocess.run(f"grep WER {dec}/wer_* | {repo_dir}/utils/best_wer.sh", shell=True,
                          env=env_with_path, capture_output=True, text=True)
    assert best.stdout.endswith(":%WER 0.00 [ 0 / 30, 0 ins, 0 del, 0 sub ]\n")


def test_gmm_model_through_symlink_or_flattened(tmp_path, kaldi_digits, gmm_test):
    """exp/mono/final.mdl is a symlink to 40.mdl in a Kaldi dir: read through it. A copy that
    flattened the symlink holds the 6 bytes "40.mdl": rejected, naming the cause. Both built
    here, whatever ../shared holds."""
    tm, gmm, _ = gmm_test
    for kind in ("linked", "flat"):
        (tmp_path / kind).mkdir()
        shutil.copyfile(kaldi_digits / "exp/mono/40.mdl", tmp_path / kind / "40.mdl")
    os.symlink("40.mdl", tmp_path / "linked/final.mdl")
    (tmp_path / "flat/final.mdl").write_text("40.mdl")
    tm2, gmm2 = read_gmm_model(str(tmp_path / "linked/final.mdl"))
    # the same model as exp/mono_ali/final.mdl (align_si.sh copies exp/mono's final.mdl)
    assert (tm2.num_pdfs, gmm2.num_pdfs, gmm2.dim) == (tm.num_pdfs, gmm.num_pdfs, 39) == \
        (70, 70, 39)
    np.testing.assert_array_equal(tm2.tid2pdf, tm.tid2pdf)
    for attr in ("offsets", "gconsts", "weights_x"):
        np.testing.assert_array_equal(getattr(gmm2, attr), getattr(gmm, attr))
    with pytest.raises(FormatError, match="flat/final.mdl: not a binary Kaldi model.*symlink "
                                          "copied as a file"):
        read_gmm_model(str(tmp_path / "flat/final.mdl"))


def test_gmm_model_errors(tmp_path, kaldi_digits):
    data = (kaldi_digits / "exp/mono_ali/final.mdl").read_bytes()
    (tmp_path / "cut.mdl").write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="cut.mdl: unexpected end of file"):
        read_gmm_model(str(tmp_path / "cut.mdl"))
    with pytest.raises(FormatError, match="cannot read"):
        read_gmm_model(str(tmp_path / "absent.mdl"))


def test_bench_prints_json_lines(kaldi_digits, repo_dir, env_with_path):
    import json

    p = subprocess.run([sys.executable, str(repo_dir / "bench/decode.py"), "--repeats", "1"],
                       env=env_with_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    decodes = [r for r in rows if r["name"] == "decode"]
    assert {r["input"].split()[0].rstrip(",") for r in decodes} == {"gmm", "pseudo"}
    assert all(r["frames"] == 1073 and r["rtf"] > 0 and r["ratio_to_read"] > 0
               for r in decodes)
    assert all(r["wer"] == 0.0 for r in decodes if r["setting"] == "kaldi_nnet1_beam13")
    assert {r["name"] for r in rows} >= {"gmm_likes", "read", "decode", "lmwt_sweep"}


def test_bench_against_kaldis_decoder(kaldi_digits, repo_dir, env_with_path):
    """bench/decode.py --against-kaldi on kaldi_digits' monophone graph: Kaldi's own
    LatticeFasterDecoder (kaldi-hmm-gmm, with the kaldifst 1.7.17 it takes FSTs from, which
    install.sh puts in .venv/kaldifst-1.7.17) and the toolkit's give every utterance the same
    best path."""
    import json

    assert (repo_dir / ".venv/kaldifst-1.7.17/kaldifst").is_dir(), \
        "kaldifst 1.7.17 is missing from .venv/kaldifst-1.7.17: run ./install.sh"
    p = subprocess.run([sys.executable, str(repo_dir / "bench/decode.py"), "--against-kaldi",
                        "digits", "--repeats", "1"],
                       env=env_with_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["decoder"] for r in rows] == ["kaldi", "ours_search", "ours_lattice"]
    for r in rows:
        assert r["name"] == "vs_kaldi" and r["utts"] == 30 and r["frames"] == 1073
        assert r["all_identical"] and r["identical_to_kaldi"] == 30, r
        assert r["seconds"] > 0 and r["ratio_to_kaldi"] > 0 and r["peak_rss_mb"] > 0


def test_gmm_compute_likes_tool(gmm_test, kaldi_digits, repo_dir, env_with_path, tmp_path):
    import kaldiio

    _, _, lls = gmm_test
    tool = [sys.executable, str(repo_dir / "pybin/gmm_compute_likes.py")]
    p = subprocess.run(tool + ["exp/mono_ali/final.mdl", "data/test",
                               f"ark,scp:{tmp_path}/ll.ark,{tmp_path}/ll.scp"],
                       cwd=kaldi_digits, env=env_with_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    got = dict(kaldiio.load_scp(str(tmp_path / "ll.scp")))
    assert list(got) == list(lls)
    for k in got:
        np.testing.assert_array_equal(got[k], lls[k])
    # decoded with decode_faster_mapped.py at Kaldi's acoustic scale: Kaldi's own best paths
    p = subprocess.run([sys.executable, str(repo_dir / "pybin/decode_faster_mapped.py"),
                        "--inv-acoustic-scale=12", "--beam=13", "--max-active=7000",
                        "exp/mono_ali/final.mdl", "exp/mono/graph/HCLG.fst",
                        f"scp:{tmp_path}/ll.scp", f"ark,t:{tmp_path}/12.tra"],
                       cwd=kaldi_digits, env=env_with_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "12.tra").read_text() == \
        (kaldi_digits / "exp/mono/decode/scoring/12.tra").read_text()
    p = subprocess.run(tool + ["--delta-order=1", "exp/mono_ali/final.mdl", "data/test",
                               f"ark:{tmp_path}/x.ark"], cwd=kaldi_digits, env=env_with_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "have dim 26" in p.stderr and "expects 39" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "x.ark").exists()
