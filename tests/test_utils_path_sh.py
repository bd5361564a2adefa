"""path.sh (toolkit root) and egs/digits/s5/path.sh: HYBRIDASR_ROOT, PATH, set -u safety."""
from __future__ import annotations

import os
import subprocess

import pytest

_CLEAN = ("unset HYBRIDASR_ROOT PYTHONPATH VIRTUAL_ENV KALDI_ROOT PS1 "
          "VIRTUAL_ENV_DISABLE_PROMPT PYTHONHOME _OLD_VIRTUAL_PATH 2>/dev/null || true; ")


def _source(cwd, how: str, pre: str = "") -> dict:
    """Sources a path.sh under set -euo pipefail in a clean environment; returns what it set."""
    script = (_CLEAN + "set -euo pipefail; " + pre + how + "\n"
              'echo "ROOT=$HYBRIDASR_ROOT"; echo "PYTHONPATH=$PYTHONPATH"; echo "PATH=$PATH"; '
              'echo "LC_ALL=$LC_ALL"; command -v compute_mfcc_feats.py; echo END')
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    r = subprocess.run(["bash", "-c", script], cwd=str(cwd), env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "END"
    out = dict(line.split("=", 1) for line in lines if "=" in line)
    out["tool"] = lines[-2]
    return out


def _check(out: dict, repo):
    root = str(repo.resolve())
    assert out["ROOT"] == root
    assert out["PYTHONPATH"] == root  # no trailing ':' when PYTHONPATH was unset
    assert out["PATH"].split(":")[:3] == [f"{root}/pybin", f"{root}/utils", f"{root}/utils/data"]
    assert out["LC_ALL"] == "C"
    assert out["tool"] == f"{root}/pybin/compute_mfcc_feats.py"


def test_root_path_sh_from_anywhere(repo_dir, tmp_path):
    _check(_source(tmp_path, f". {repo_dir}/path.sh"), repo_dir)
    _check(_source(repo_dir, ". ./path.sh"), repo_dir)


def test_recipe_path_sh(repo_dir):
    _check(_source(repo_dir / "egs/digits/s5", ". ./path.sh"), repo_dir)


def test_steps_source_it_through_the_recipes_symlinks(repo_dir):
    """steps/x.sh runs '. $(dirname $0)/../path.sh' with $0 = steps/x.sh in the recipe dir,
    where steps -> ../../../steps: the file is the toolkit's path.sh (the kernel follows the
    link), and a logical 'cd steps/..' would wrongly give the recipe dir."""
    s5 = repo_dir / "egs/digits/s5"
    assert os.path.islink(s5 / "steps")
    _check(_source(s5, ". steps/../path.sh"), repo_dir)
    _check(_source(s5, ". steps/nnet/../../path.sh"), repo_dir)


def test_symlinked_recipe_dir(repo_dir, tmp_path):
    """A recipe dir reached through a symlink (e.g. ~/exp/digits -> .../egs/digits/s5)."""
    (tmp_path / "exp").mkdir()
    link = tmp_path / "exp" / "digits"
    link.symlink_to(repo_dir / "egs/digits/s5")
    _check(_source(link, ". ./path.sh", pre=f"cd {link}; "), repo_dir)


def test_existing_pythonpath_kept_and_kaldi_root_under_set_e(repo_dir, tmp_path):
    kaldi = tmp_path / "kaldi"
    (kaldi / "src" / "featbin").mkdir(parents=True)  # most bin dirs absent, no openfst
    out = _source(tmp_path, f". {repo_dir}/path.sh",
                  pre=f"export PYTHONPATH=/somewhere KALDI_ROOT={kaldi}; ")
    root = str(repo_dir.resolve())
    assert out["PYTHONPATH"] == f"{root}:/somewhere"
    assert out["PATH"].split(":")[-1] == f"{kaldi}/src/featbin"


def test_explicit_hybridasr_root_wins(repo_dir, tmp_path):
    out = _source(tmp_path, f". {repo_dir}/egs/digits/s5/path.sh",
                  pre=f"export HYBRIDASR_ROOT={repo_dir.resolve()}; ")
    _check(out, repo_dir)


@pytest.mark.parametrize("script", ["path.sh", "egs/digits/s5/path.sh"])
def test_bash_syntax(repo_dir, script):
    assert subprocess.run(["bash", "-n", str(repo_dir / script)]).returncode == 0


def _recipe_copy(repo_dir, where, link_steps: bool):
    """The recipe's files copied to ``where`` (not a symlink: a dir copied elsewhere), its
    steps/ a link into the toolkit as Kaldi's recipes have it, or no steps/ at all."""
    where.mkdir(parents=True)
    (where / "path.sh").write_text((repo_dir / "egs/kaldi_dir/s5/path.sh").read_text())
    if link_steps:
        (where / "steps").symlink_to(repo_dir.resolve() / "steps")
    return where


def test_copied_recipe_finds_the_toolkit_through_its_steps_link(repo_dir, tmp_path):
    """A recipe dir copied out of the toolkit (not three levels below it) sources the toolkit
    its steps/ link points into."""
    copy = _recipe_copy(repo_dir, tmp_path / "a" / "b" / "myrecipe", link_steps=True)
    _check(_source(copy, ". ./path.sh"), repo_dir)


def test_copied_recipe_without_toolkit_says_what_to_set(repo_dir, tmp_path):
    copy = _recipe_copy(repo_dir, tmp_path / "x" / "y" / "z" / "s5", link_steps=False)
    r = subprocess.run(["bash", "-c", _CLEAN + "set -euo pipefail; . ./path.sh; echo AFTER"],
                       cwd=str(copy), env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0
    assert "AFTER" not in r.stdout
    assert "cannot find the hybridasr toolkit" in r.stderr
    assert "HYBRIDASR_ROOT=" in r.stderr


def test_recipe_path_sh_copies_are_one_file(repo_dir):
    texts = {p: (repo_dir / p).read_text() for p in
             ("egs/kaldi_dir/s5/path.sh", "egs/digits/s5/path.sh", "egs/fsdd/s5/path.sh")}
    assert len(set(texts.values())) == 1, list(texts)
