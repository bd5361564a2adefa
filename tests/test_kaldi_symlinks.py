"""Kaldi dirs whose ``final.mdl`` files are symbolic links, as Kaldi's scripts leave them
(``exp/mono/final.mdl -> 40.mdl``; an alignment dir linking into its system's dir,
``exp/tri1_ali/final.mdl -> ../tri1/final.mdl``), and the same dirs after a copy that flattened
the links (a few-byte file holding the target's name) or dropped their targets. All built here
in tmp_path from kaldi_digits' files: nothing depends on how ../shared was copied."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridasr.align.importer import import_alignments
from hybridasr.kaldi.io.intvec import read_int_vector_scp as load_targets
from hybridasr.errors import FormatError, HybridAsrError
from hybridasr.recipe.kaldi_dir import check_kaldi_dir

ARGS = dict(train="data/train", test="data/test", lang="data/lang", ali="exp/tri1_ali",
            graph="exp/tri1/graph")


def make_linked_kaldi_dir(root: Path, kaldi_digits: Path, flattened: bool = False) -> Path:
    """An s5 dir: data/{train,test,lang} and mfcc/ from kaldi_digits; exp/tri1 with 40.mdl,
    ``final.mdl -> 40.mdl`` and a graph dir without ``num_pdfs`` (so the graph's pdf count comes
    from ``exp/tri1/final.mdl``, through the link); exp/tri1_ali with
    ``final.mdl -> ../tri1/final.mdl`` (a chain of two relative links) and ``tree -> ../tri1/tree``.
    ``flattened``: each link is a file holding its target's name instead."""
    s5 = root / "s5"
    for d in ("data/train", "data/test", "data/lang", "exp/tri1/graph", "exp/tri1_ali"):
        (s5 / d).mkdir(parents=True)
    for d in ("train", "test"):
        for name in ("utt2spk", "spk2utt", "text", "wav.scp", "feats.scp", "cmvn.scp"):
            shutil.copyfile(kaldi_digits / "data" / d / name, s5 / "data" / d / name)
    for name in ("words.txt", "phones.txt"):
        shutil.copyfile(kaldi_digits / "data/lang" / name, s5 / "data/lang" / name)
    os.symlink(kaldi_digits / "mfcc", s5 / "mfcc")  # the scp files' ark paths are mfcc/...
    tri1 = s5 / "exp/tri1"
    shutil.copyfile(kaldi_digits / "exp/mono/40.mdl", tri1 / "40.mdl")
    shutil.copyfile(kaldi_digits / "exp/mono/tree", tri1 / "tree")
    os.symlink(kaldi_digits / "exp/mono/graph/HCLG.fst", tri1 / "graph/HCLG.fst")
    shutil.copyfile(kaldi_digits / "exp/mono/graph/words.txt", tri1 / "graph/words.txt")
    ali = s5 / "exp/tri1_ali"
    for name in ("ali.1.gz", "num_jobs", "phones.txt"):
        shutil.copyfile(kaldi_digits / "exp/mono_ali" / name, ali / name)
    for link, target in ((tri1 / "final.mdl", "40.mdl"), (ali / "final.mdl", "../tri1/final.mdl"),
                         (ali / "tree", "../tri1/tree")):
        if flattened:
            link.write_text(target)
        else:
            os.symlink(target, link)
    return s5


@pytest.fixture
def linked(tmp_path, kaldi_digits) -> Path:
    return make_linked_kaldi_dir(tmp_path, kaldi_digits)


