"""The recipe's defaults chosen from the training data's size
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
                           "batching_config": "conf/batching.conf",
                           "flat_model_config": "conf/model/blstm_small.conf",
                           "schedule_config": "conf/schedule.conf",
                           "chain_model_config": "conf/model/tdnnf_small.conf",
                           "gmm_weight": "0.5"}
    assert "1 of 12 speakers" in m["split"]


def test_kaldi_polish_gets_fbank(kaldi_polish, monkeypatch, tmp_path):
    monkeypatch.chdir(kaldi_polish)
    doc = dd.choose_for("data/train")
    assert doc["measured"]["utterances"] == 540 and doc["measured"]["cv_set"]
    assert 0.8 < doc["measured"]["hours"] < 1.0
    assert chosen(doc)["feat_type"] == "fbank" and chosen(doc)["speed_perturb"] == "true"
    assert chosen(doc)["model_config"] == "conf/model/blstm_medium.conf"
    assert "at least 0.5 h" in doc["chosen"]["feat_type"]["why"]
    assert chosen(doc)["gmm_weight"] == "0"  # (the network alone from 0.5 h)
    assert "at least 0.5 h" in doc["chosen"]["gmm_weight"]["why"]
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
                           "model_config": "conf/model/mlp_small.conf",
                           "batching_config": "conf/batching/frame_shuffle.conf",
                           "flat_model_config": "conf/model/blstm_small.conf",
                           "schedule_config": "conf/schedule_all_data.conf",
                           "chain_model_config": "conf/model/tdnnf_small.conf",
                           "gmm_weight": "0.67"}
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


@pytest.mark.parametrize("hours,cv_set,model,batching", [
    (0.01, False, "mlp_small", "batching/frame_shuffle"),
    (0.49, False, "mlp_small", "batching/frame_shuffle"),
    (0.01, True, "blstm_small", "batching"),
    (0.5, False, "blstm_medium", "batching"),   # (no cv set, but not tutorial-sized)
    (30.0, False, "blstm", "batching")])
def test_frame_mlp_where_no_cv_set_judges_a_tiny_dir(hours, cv_set, model, batching):
    """Below 0.5 h with no cv set to stop training, the MLP on +-5 frames (a BLSTM learns the
    word strings of a few utterances: docs/accuracy.md), frame-shuffled; the flat start keeps
    the BLSTM of the size (full-sum trains on whole utterances)."""
    size = dd.DataSize(10, 1, hours, cv_set, "", cv_utterances=1, cv_words=3, cv_frames=300,
                       cv_small=not cv_set)
    got = dd.choose(size)
    assert got["model_config"]["value"] == f"conf/model/{model}.conf"
    assert got["batching_config"]["value"] == f"conf/{batching}.conf"
    assert got["flat_model_config"]["value"].startswith("conf/model/blstm")
    for name in ("model_config", "batching_config", "flat_model_config"):
        assert os.path.isfile(os.path.join(RECIPE, got[name]["value"])), name
    if model == "mlp_small":
        assert "too small to judge an epoch" in got["model_config"]["why"]
        assert "MLP" in got["model_config"]["why"]
        opts = open(os.path.join(RECIPE, got["model_config"]["value"])).read().split("\n")
        assert "--model=mlp" in opts and "--splice=5" in opts
        # on the flat start's alignment (--ali none) the BLSTM stays, said why
        flat = dd.choose(size, flat_start=True)
        assert flat["model_config"]["value"] == "conf/model/blstm_small.conf"
        assert flat["batching_config"]["value"] == "conf/batching.conf"
        assert "flat start's alignment" in flat["model_config"]["why"]


@pytest.mark.parametrize("hours,flat_start,cv_set,weight", [
    (0.01, False, True, "0.5"), (0.49, False, True, "0.5"), (0.01, False, False, "0.67"),
    (0.49, False, False, "0.67"), (0.5, False, True, "0"), (0.5, False, False, "0"),
    (100.0, False, True, "0"), (0.01, True, True, "0"), (0.01, True, False, "0"),
    (5.0, True, True, "0")])
def test_gmm_weight_below_half_an_hour_on_a_gmms_alignment(hours, flat_start, cv_set, weight):
    """Decoding adds the alignment GMM's log-likelihoods below 0.5 h of audio, on a GMM's
    alignment: 0.5 each where a cv set judges the network's epochs, the GMM at 0.67 where
    none does (tutorial-sized dirs); the flat start has no GMM of the network's tree."""
    size = dd.DataSize(100, 10, hours, cv_set, "", cv_utterances=10 if cv_set else 2,
                       cv_words=30 if cv_set else 6, cv_frames=3000, cv_small=not cv_set)
    got = dd.choose(size, flat_start=flat_start)["gmm_weight"]
    assert got["value"] == weight
    assert ("--ali none" in got["why"]) == flat_start
    if weight == "0.5":
        assert "0.5 each" in got["why"] and "kaldi_hindi_sat" in got["why"]
    if weight == "0.67":
        assert "too small to judge an epoch" in got["why"] and "kaldi_tiny_2spk" in got["why"]


