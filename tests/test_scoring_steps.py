"""Scoring scripts: utils/int2sym.pl, utils/sym2int.pl, utils/best_wer.sh, and steps/score.sh
on an embedded-decoder decode dir (pseudo log-likelihoods from Kaldi's alignments of
kaldi_digits' training set, an empty utterance, a missing one)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from hybridasr.kaldi.io.table import read_text_archive


def _sh(cmd, env, cwd, stdin=None):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_int2sym_and_sym2int(kaldi_digits, repo_dir, env_with_path, tmp_path):
    words = kaldi_digits / "exp/mono/graph/words.txt"
    p = _sh(f"{repo_dir}/utils/int2sym.pl -f 2- {words} exp/mono/decode/scoring/10.tra",
            env_with_path, kaldi_digits)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines(True)[0] == "jackson_4_0 zero \n"  # Kaldi: a space per field
    back = _sh(f"{repo_dir}/utils/sym2int.pl -f 2- {words}", env_with_path, tmp_path, p.stdout)
    tra = (kaldi_digits / "exp/mono/decode/scoring/10.tra").read_text().splitlines()
    assert back.stdout.splitlines() == [line.rstrip() for line in tra]
    p = _sh(f"echo 'u1 zero bogus' | {repo_dir}/utils/sym2int.pl -f 2- {words}",
            env_with_path, tmp_path)
    assert p.returncode != 0 and "bogus" in p.stderr
    p = _sh(f"echo 'u1 zero bogus' | {repo_dir}/utils/sym2int.pl --map-oov '<UNK>' -f 2- "
            f"{words}", env_with_path, tmp_path)
    assert p.returncode == 0 and p.stdout == "u1 12 2\n"
    p = _sh(f"echo 'u1 7 99' | {repo_dir}/utils/int2sym.pl -f 2- {words}", env_with_path,
            tmp_path)
    assert p.returncode != 0 and "99" in p.stderr
    p = _sh(f"echo '3 u 7' | {repo_dir}/utils/int2sym.pl -f 1 {words}", env_with_path, tmp_path)
    assert p.stdout == "eight u 7 \n"


def test_best_wer_picks_lowest(kaldi_digits, repo_dir, env_with_path, tmp_path):
    lines = ("d/wer_7:%WER 12.50 [ 5 / 40, 1 ins, 2 del, 2 sub ]\n"
             "d/wer_8:%WER 7.50 [ 3 / 40, 0 ins, 2 del, 1 sub ]\n"
             "d/wer_9:%WER 7.50 [ 3 / 40, 1 ins, 1 del, 1 sub ]\n"
             "d/wer_10:%WER 10.00 [ 4 / 40, 0 ins, 2 del, 2 sub ]\n")
    p = _sh(f"{repo_dir}/utils/best_wer.sh", env_with_path, tmp_path, lines)
    assert p.returncode == 0 and p.stdout == lines.splitlines(True)[1]
    p = _sh(f"grep WER exp/mono/decode/wer_* | {repo_dir}/utils/best_wer.sh", env_with_path,
            kaldi_digits)
    assert p.stdout.endswith(":%WER 0.00 [ 0 / 30, 0 ins, 0 del, 0 sub ]\n")
    assert _sh(f"{repo_dir}/utils/best_wer.sh", env_with_path, tmp_path, "").stdout == ""


def test_score_sh_embedded(kaldi_digits, repo_dir, env_with_path, tmp_path):
    import kaldiio

    from hybridasr.decode.pseudo_loglikes import pseudo_loglikes
    from hybridasr.kaldi import transition_model as tm_mod
    from hybridasr.kaldi.io.table_writer import ArkScpWriter

    tm = tm_mod.read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    alis = {}
    with kaldiio.ReadHelper(f"ark:gunzip -c {kaldi_digits}/exp/mono_ali/ali.1.gz |") as r:
        for key, ali in r:
            alis[key] = np.asarray(ali)
    keys = sorted(alis)[:21]
    exp = tmp_path / "exp/dnn"
    dec = exp / "decode"
    dec.mkdir(parents=True)
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    data = tmp_path / "data"
    data.mkdir()
    text = read_text_archive(str(kaldi_digits / "data/train/text"))
    (data / "text").write_text("".join(f"{k} {' '.join(text[k])}\n" for k in keys))
    # job 1: 10 utterances, the first one with no frames; job 2: 10; keys[20] is missing
    for job, part in ((1, keys[:10]), (2, keys[10:20])):
        with ArkScpWriter(str(dec / f"loglikes.{job}.ark"), str(dec / f"loglikes.{job}.scp")) as w:
            for k in part:
                ali = alis[k][:0] if k == keys[0] else alis[k]
                w.write(k, pseudo_loglikes(ali, tm.tid2pdf, tm.num_pdfs))
    p = _sh(f"{repo_dir}/steps/score.sh --min-lmwt 9 --max-lmwt 11 {data} "
            f"{kaldi_digits}/exp/mono/graph {dec}", env_with_path, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    # lattices made from the log-likelihoods: every (LM weight, penalty 0.0/0.5/1.0)
    for lmwt in (9, 10, 11):
        for wip in ("0.0", "0.5", "1.0"):
            lines = (dec / f"wer_{lmwt}_{wip}").read_text().splitlines()
            assert lines[-3:] == ["%WER 5.00 [ 1 / 20, 0 ins, 1 del, 0 sub ] [PARTIAL]",
                                  "%SER 5.00 [ 1 / 20 ]",
                                  "Scored 20 sentences, 1 not present in hyp."]
            tra = read_text_archive(str(dec / f"scoring/penalty_{wip}/{lmwt}.tra"))
            assert tra[keys[0]] == [] and len(tra) == 20
    assert (dec / "scoring/test_filt.txt").exists()
    assert "best: " in p.stdout and "%WER 5.00" in p.stdout
    p = _sh(f"grep WER {dec}/wer_* | {repo_dir}/utils/best_wer.sh", env_with_path, tmp_path)
    assert "%WER 5.00 [ 1 / 20" in p.stdout
    # scoring that dies at one LM weight (a kill, a full disk) leaves the complete set of
    # before and no partial one: the recipe's "already scored" needs every wer file
    before = {f.name: f.read_text() for f in dec.glob("wer_*")}
    shim = tmp_path / "shim"
    shim.mkdir()
    # (all LM weights are scored by one compute_wer_sweep.py: it writes them, then dies)
    (shim / "compute_wer_sweep.py").write_text(
        "#!/bin/bash\n"
        + shutil.which("compute_wer_sweep.py", path=env_with_path["PATH"]) + " \"$@\"\n"
        "exit 1\n")
    (shim / "compute_wer_sweep.py").chmod(0o755)
    env = dict(env_with_path, PATH=f"{shim}:{env_with_path['PATH']}")
    p = _sh(f"{repo_dir}/steps/score.sh --min-lmwt 7 --max-lmwt 11 {data} "
            f"{kaldi_digits}/exp/mono/graph {dec}", env, tmp_path)
    assert p.returncode != 0 and "scoring failed; see" in p.stderr
    assert "score_sweep.log" in p.stderr
    assert {f.name: f.read_text() for f in dec.glob("wer_*")} == before
    assert sorted(f.name for f in dec.glob("wer_*")) == sorted(
        f"wer_{lmwt}_{wip}" for lmwt in (9, 10, 11) for wip in ("0.0", "0.5", "1.0"))
    # penalties given with 1-best re-decoding (no lattices to add them to): an error; the
    # default there is penalty 0.0 alone (wer_LMWT, as Kaldi's local/score.sh)
    one = tmp_path / "exp/dnn/decode_1best"
    shutil.copytree(dec, one, ignore=shutil.ignore_patterns("lat.*", "wer_*", "scoring"))
    for f in one.glob("loglikes.*.scp"):
        f.write_text(f.read_text().replace(str(dec), str(one)))
    p = _sh(f"{repo_dir}/steps/score.sh --lattices false --word-ins-penalty 0.0,0.5 "
            f"--min-lmwt 10 --max-lmwt 10 {data} {kaldi_digits}/exp/mono/graph {one}",
            env_with_path, tmp_path)
    assert p.returncode != 0 and "--word-ins-penalty needs lattices" in p.stderr
    p = _sh(f"{repo_dir}/steps/score.sh --lattices false --min-lmwt 10 --max-lmwt 10 {data} "
            f"{kaldi_digits}/exp/mono/graph {one}", env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert [f.name for f in one.glob("wer_*")] == ["wer_10"]
    assert (one / "wer_10").read_text().splitlines()[-3:] == lines[-3:]
    # a graph dir without words.txt: a clear message
    g = tmp_path / "graph"
    g.mkdir()
    shutil.copy(kaldi_digits / "exp/mono/graph/HCLG.fst", g / "HCLG.fst")
    p = _sh(f"{repo_dir}/steps/score.sh {data} {g} {dec}", env_with_path, tmp_path)
    assert p.returncode != 0 and f"{g}/words.txt" in p.stderr