def _check_cli(s5: Path, repo_dir, env, *extra, cwd=None):
    return subprocess.run([sys.executable, str(repo_dir / "pybin/check_kaldi_dir.py"),
                           "--ali=exp/tri1_ali", "--graph=exp/tri1/graph", *extra, str(s5)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_check_kaldi_dir_follows_the_links(linked, repo_dir, env_with_path, tmp_path):
    assert os.readlink(linked / "exp/tri1_ali/final.mdl") == "../tri1/final.mdl"
    assert not (linked / "exp/tri1/graph/num_pdfs").exists()
    r = _check_cli(linked, repo_dir, env_with_path, "--use-kaldi-feats=true")
    assert r.returncode == 0, r.stderr
    facts = json.loads(r.stdout)
    assert facts["num_pdfs_ali"] == facts["num_pdfs_graph"] == 70
    # the Kaldi dir itself reached through a link, given relative to the cwd
    (tmp_path / "work").mkdir()
    os.symlink(linked, tmp_path / "work/kaldi")
    r = subprocess.run([sys.executable, str(repo_dir / "pybin/check_kaldi_dir.py"),
                        "--ali=exp/tri1_ali", "--graph=exp/tri1/graph", "kaldi"],
                       capture_output=True, text=True, env=env_with_path, cwd=tmp_path / "work",
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["num_pdfs_graph"] == 70


def test_import_ali_through_links_copies_the_model(linked, repo_dir, env_with_path,
                                                   kaldi_digits, tmp_path):
    """steps/import_ali.sh on exp/tri1_ali: the copy of final.mdl in the output is the model
    itself (not a link that would dangle there), and the targets equal those imported from
    kaldi_digits' own exp/mono_ali."""
    r = subprocess.run([str(repo_dir / "steps/import_ali.sh"), "exp/tri1_ali", "data/train",
                        "exp/ali_train"], cwd=linked, env=env_with_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = linked / "exp/ali_train"
    model = kaldi_digits / "exp/mono/40.mdl"
    for name, src in (("final.mdl", model), ("tree", kaldi_digits / "exp/mono/tree")):
        assert not os.path.islink(out / name) and (out / name).read_bytes() == src.read_bytes()
    ref = tmp_path / "ref"
    cwd = os.getcwd()
    try:
        os.chdir(kaldi_digits)
        report = import_alignments("exp/mono_ali", "data/train", str(ref))
        b = load_targets(str(ref / "targets.scp"))
        os.chdir(linked)  # the scp's ark paths are relative to the s5 dir, as in Kaldi
        a = load_targets("exp/ali_train/targets.scp")
    finally:
        os.chdir(cwd)
    assert report.utterances_imported == 120 and len(a) == 120
    assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_flattened_links_are_named(tmp_path, kaldi_digits, repo_dir, env_with_path):
    """Both flattened models (the alignment dir's and the graph's system's) named in one error,
    with the file the name points to."""
    s5 = make_linked_kaldi_dir(tmp_path, kaldi_digits, flattened=True)
    assert (s5 / "exp/tri1/final.mdl").read_text() == "40.mdl"
    with pytest.raises(HybridAsrError) as e:
        check_kaldi_dir(str(s5), **ARGS)
    msg = str(e.value)
    assert "exp/tri1_ali/final.mdl: not a Kaldi model" in msg and "'../tri1/final.mdl'" in msg
    assert "exp/tri1/final.mdl: not a Kaldi model" in msg and "'40.mdl'" in msg
    assert msg.count("symbolic link copied as a file") == 2
    r = _check_cli(s5, repo_dir, env_with_path)
    assert r.returncode == 1 and "symbolic link copied as a file" in r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(FormatError, match=r"tri1_ali/final\.mdl: not a Kaldi model"):
        import_alignments(str(s5 / "exp/tri1_ali"), str(s5 / "data/train"), str(tmp_path / "o"))


def test_dangling_link_is_named(linked, tmp_path, repo_dir, env_with_path):
    """Only exp/tri1_ali copied, without exp/tri1: its final.mdl is a link to nothing. The
    errors say so (the file is listed by ls, so "missing" alone would mislead)."""
    shutil.rmtree(linked / "exp/tri1")
    with pytest.raises(HybridAsrError, match=r"alignment model: .*tri1_ali/final\.mdl is a "
                                             r"symbolic link to '\.\./tri1/final\.mdl', which "
                                             r"does not exist"):
        check_kaldi_dir(str(linked), **dict(ARGS, graph="data/lang"))
    with pytest.raises(FormatError, match=r"tri1_ali/final\.mdl is a symbolic link to "
                                          r"'\.\./tri1/final\.mdl', which does not exist"):
        import_alignments(str(linked / "exp/tri1_ali"), str(linked / "data/train"),
                          str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()