@pytest.mark.parametrize("hours,model", [
    (0.01, "tdnnf_small"), (4.99, "tdnnf_small"), (5.0, "tdnnf"), (1000.0, "tdnnf")])
def test_chain_model_tiers_name_confs_that_exist(hours, model):
    """The chain model's rule (local/chain/run_tdnn.sh --model-config auto, run.sh
    --chain-model-config auto): Kaldi's 1k TDNN-F from 5 hours (mini_librispeech's size)."""
    got = dd.choose(dd.DataSize(1000, 100, hours, True, ""))["chain_model_config"]
    assert got["value"] == f"conf/model/{model}.conf"
    assert os.path.isfile(os.path.join(RECIPE, got["value"]))
    assert f"below {5 if hours < 5 else 'inf'} h" in got["why"]


def test_choose_defaults_get_prints_one_choice_and_writes_nothing(kaldi_digits, tmp_path,
                                                                  env_with_path, monkeypatch):
    kaldi = digits_dir(kaldi_digits, tmp_path / "k", ["jackson_0", "nicolas_0"], ["jackson_1"],
                       person_speakers=True)
    out = tmp_path / "defaults.json"

    def get(*args):
        return subprocess.run(["choose_defaults.py", *args, "data/train", str(out)], cwd=kaldi,
                              env=env_with_path, capture_output=True, text=True)

    p = get("--get=chain_model_config")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "conf/model/tdnnf_small.conf\n"  # the value alone, for a script
    assert "--chain-model-config conf/model/tdnnf_small.conf (" in p.stderr and "below 5 h" in p.stderr
    assert not out.exists()  # a query: nothing written
    # a current defaults.json is read: its value, not measured again
    monkeypatch.chdir(kaldi)  # (its wav.scp paths are relative to the Kaldi dir)
    doc = dd.choose_for("data/train")
    doc["chosen"]["chain_model_config"]["value"] = "conf/model/marker.conf"
    out.write_text(json.dumps(doc))
    assert get("--get=chain_model_config").stdout == "conf/model/marker.conf\n"
    p = get("--get=nothing")
    assert p.returncode != 0 and "--get=nothing: not a choice" in p.stderr


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
    # (2 held-out one-digit utterances: a cv set too small to judge an epoch)
    assert doc["measured"]["utterances"] == 20 and doc["measured"]["cv_words"] == 2
    assert chosen(doc)["schedule_config"] == "conf/schedule_all_data.conf"
    assert "--schedule-config conf/schedule_all_data.conf  (the cv set (2 utterance(s)" in printed
    # newer than the data dir: printed as it is, not measured again
    doc["measured"]["split"] = "marker"
    out.write_text(json.dumps(doc))
    assert "(marker)" in tool()
    assert chosen(doc)["model_config"] == "conf/model/mlp_small.conf"
    # the flat start's targets (run.sh --ali none): chosen again, the BLSTM
    assert "--model-config conf/model/blstm_small.conf  (" in tool("--flat-start=true")
    assert json.loads(out.read_text())["flat_start"] is True
    tool()
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
    # the rule's GMM weight cannot apply to fbank features (the GMM reads MFCCs): dropped, said
    assert "--gmm-weight 0 (the rule's 0.5 dropped: its GMM reads MFCCs, the network fbank)" \
        in p.stdout
    # given, it is an error before anything runs; so is a weight outside 0..1
    for w, err in (("0.5", "--gmm-weight 0.5: its GMM reads MFCCs, the network fbank; give "
                           "--gmm-weight 0"),
                   ("2", "--gmm-weight 2: a number from 0 to 1, or auto")):
        p = run("--stop-stage", "1", "--feat-type", "fbank", "--speed-perturb", "false",
                "--gmm-weight", w)
        assert p.returncode != 0 and err in p.stderr, p.stderr[-2000:]
    # the inputs of that run are recorded as given: the defaults again are other inputs
    p = run("--stop-stage", "1")
    assert p.returncode != 0 and "feat_type=auto" in p.stderr and "--restart true" in p.stderr


