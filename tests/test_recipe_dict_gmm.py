"""A Kaldi dir with a GMM but no lang dir (only data/local/dict beside the data dirs, the GMM and
its graph): ``--lang data/local/dict`` with a GMM ``--ali``. Stage 0 makes data/lang from the dict
dir with utils/prepare_lang.sh (Kaldi's lang dir, byte for byte) after checking that its phones
are the alignment model's, with word positions or without (as the GMM's own lang dir was made);
a dict dir whose phones differ is refused in stage 0, naming the model's phones file."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from hybridasr.errors import HybridAsrError
from hybridasr.kaldi.symbol_table import phone_ids
from hybridasr.recipe.dict_phones import check_dict_fits_model, dict_phone_ids
from hybridasr.recipe.kaldi_dir import check_kaldi_dir
from test_recipe_e2e import make_recipe_copy

WER = re.compile(r"%WER (\d+\.\d\d) \[ (\d+) / (\d+),")
DICT = dict(train="data/train", test="data/test", lang="data/local/dict", ali="exp/mono_ali",
            graph="exp/mono/graph")


def _tiny(shared_dir):
    path = shared_dir / "data" / "kaldi_tiny_1spk"
    assert path.is_dir(), path
    return path


def lang_less_copy(src, dst):
    """A writable copy of the Kaldi dir ``src`` without its lang dirs (data/lang and Kaldi's
    data/local/lang, data/local/tmp): data/local/dict, the data dirs and exp/ only. A
    ``final.mdl`` flattened to a file naming its target becomes the symlink Kaldi made."""
    shutil.copytree(src, dst, symlinks=True)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
    for name in ("data/lang", "data/local/lang", "data/local/tmp"):
        shutil.rmtree(dst / name, ignore_errors=True)
    for mdl in dst.glob("exp/*/final.mdl"):
        if not mdl.is_symlink() and mdl.stat().st_size < 64:
            target = mdl.read_text().strip()
            if (mdl.parent / target).is_file():
                mdl.unlink()
                os.symlink(target, mdl)
    assert not (dst / "data/lang").exists() and (dst / "data/local/dict/lexicon.txt").is_file()
    return dst


def rename_phone(dict_dir, old, new):
    """The dict dir with phone ``old`` called ``new`` everywhere (a valid dict dir still)."""
    for name in ("nonsilence_phones.txt", "lexicon.txt", "lexiconp.txt"):
        p = dict_dir / name
        if p.exists():
            lines = [" ".join(new if t == old else t for t in line.split(" "))
                     for line in p.read_text().split("\n")]
            p.write_text("\n".join(lines))


def listing(d):
    return sorted((str(p.relative_to(d)), p.stat().st_size if p.is_file() else -1)
                  for p in d.rglob("*"))


@pytest.mark.parametrize("name,ali", [("kaldi_digits", "exp/mono_ali"),
                                      ("kaldi_tiny_1spk", "exp/mono_ali"),
                                      ("kaldi_polish", "exp/mono_ali"),
                                      ("kaldi_hindi_sat", "exp/tri1_ali")])
def test_real_dict_dirs_fit_their_gmms(shared_dir, name, ali):
    """Each real dir's data/local/dict gives (as prepare_lang.sh) the phones of the data/lang
    Kaldi made from it; the check accepts it beside the GMM (the old check wanted words.txt)."""
    kaldi = shared_dir / "data" / name
    assert dict_phone_ids(str(kaldi / "data/local/dict")) == \
        phone_ids(str(kaldi / "data/lang/phones.txt"))
    facts = check_kaldi_dir(str(kaldi), **dict(DICT, ali=ali, graph=f"{ali[:-4]}/graph"))
    assert facts["lang_kind"] == "dict"
    assert facts["num_pdfs_ali"] == facts["num_pdfs_graph"] > 0


def test_missing_lang_dir_names_the_dict_dir(tmp_path, shared_dir):
    kaldi = lang_less_copy(_tiny(shared_dir), tmp_path / "kaldi")
    with pytest.raises(HybridAsrError) as e:
        check_kaldi_dir(str(kaldi), **dict(DICT, lang="data/lang"))
    assert "missing lang dir word list" in str(e.value)
    assert "give --lang data/local/dict" in str(e.value)


def test_recipe_makes_kaldis_lang_dir_and_reaches_a_wer(tmp_path, repo_dir, shared_dir,
                                                        env_with_path):
    src = _tiny(shared_dir)
    kaldi = lang_less_copy(src, tmp_path / "kaldi")
    assert os.readlink(kaldi / "exp/mono/final.mdl") == "40.mdl"
    before = listing(kaldi)
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--lang", "data/local/dict",
         "--ali", "exp/mono_ali", "--graph", "exp/mono/graph", "--nj", "1",
         "--speed-perturb", "false", "--model-config", "conf/tiny_model.conf",
         "--schedule-config", "conf/tiny_schedule.conf"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    # data/lang is Kaldi's own, made from the dict dir (OOV entry found in the lexicon)
    for name in ("phones.txt", "words.txt", "oov.txt", "topo"):
        assert (s5 / "data/lang" / name).read_bytes() == (src / "data/lang" / name).read_bytes()
    assert json.loads((s5 / "data/kaldi_dir.json").read_text())["lang_kind"] == "dict"
    # stage 2 imported the GMM alignment against data/lang
    assert "steps/import_ali.sh --lang data/lang" in out
    report = json.loads((s5 / "exp/ali_train/import_report.json").read_text())
    assert report["utterances_imported"] == 10 and report["num_pdfs"] == 70
    # decoded with the given graph (its own words.txt): a WER over the 30 test words
    assert f"decode data/test with {kaldi}/exp/mono/graph" in out
    wers = [WER.search(w.read_text()) for w in (s5 / "exp/blstm/decode_test").glob("wer_*")]
    assert wers and all(m and int(m.group(3)) == 30 for m in wers)
    assert "hybrid model:  %WER" in out
    assert listing(kaldi) == before  # the Kaldi dir was only read


def test_dict_with_other_phones_fails_stage_0(tmp_path, repo_dir, shared_dir, env_with_path):
    kaldi = lang_less_copy(_tiny(shared_dir), tmp_path / "kaldi")
    rename_phone(kaldi / "data/local/dict", "ah", "ax")
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--lang", "data/local/dict",
         "--ali", "exp/mono_ali", "--graph", "exp/mono/graph", "--stop-stage", "0"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-4000:]
    assert "stage 0 failed" in out
    assert f"{kaldi}/exp/mono_ali/phones.txt" in out and f"{kaldi}/data/local/dict" in out
    assert "phone id 11 is 'ax_B' in the dict dir's, 'ah_B' in the model's" in out
    assert not (s5 / "data/lang").exists()


def test_without_phones_txt_the_models_topology_is_checked(tmp_path, shared_dir):
    """No phones.txt beside final.mdl: the dict's phone count is checked against the model's
    topology (a phone removed from the dict: 86 phones, the model has 90)."""
    kaldi = lang_less_copy(_tiny(shared_dir), tmp_path / "kaldi")
    os.unlink(kaldi / "exp/mono_ali/phones.txt")
    d = kaldi / "data/local/dict"
    (d / "nonsilence_phones.txt").write_text(
        "".join(f"{x}\n" for x in (d / "nonsilence_phones.txt").read_text().split() if x != "v"))
    for name in ("lexicon.txt", "lexiconp.txt"):
        lines = (d / name).read_text().splitlines()
        (d / name).write_text("".join(f"{x}\n" for x in lines if " v" not in x
                                      and "\tv" not in x))
    with pytest.raises(HybridAsrError) as e:
        check_kaldi_dir(str(kaldi), **DICT)
    msg = str(e.value)
    assert f"{kaldi}/exp/mono_ali/final.mdl (no phones.txt beside it)" in msg
    assert "its topology has 90 phones (ids 1..90), the dict dir gives 86" in msg


def test_position_independent_gmm_fits(tmp_path, shared_dir):
    """A model whose phones are those of the dict without word positions (Kaldi's
    --position-dependent-phones false, as its yesno recipe makes its lang dir) fits: the check
    says which kind, by the ali dir's phones.txt or else by the model's topology; other
    phones are refused either way."""
    dict_dir = str(_tiny(shared_dir) / "data/local/dict")
    flat = dict_phone_ids(dict_dir, position_dependent=False)
    assert len(flat) == 22 and len(dict_phone_ids(dict_dir)) == 90
    ali_dir = tmp_path / "ali"  # no phones.txt: the model's topology only
    ali_dir.mkdir()
    assert check_dict_fits_model(dict_dir, str(ali_dir), range(1, 91)) is True
    assert check_dict_fits_model(dict_dir, str(ali_dir), sorted(flat.values())) is False
    with pytest.raises(HybridAsrError, match=r"its topology has 21 phones"):
        check_dict_fits_model(dict_dir, str(ali_dir), sorted(flat.values())[:-1])
    (ali_dir / "phones.txt").write_text("<eps> 0\n" + "".join(
        f"{p} {i}\n" for p, i in sorted(flat.items(), key=lambda x: x[1])) + "#0 23\n")
    assert check_dict_fits_model(dict_dir, str(ali_dir), []) is False
    (ali_dir / "phones.txt").write_text((ali_dir / "phones.txt").read_text().replace(
        "sil 1", "SIL 1"))
    with pytest.raises(HybridAsrError, match=r"phone id 1 is 'sil' in the dict dir's, 'SIL'"):
        check_dict_fits_model(dict_dir, str(ali_dir), [])


def test_recipe_makes_a_position_independent_lang_dir_for_such_a_gmm(
        tmp_path, repo_dir, shared_dir, env_with_path):
    """Stage 0 with --lang data/local/dict beside a GMM of position-independent phones (a lang
    dir made from that dict dir with --position-dependent-phones false, its monophone model):
    data/lang is made the same way, the phones.txt of that lang dir byte for byte (with the
    dir's own position-dependent GMM: test_recipe_makes_kaldis_lang_dir_and_reaches_a_wer)."""
    kaldi = lang_less_copy(_tiny(shared_dir), tmp_path / "kaldi")
    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    flat_lang, ali = tmp_path / "lang_flat", kaldi / "exp/mono_flat_ali"
    subprocess.run(["utils/prepare_lang.sh", "--position-dependent-phones", "false",
                    str(kaldi / "data/local/dict"), "<UNK>", str(tmp_path / "lang_tmp"),
                    str(flat_lang)], cwd=s5, env=env, check=True, capture_output=True)
    ali.mkdir()
    subprocess.run(["init_mono.py", str(flat_lang / "topo"), str(ali / "final.mdl"),
                    str(ali / "tree")], cwd=s5, env=env, check=True, capture_output=True)
    shutil.copy(flat_lang / "phones.txt", ali / "phones.txt")
    shutil.copy(kaldi / "exp/mono_ali/ali.1.gz", ali / "ali.1.gz")  # (stage 0 reads none)
    (ali / "num_jobs").write_text("1\n")
    p = subprocess.run(
        ["./run.sh", "--kaldi-dir", str(kaldi), "--lang", "data/local/dict",
         "--ali", "exp/mono_flat_ali", "--graph", "exp/mono/graph", "--stop-stage", "0"],
        cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "make_lang_dirs.sh --oov-word  --lm-order 3 --position-dependent-phones false" in out
    assert "prepare_lang.py --position-dependent-phones=false" in out
    facts = json.loads((s5 / "data/kaldi_dir.json").read_text())
    assert facts["dict_position_dependent_phones"] is False
    for name in ("phones.txt", "words.txt", "topo", "phones/roots.txt"):
        assert (s5 / "data/lang" / name).read_bytes() == (flat_lang / name).read_bytes()
