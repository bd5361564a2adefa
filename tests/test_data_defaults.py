"""Issue 30: the recipe's defaults chosen from the training data's size
(hybridasr/recipe/data_defaults.py, pybin/choose_defaults.py) on the real Kaldi dirs and
shapes cut from them: the features, speed perturbation, model and schedule, each with its
reason; the tiers above the shared dirs' sizes; reuse of data/defaults.json."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from hybridasr.recipe import data_defaults as dd
from kaldi_shapes import digits_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(REPO, "egs", "digits", "s5")


def chosen(doc):
    return {k: v["value"] for k, v in doc["chosen"].items()}


def test_kaldi_digits_has_a_cv_set_mfcc_and_speed_copies(kaldi_digits, monkeypatch):
    monkeypatch.chdir(kaldi_digits)  # (its wav.scp paths are relative to the Kaldi dir)
    doc = dd.choose_for("data/train")
    m = doc["measured"]
    assert (m["utterances"], m["speakers"], m["cv_set"]) == (120, 12, True)
    assert 20 / 3600 < m["hours"] < 0.1  # a spoken digit is a fraction of a second
    assert chosen(doc) == {"feat_type": "mfcc", "speed_perturb": "true",
                           "model_config": "conf/model/blstm_small.conf",
                           "schedule_config": "conf/schedule.conf"}
    assert "1 of 12 speakers" in m["split"]


def test_kaldi_polish_gets_fbank(kaldi_polish, monkeypatch, tmp_path):
    monkeypatch.chdir(kaldi_polish)
    doc = dd.choose_for("data/train")
    assert doc["measured"]["utterances"] == 540 and doc["measured"]["cv_set"]
    assert 0.8 < doc["measured"]["hours"] < 1.0
    assert chosen(doc)["feat_type"] == "fbank" and chosen(doc)["speed_perturb"] == "true"
    assert chosen(doc)["model_config"] == "conf/model/blstm_medium.conf"
    assert "at least 0.5 h" in doc["chosen"]["feat_type"]["why"]
    # without utt2dur the durations come from the wav headers: the same hours
    copy = tmp_path / "train"
    shutil.copytree("data/train", copy)
    os.unlink(copy / "utt2dur")
    with open(copy / "wav.scp") as f:  # absolute paths, as the recipe's import makes them
        lines = [ln.split(None, 1) for ln in f.read().splitlines()]
    (copy / "wav.scp").write_text("".join(f"{u} {kaldi_polish / p}\n" for u, p in lines))
    again = dd.choose_for(str(copy))
    assert abs(again["measured"]["hours"] - doc["measured"]["hours"]) < 0.001


def test_ten_utterances_of_ten_digits_train_on_all(kaldi_digits, tmp_path, monkeypatch):
    kaldi = digits_dir(kaldi_digits, tmp_path / "k", ["jackson_0"], ["jackson_1"],
                       person_speakers=True, test_from="train")
    monkeypatch.chdir(kaldi)
    doc = dd.choose_for("data/train")
    assert not doc["measured"]["cv_set"] and doc["measured"]["utterances"] == 10
    assert chosen(doc) == {"feat_type": "mfcc", "speed_perturb": "false",
                           "model_config": "conf/model/blstm_small.conf",
                           "schedule_config": "conf/schedule_all_data.conf"}
    assert "training on all 10 utterances" in doc["measured"]["split"]
    lines = dd.describe(doc)
    assert lines[0].startswith("data/train: 10 utterances of 1 speaker(s)")
    assert any(ln.startswith("  --schedule-config conf/schedule_all_data.conf  (no cv set")
               for ln in lines)


def test_kaldi_features_are_never_speed_perturbed():
    size = dd.DataSize(utterances=540, speakers=3, hours=0.88, cv_set=True, split="")
    got = dd.choose(size, kaldi_feats=True)
    assert got["speed_perturb"]["value"] == "false"
    assert "--use-kaldi-feats" in got["speed_perturb"]["why"]
    assert got["schedule_config"]["value"] == "conf/schedule.conf"


@pytest.mark.parametrize("hours,model", [
    (0.01, "blstm_small"), (0.49, "blstm_small"), (0.5, "blstm_medium"),
    (19.9, "blstm_medium"), (20.0, "blstm"), (1000.0, "blstm")])
def test_model_tiers_name_confs_that_exist(hours, model):
    got = dd.choose(dd.DataSize(1000, 100, hours, True, ""))
    assert got["model_config"]["value"] == f"conf/model/{model}.conf"
    # the recipe's conf/model links to the repo's conf/model: the file is there
    assert os.path.isfile(os.path.join(RECIPE, got["model_config"]["value"]))
    assert got["feat_type"]["value"] == ("fbank" if hours >= 0.5 else "mfcc")
    for name in ("conf/schedule.conf", "conf/schedule_all_data.conf"):
        assert os.path.isfile(os.path.join(RECIPE, name))


def test_choose_defaults_writes_reuses_and_remakes(kaldi_digits, tmp_path, env_with_path):
    kaldi = digits_dir(kaldi_digits, tmp_path / "k", ["jackson_0", "nicolas_0"], ["jackson_1"],
                       person_speakers=True)
    data, out = "data/train", tmp_path / "defaults.json"

    def tool(*args):
        p = subprocess.run(["choose_defaults.py", *args, data, str(out)], cwd=kaldi,
                           env=env_with_path, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    printed = tool()
    doc = json.loads(out.read_text())
    assert doc["measured"]["utterances"] == 20 and chosen(doc)["speed_perturb"] == "true"
    assert "--speed-perturb true  (a cv set exists" in printed
    # newer than the data dir: printed as it is, not measured again
    doc["measured"]["split"] = "marker"
    out.write_text(json.dumps(doc))
    assert "(marker)" in tool()
    # the features' choice differs: chosen again
    tool("--use-kaldi-feats=true")
    doc = json.loads(out.read_text())
    assert doc["kaldi_feats"] and chosen(doc)["speed_perturb"] == "false"
    # a changed data dir: chosen again
    doc["measured"]["split"] = "marker"
    out.write_text(json.dumps(doc))
    st = out.stat()
    os.utime(kaldi / "data/train/utt2spk", ns=(st.st_mtime_ns + 10**9,) * 2)
    assert "(marker)" not in tool("--use-kaldi-feats=true")
    # a data dir that is not one: the error names it, non-zero exit
    p = subprocess.run(["choose_defaults.py", "data/nothing", str(out)], cwd=kaldi,
                       env=env_with_path, capture_output=True, text=True)
    assert p.returncode != 0 and "data/nothing" in p.stderr


def test_recipe_prints_its_choices_and_a_given_option_wins(kaldi_digits, repo_dir, tmp_path,
                                                          env_with_path):
    from test_recipe_e2e import make_recipe_copy

    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))

    def run(*args):
        return subprocess.run(["./run.sh", "--kaldi-dir", str(kaldi_digits), *args], cwd=s5,
                              env=env, capture_output=True, text=True, timeout=600)

    p = run("--stop-stage", "0")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "--feat-type mfcc  (" in p.stdout and "--speed-perturb true  (" in p.stdout
    doc = json.loads((s5 / "data/defaults.json").read_text())
    assert chosen(doc)["model_config"] == "conf/model/blstm_small.conf"
    # given options win over the rule: fbank features, no speed copies (a new run: --restart)
    p = run("--stop-stage", "1", "--feat-type", "fbank", "--speed-perturb", "false",
            "--restart", "true")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "===== stage 1: features (fbank, " in p.stdout
    feats = (s5 / "data/train/feats.scp").read_text().split("\n")[0].split()[1]
    assert feats.startswith("fbank/") and not (s5 / "data/train_sp").exists()
    # the inputs of that run are recorded as given: the defaults again are other inputs
    p = run("--stop-stage", "1")
    assert p.returncode != 0 and "feat_type=auto" in p.stderr and "--restart true" in p.stderr