# the cv rule: a cv set below MIN_CV_WORDS words cannot judge an epoch (newbob on the 1-2
# held-out utterances of the tutorial-sized dirs kept epoch 1, 68% cv frame error)

@pytest.mark.parametrize("name,utts,cv_utts,cv_words", [
    ("kaldi_tiny_2spk", 20, 2, 6), ("kaldi_tiny_1spk", 10, 1, 3)])
def test_tiny_real_dirs_cv_too_small_train_on_all(shared_dir, monkeypatch, name, utts,
                                                   cv_utts, cv_words):
    monkeypatch.chdir(shared_dir / "data" / name)
    doc = dd.choose_for("data/train")
    m = doc["measured"]
    # a cv set whose words training keeps exists, but it is a few words
    assert (m["utterances"], m["cv_utterances"], m["cv_words"]) == (utts, cv_utts, cv_words)
    assert m["cv_small"] and not m["cv_set"] and m["cv_speakers"] == 0
    assert 200 < m["cv_frames"] < 500  # 3-digit strings of about 1.5-3 s
    assert chosen(doc) == {"feat_type": "mfcc", "speed_perturb": "false",
                           "model_config": "conf/model/mlp_small.conf",
                           "batching_config": "conf/batching/frame_shuffle.conf",
                           "flat_model_config": "conf/model/blstm_small.conf",
                           "schedule_config": "conf/schedule_all_data.conf",
                           "chain_model_config": "conf/model/tdnnf_small.conf",
                           "gmm_weight": "0.67"}
    why = doc["chosen"]["schedule_config"]["why"]
    assert f"{cv_words} words" in why and "too small to judge an epoch" in why
    assert any("--schedule-config conf/schedule_all_data.conf  (the cv set" in ln
               for ln in dd.describe(doc))


@pytest.mark.parametrize("name,expected", [
    ("kaldi_digits", {"feat_type": "mfcc", "speed_perturb": "true",
                      "model_config": "conf/model/blstm_small.conf",
                      "batching_config": "conf/batching.conf",
                      "flat_model_config": "conf/model/blstm_small.conf",
                      "schedule_config": "conf/schedule.conf",
                      "chain_model_config": "conf/model/tdnnf_small.conf",
                      "gmm_weight": "0.5"}),
    ("kaldi_polish", {"feat_type": "fbank", "speed_perturb": "true",
                      "model_config": "conf/model/blstm_medium.conf",
                      "batching_config": "conf/batching.conf",
                      "flat_model_config": "conf/model/blstm_medium.conf",
                      "schedule_config": "conf/schedule.conf",
                      "chain_model_config": "conf/model/tdnnf_small.conf",
                      "gmm_weight": "0"})])
def test_cv_rule_leaves_digits_and_polish_as_before(shared_dir, monkeypatch, name, expected):
    """The choices measured before the cv rule (docs/accuracy.md): newbob on their cv sets."""
    monkeypatch.chdir(shared_dir / "data" / name)
    doc = dd.choose_for("data/train")
    m = doc["measured"]
    assert m["cv_set"] and not m["cv_small"] and m["cv_words"] >= dd.MIN_CV_WORDS
    assert chosen(doc) == expected
    if name == "kaldi_digits":  # one held-out speaker: 10 one-digit utterances
        assert (m["cv_speakers"], m["cv_utterances"], m["cv_words"]) == (1, 10, 10)
    else:
        assert m["cv_utterances"] == 54 and m["cv_words"] > 500


@pytest.mark.parametrize("utts,words,schedule", [
    (dd.MIN_CV_UTTERANCES, dd.MIN_CV_WORDS - 1, dd.SCHEDULE_ALL_DATA),
    (dd.MIN_CV_UTTERANCES - 1, 3 * dd.MIN_CV_WORDS, dd.SCHEDULE_ALL_DATA),  # (yesno-like)
    (dd.MIN_CV_UTTERANCES, dd.MIN_CV_WORDS, dd.SCHEDULE_WITH_CV)])
def test_cv_size_thresholds_decide_the_schedule(utts, words, schedule):
    small = dd.cv_too_small(words, utts)
    size = dd.DataSize(30, 3, 0.01, not small, "", cv_utterances=utts, cv_words=words,
                       cv_frames=100 * utts, cv_small=small)
    got = dd.choose(size)["schedule_config"]
    assert got["value"] == schedule
    assert (f"{words} words" in got["why"]) and (("too small" in got["why"]) == small)


