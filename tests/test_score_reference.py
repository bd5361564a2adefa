"""The scoring reference against the graph's words (hybridasr/decode/reference.py,
pybin/score_reference.py, steps/score.sh --ref-normalize and Kaldi's local/wer_*_filter hooks),
on kaldi_polish, whose text is in its authors' spelling ("Oprócz", "dysku,") while its lexicon
holds normalised words."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

from hybridasr.decode.reference import read_reference
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.kaldi.symbol_table import read_symbol_ids


def test_counts_and_normalises_polish_references(kaldi_polish):
    vocab = read_symbol_ids(str(kaldi_polish / "exp/tri1/graph/words.txt"))
    test = read_text_archive(str(kaldi_polish / "data/test/text"))
    given, rep = read_reference(test, vocab)
    assert given == test  # as given: Kaldi's scoring
    assert (rep.words, rep.in_vocabulary, rep.normalizable, rep.punctuation, rep.unknown) == (
        152, 116, 32, 0, 4)
    assert rep.outside_vocabulary == 36 and rep.examples["Oprócz"] == "oprócz"
    norm, rep2 = read_reference(test, vocab, normalize=True)
    assert rep2.as_dict() == dict(rep.as_dict(), normalized=True)
    words = [w for ws in norm.values() for w in ws]
    assert len(words) == 152 and sum(w not in vocab for w in words) == 4
    assert norm["mankevich-183940_2991"][0] == "oprócz"
    # the training text has tokens of punctuation only (" , "): dropped when normalised
    train = read_text_archive(str(kaldi_polish / "data/train/text"))
    norm, rep = read_reference(train, vocab, normalize=True)
    assert rep.punctuation > 0 and rep.normalizable > 1000
    words = [w for ws in norm.values() for w in ws]
    assert len(words) == rep.words - rep.punctuation
    assert sum(w not in vocab for w in words) == rep.unknown
    assert not any(w in {",", ".", "-", ";"} for w in words)


def _score(cwd, env, repo_dir, kaldi_polish, *opts):
    # one penalty, 0.0: Kaldi's local/score.sh, which wrote the dir's wer_LMWT files
    cmd = [f"{repo_dir}/steps/score.sh", "--min-lmwt", "7", "--max-lmwt", "17",
           "--word-ins-penalty", "0.0", *opts,
           str(kaldi_polish / "data/test"), str(kaldi_polish / "exp/tri1/graph"), "dec"]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    wer = {}
    for k in range(7, 18):
        m = re.search(r"%WER \S+ \[ (\d+) / (\d+)", (cwd / f"dec/wer_{k}").read_text())
        wer[k] = (int(m.group(1)), int(m.group(2)))
    return wer, p.stderr


def test_score_sh_counts_normalises_and_runs_kaldis_filters(tmp_path, kaldi_polish, repo_dir,
                                                             env_with_path):
    (tmp_path / "dec").mkdir()
    shutil.copyfile(kaldi_polish / "exp/tri1/decode/lat.1.gz", tmp_path / "dec/lat.1.gz")
    kaldi = {k: tuple(int(x) for x in re.search(
        r"\[ (\d+) / (\d+)", (kaldi_polish / f"exp/tri1/decode/wer_{k}").read_text()).groups())
        for k in range(7, 18)}
    # the default: Kaldi's own scoring of its own lattices, and a warning with the counts
    raw, err = _score(tmp_path, env_with_path, repo_dir, kaldi_polish)
    assert raw == kaldi, (raw, kaldi)
    assert "warning: 36 of the 152 reference words are not in" in err
    assert "32 of them only by case or punctuation" in err
    rep = json.loads((tmp_path / "dec/scoring/reference.json").read_text())
    assert rep["normalized"] is False and rep["normalizable"] == 32
    # --ref-normalize true: the same hypotheses against the normalised words
    norm, err = _score(tmp_path, env_with_path, repo_dir, kaldi_polish, "--ref-normalize", "true")
    assert "warning: 36 of" not in err
    assert all(norm[k][1] == 152 and norm[k][0] <= raw[k][0] for k in norm)
    assert min(e for e, _ in norm.values()) < min(e for e, _ in raw.values())
    ref = read_text_archive(str(tmp_path / "dec/scoring/test_filt.txt"))
    assert ref["mankevich-183940_2991"][0] == "oprócz"
    # Kaldi's hook: the recipe's local/wer_output_filter filters reference and hypotheses
    (tmp_path / "local").mkdir()
    hook = tmp_path / "local/wer_output_filter"
    hook.write_text("#!/bin/sh\nexec tr 'A-Z' 'a-z'\n")
    hook.chmod(0o755)
    lowered, err = _score(tmp_path, env_with_path, repo_dir, kaldi_polish)
    rep = json.loads((tmp_path / "dec/scoring/reference.json").read_text())
    assert rep["in_vocabulary"] == 116 + 13 and "warning: 23 of the 152" in err
    assert all(lowered[k][0] <= raw[k][0] for k in lowered)
    # a bad value is refused (parse_options.sh)
    p = subprocess.run([f"{repo_dir}/steps/score.sh", "--ref-normalize", "yes",
                        str(kaldi_polish / "data/test"), str(kaldi_polish / "exp/tri1/graph"),
                        "dec"], cwd=tmp_path, env=env_with_path, capture_output=True, text=True)
    assert p.returncode != 0 and "--ref-normalize yes" in p.stderr