def test_train_all_puts_the_cv_utterances_into_training(shared_dir, tmp_path, repo_dir,
                                                        env_with_path):
    from hybridasr.datadir.tr_cv import plan_tr_cv

    src = shared_dir / "data" / "kaldi_tiny_2spk" / "data" / "train"
    assert plan_tr_cv(str(src), train_all_if_words_lost=True).counts == (18, 2)
    split = plan_tr_cv(str(src), train_all_if_words_lost=True, train_all=True)
    assert split.counts == (20, 2) and {u for u, _ in split.cv} <= {u for u, _ in split.tr}
    assert "training on all 20 utterances (--train-all" in split.note
    p = subprocess.run([str(repo_dir / "utils/subset_data_dir_tr_cv.sh"), "--train-all=true",
                        str(src), str(tmp_path / "tr"), str(tmp_path / "cv")],
                       env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "tr" / "utt2spk").read_text().splitlines()) == 20
    assert len((tmp_path / "cv" / "utt2spk").read_text().splitlines()) == 2


def test_recipe_trains_a_tiny_dir_on_every_utterance(shared_dir, repo_dir, tmp_path,
                                                     env_with_path):
    """Stages 0-2 on kaldi_tiny_1spk with the defaults: the all-data schedule, and stage 2's
    training set holds all 10 utterances (the cv utterance too); a given newbob schedule
    keeps the cv utterance out of training."""
    from test_recipe_e2e import make_recipe_copy

    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))

    def run(*args):
        p = subprocess.run(["./run.sh", "--kaldi-dir", str(shared_dir / "data/kaldi_tiny_1spk"),
                            "--stop-stage", "2", *args], cwd=s5, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        return p.stdout + p.stderr

    out = run()
    assert "--schedule-config conf/schedule_all_data.conf  (the cv set (1 utterance(s)" in out
    # on the GMM's alignment: the frame MLP and its frame-shuffled batches
    assert "--model-config conf/model/mlp_small.conf  (" in out
    assert "--batching-config conf/batching/frame_shuffle.conf  (" in out
    tr = (s5 / "data/train_tr90/utt2spk").read_text().splitlines()
    cv = (s5 / "data/train_cv10/utt2spk").read_text().splitlines()
    assert len(tr) == 10 and len(cv) == 1 and cv[0] in tr
    run("--stage", "2", "--schedule-config", "conf/schedule.conf")  # stage 2 made again
    tr = (s5 / "data/train_tr90/utt2spk").read_text().splitlines()
    assert len(tr) == 9 and cv[0] not in tr


def test_defaults_of_an_earlier_rule_are_chosen_again(shared_dir, tmp_path, monkeypatch):
    """A data/defaults.json written before the cv rule (no "rule" version, newbob on the tiny
    dir's 2 cv utterances) is not reused: a rerun in the same recipe dir gets the new rule."""
    monkeypatch.chdir(shared_dir / "data" / "kaldi_tiny_2spk")
    out = str(tmp_path / "defaults.json")
    doc = dd.choose_for("data/train")
    dd.write_defaults(doc, out)
    assert dd.is_current(out, "data/train", False)
    old = dict(doc)
    del old["rule"]
    old["chosen"] = dict(doc["chosen"], schedule_config={"value": "conf/schedule.conf",
                                                         "why": "a cv set exists"})
    dd.write_defaults(old, out)
    assert not dd.is_current(out, "data/train", False)


def test_recipe_without_a_gmm_keeps_the_blstm_on_a_tiny_dir(shared_dir, repo_dir, tmp_path,
                                                             env_with_path):
    """run.sh --ali none (the flat start's targets) on kaldi_tiny_1spk: the rule is asked with
    --flat-start=true and keeps the BLSTM with whole utterances, said why."""
    from test_recipe_e2e import make_recipe_copy

    s5 = make_recipe_copy(repo_dir, tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    p = subprocess.run(["./run.sh", "--kaldi-dir", str(shared_dir / "data/kaldi_tiny_1spk"),
                        "--ali", "none", "--stop-stage", "0"], cwd=s5, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads((s5 / "data/defaults.json").read_text())
    assert doc["flat_start"] is True
    assert chosen(doc)["model_config"] == "conf/model/blstm_small.conf"
    assert chosen(doc)["batching_config"] == "conf/batching.conf"
    assert "the flat start's alignment (--ali none)" in p.stdout
    assert chosen(doc)["gmm_weight"] == "0" and "--gmm-weight 0  (no GMM" in p.stdout
