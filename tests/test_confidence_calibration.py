"""hybridasr.decode.confidence_calibration (Kaldi's steps/conf/ calibration of word
confidences), train_confidence_calibration.py and transcribe.py --confidence-calibration: the
fit recovers a known logistic map, is deterministic and never worse than the constant on its
own words; the map's confidences stay in [0, 1]; the file round-trips and a bad one is named;
a real CTM (words of the default recipe's BLSTM on kaldi_polish cv, below) is calibrated; the
CTM of transcribe.py (a tiny BLSTM trained on kaldi_digits) carries the map's confidences."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hybridasr.decode import confidence_calibration as cc
from hybridasr.decode.confidence import nce
from hybridasr.errors import FormatError
from train_helpers import load_pybin, make_tr_cv

# 8 utterances of kaldi_polish's data/train_cv10 as transcribe.py --ctm wrote them (the default
# recipe's BLSTM, tri1's graph, LM weight 13, penalty 1.0), and their references normalised as
# score.sh --ref-normalize true reads them
POLISH_CV_CTM = """\
kaminski-165416_1025 1 0.00 0.39 książę 0.98
kaminski-165416_1025 1 0.39 0.55 przysiadł 1.00
kaminski-165416_1025 1 0.94 0.13 na 0.98
kaminski-165416_1025 1 1.07 0.51 skórach 1.00
kaminski-165416_1025 1 1.58 0.44 jelenich 1.00
kaminski-165416_1025 1 2.02 0.54 miłości 1.00
kaminski-165416_1025 1 2.80 0.62 stosem 1.00
kaminski-165416_1025 1 3.42 0.43 grobu 0.92
kaminski-165416_1025 1 3.88 0.34 izby 0.97
kaminski-165416_1025 1 4.22 0.32 z 0.38
kaminski-165416_1027 1 0.00 0.95 wymijającą 0.91
kaminski-165416_1027 1 0.95 0.34 lewego 0.72
kaminski-165416_1027 1 1.29 0.29 boku 1.00
kaminski-165416_1027 1 1.58 0.42 przeciw 0.89
kaminski-165416_1027 1 2.00 0.43 znów 0.79
kaminski-165416_1027 1 2.43 0.30 nas 0.37
kaminski-165416_1027 1 2.73 0.48 tronu 0.29
kaminski-165416_1027 1 3.25 0.57 zakręcił 1.00
kaminski-165416_1027 1 3.82 0.46 korbę 1.00
kaminski-165416_1027 1 4.31 0.56 drewnianych 0.84
kaminski-165416_1027 1 4.97 0.22 i 0.96
kaminski-165416_1027 1 5.19 0.13 o 0.00
kaminski-165416_1027 1 5.32 0.56 palcami 1.00
kaminski-165416_1027 1 5.97 0.50 ośmiu 0.98
kaminski-165416_1027 1 6.47 0.75 trzpieniach 1.00
kaminski-165416_1027 1 7.22 0.25 przed 0.65
kaminski-165416_1040 1 0.13 0.53 wstąpi 1.00
kaminski-165416_1040 1 0.66 0.27 jego 0.97
kaminski-165416_1040 1 0.93 0.41 stopa 1.00
kaminski-165416_1040 1 1.34 0.59 junacka 1.00
kaminski-165416_1040 1 1.96 0.67 strzemiona 1.00
kaminski-165416_1040 1 2.66 0.38 ojca 0.45
kaminski-165416_1041 1 0.03 0.40 cztery 0.81
kaminski-165416_1041 1 0.49 0.51 tarcic 1.00
kaminski-165416_1041 1 1.00 0.56 dębowych 1.00
kaminski-165416_1041 1 1.56 0.47 zbite 1.00
kaminski-165416_1041 1 2.03 0.33 jego 1.00
kaminski-165416_1047 1 0.21 0.37 łza 0.98
kaminski-165416_1047 1 0.58 0.72 starości 1.00
kaminski-165416_1047 1 1.30 0.40 lasy 0.32
kaminski-165416_1047 1 1.70 0.55 nas 0.86
kaminski-165416_1047 1 2.30 0.64 zalewała 1.00
kaminski-165416_1047 1 2.94 0.70 przekrwioną 1.00
kaminski-165416_1047 1 3.64 0.37 ziemi 0.49
kaminski-165416_1055 1 0.34 0.13 do 0.65
kaminski-165416_1055 1 0.47 0.42 ludzi 0.97
kaminski-165416_1055 1 0.92 0.67 szelestną 1.00
kaminski-165416_1055 1 1.59 0.59 słowiańską 1.00
kaminski-165416_1055 1 2.18 0.53 mową 0.96
kaminski-165416_1055 1 2.71 0.38 wieść 0.81
kaminski-165416_1055 1 3.09 0.63 łaskawe 1.00
kaminski-165416_1055 1 3.92 0.44 znaków 0.99
kaminski-165416_1055 1 5.10 0.38 które 0.75
kaminski-165416_1055 1 5.48 0.11 i 0.00
kaminski-165416_1055 1 5.59 0.21 tym 0.47
kaminski-165416_1055 1 5.80 0.38 nosisz 0.97
kaminski-165416_1055 1 6.18 0.39 należy 0.36
kaminski-165416_1055 1 6.57 0.56 murami 0.91
kaminski-165416_1055 1 7.38 0.37 o 0.91
kaminski-165416_1055 1 7.75 0.45 gończe 0.88
kaminski-165416_1055 1 8.20 0.24 jest 0.55
kaminski-165416_1055 1 8.44 0.55 z 0.87
kaminski-165416_1070 1 0.23 0.34 stał 0.90
kaminski-165416_1070 1 0.57 0.28 się 1.00
kaminski-165416_1070 1 0.85 0.78 obmierzły 1.00
kaminski-165416_1070 1 1.66 0.41 na 0.48
kaminski-165416_1092 1 0.03 0.11 na 0.60
kaminski-165416_1092 1 0.14 0.43 lewym 0.97
kaminski-165416_1092 1 0.57 0.52 żeby 0.56
kaminski-165416_1092 1 1.09 0.34 swoje 0.42
kaminski-165416_1092 1 1.63 0.41 niżej 0.99
kaminski-165416_1092 1 2.04 0.45 von 0.31
kaminski-165416_1092 1 2.93 0.48 świecie 0.42
kaminski-165416_1092 1 3.41 0.35 jako 0.75
kaminski-165416_1092 1 3.76 0.44 miejsce 0.95
kaminski-165416_1092 1 4.20 0.44 swego 1.00
kaminski-165416_1092 1 4.64 0.33 wypad 0.77
"""
POLISH_CV_TEXT = """\
kaminski-165416_1025 książę przysiadł na skórach jelenich i łosich stosem w rogu izby zasłanych
kaminski-165416_1027 tamten lirę do lewego boku przycisnął nastroił zakręcił korbę drewnianą i jął palcami po ośmiu trzpieniach przebiegać
kaminski-165416_1040 nie wstąpi jego stopa junacka w strzemiona ojcowe
kaminski-165416_1041 z czterech tarcic dębowych zbite jego królestwo
kaminski-165416_1047 lecz łza starości raz wraz zalewała przekrwioną źrenicę
kaminski-165416_1055 mówił do ludzi szelestną słowiańską mową wieści łaskawe wśród znaków krzyża które i ty nosisz na lewym ramieniu o gończe jezusa chrystusa
kaminski-165416_1070 kielich stał się obmierzły dla wargi
kaminski-165416_1092 na lewym brzegu wisły niżej chełmna świecie jako miejsce swego wypadku obwałował
"""


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _synthetic(n, seed, bias, weights):
    """Words drawn with CTM-like features, labelled by the logistic map (bias, weights)."""
    rng = np.random.default_rng(seed)
    confs = np.round(rng.beta(2.0, 1.0, n), 2)
    words = ["x" * k for k in rng.integers(1, 12, n)]
    seconds = np.round(rng.uniform(0.03, 0.3, n) * np.asarray([len(w) for w in words]), 2)
    x = cc.word_features(confs, seconds, words)
    y = rng.random(n) < _sigmoid(bias + x @ np.asarray(weights))
    return cc.CtmWords(["u%d" % (i % 50) for i in range(n)], words, list(seconds),
                       list(confs), list(y)), x


def test_fit_recovers_a_known_map():
    true_bias, true_w = -0.5, [0.8, -0.6, -1.2]
    words, x = _synthetic(40000, 0, true_bias, true_w)
    bias, w = cc.fit_logistic(x, words.correct, l2=0.0)
    assert bias == pytest.approx(true_bias, abs=0.25)
    assert w == pytest.approx(true_w, abs=0.1)
    # deterministic: the same words give the same map, to the bit
    again = cc.fit_calibration(words, l2=0.0)
    assert again.bias == bias and again.weights == list(w)
    # the L2 penalty shrinks the weights
    shrunk = cc.fit_calibration(words, l2=0.5)
    assert np.linalg.norm(shrunk.weights) < 0.5 * np.linalg.norm(w)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_never_worse_than_the_constant_on_its_own_words(seed):
    # labels unrelated to the features (the map can only fit noise) and labels it predicts
    rng = np.random.default_rng(seed)
    words, _ = _synthetic(300, seed, 0.0, [0.0, 0.0, 0.0])
    words.correct = list(rng.random(300) < 0.7)
    for l2 in (0.0, cc.DEFAULT_L2, 1.0):
        cal = cc.fit_calibration(words, l2=l2)
        p = cal.probabilities(words.confs, words.seconds, words.words)
        assert nce(p, words.correct) >= -1e-12
        assert cal.trained_on["nce_calibrated"] >= -1e-12
    words, _ = _synthetic(300, seed, 1.0, [1.5, 0.0, 0.0])
    cal = cc.fit_calibration(words)
    assert cal.trained_on["nce_calibrated"] > 0.05


def test_confidences_stay_in_range():
    cal = cc.ConfidenceCalibration(cc.FEATURES, [40.0, -30.0, 25.0], 10.0)
    confs = [0.0, 0.01, 0.5, 0.99, 1.0, 1.0]
    seconds = [0.0, 0.01, 0.3, 2.0, 10.0, 0.05]
    words = ["a", "bb", "słowo", "x" * 30, "y", "zz"]
    p = cal.probabilities(confs, seconds, words)
    assert np.all((p >= 0.0) & (p <= 1.0)) and np.all(np.isfinite(p))
    out = cal.apply(confs, seconds, words)
    assert np.all((out >= 0.01) & (out <= 0.99))
    # the raw confidence enters as the CTM writes it: rounded to 2 decimals, 1.00 as 0.995
    x = cc.word_features([0.996, 1.0, 0.0], [0.1] * 3, ["a"] * 3)
    assert x[0, 0] == x[1, 0] == pytest.approx(math.log(0.995 / 0.005)) == -x[2, 0]


def _write_polish(tmp_path):
    ctm, text = tmp_path / "cv.ctm", tmp_path / "text"
    ctm.write_text(POLISH_CV_CTM, encoding="utf-8")
    text.write_text(POLISH_CV_TEXT, encoding="utf-8")
    return ctm, text


def test_real_ctm_cli_round_trip_and_apply(tmp_path):
    ctm, text = _write_polish(tmp_path)
    cal_path = tmp_path / "calibration.json"
    assert load_pybin("train_confidence_calibration").main(
        ["--folds=4", str(text), str(ctm), str(cal_path)]) == 0
    cal = cc.ConfidenceCalibration.load(str(cal_path))
    t = cal.trained_on
    assert (t["words"], t["correct"], t["utterances"], t["folds"]) == (77, 50, 8, 4)
    # the raw lattice posteriors are over-confident here (NCE below 0); the map fitted on these
    # words is better than the constant on them
    assert t["nce_raw"] < 0 < t["nce_calibrated"]
    assert math.isfinite(t["nce_cross_fitted"])
    words = cc.labelled_ctm_words(cc.read_ctm(str(ctm)), {
        k: v.split() for k, v in (ln.split(" ", 1) for ln in POLISH_CV_TEXT.splitlines())})
    assert sum(words.correct) == 50
    got = cal.apply(words.confs, words.seconds, words.words)
    assert nce(got, words.correct) == pytest.approx(t["nce_calibrated"], abs=1e-12)
    # round trip: the loaded map is the saved one
    again = tmp_path / "again.json"
    cal.save(str(again))
    assert json.loads(again.read_text()) == json.loads(cal_path.read_text())
    # a CTM file mapped: every confidence is the map's, to 2 decimals; the rest unchanged
    out = tmp_path / "cal.ctm"
    assert cc.calibrate_ctm_file(cal, str(ctm), str(out)) == 77
    old = [ln.split() for ln in ctm.read_text().splitlines()]
    new = [ln.split() for ln in out.read_text().splitlines()]
    assert [r[:5] for r in new] == [r[:5] for r in old]
    assert [r[5] for r in new] == [f"{c:.2f}" for c in got]
    assert any(r[5] != o[5] for r, o in zip(new, old))


def test_bad_files_are_named(tmp_path):
    ctm, text = _write_polish(tmp_path)
    cases = {"nojson.json": "{not json",
             "other.json": json.dumps({"format": "something-else"}),
             "version.json": json.dumps({"format": cc.FORMAT, "version": 99}),
             "short.json": json.dumps({"format": cc.FORMAT, "version": 1,
                                       "features": list(cc.FEATURES), "weights": [1.0],
                                       "bias": 0.0}),
             "feature.json": json.dumps({"format": cc.FORMAT, "version": 1,
                                         "features": ["phase_of_moon"], "weights": [1.0],
                                         "bias": 0.0})}
    for name, body in cases.items():
        (tmp_path / name).write_text(body)
        with pytest.raises(FormatError, match=name):
            cc.ConfidenceCalibration.load(str(tmp_path / name))
    with pytest.raises(FormatError, match="missing.json"):
        cc.ConfidenceCalibration.load(str(tmp_path / "missing.json"))
    # a CTM line without a confidence: file and line named
    bad = tmp_path / "bad.ctm"
    bad.write_text("u1 1 0.00 0.30 tak 0.9\nu1 1 0.30 0.20 nie\n")
    with pytest.raises(FormatError, match=r"bad.ctm:2"):
        cc.read_ctm(str(bad))
    # an utterance of the CTM without a reference: named
    (tmp_path / "short_text").write_text(POLISH_CV_TEXT.splitlines()[0] + "\n")
    with pytest.raises(FormatError, match="kaminski-165416_1027"):
        load_pybin("train_confidence_calibration").main(
            [str(tmp_path / "short_text"), str(ctm), str(tmp_path / "c.json")])
    assert not (tmp_path / "c.json").exists()


def _run(args, env, cwd):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_transcribe_applies_the_calibration(tmp_path, kaldi_digits, repo_dir, env_with_path):
    # a tiny BLSTM (8 epochs, as tests/test_transcribe.py's) of the recipe's steps/nnet/train.sh on kaldi_digits
    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path)
    (tr / "conf").mkdir()
    shutil.copy(kaldi_digits / "conf/mfcc.conf", tr / "conf/mfcc.conf")
    p = _run(["bash", repo_dir / "steps/nnet/train.sh", "--train-opts",
              "--max-iters=8 --num-layers=1 --hidden-size=64 --learning-rate=0.01 "
              "--keep-lr-iters=8 --progress-every=0 --num-workers=0", tr.name, cv.name, kaldi_digits / "data/lang", ali.name,
              ali.name, "exp/blstm"], env_with_path, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    scp = tmp_path / "wav.scp"
    scp.write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in (
        ln.split() for ln in (kaldi_digits / "data/test/wav.scp").read_text().splitlines()[:6])))
    graph = kaldi_digits / "exp/mono/graph"
    cal = cc.ConfidenceCalibration(cc.FEATURES, [0.7, -0.4, -0.9], -1.5)
    cal.save(str(tmp_path / "cal.json"))

    def transcribe(*opts):
        return _run([sys.executable, repo_dir / "pybin/transcribe.py", "--lm-weight=8",
                     f"--wav-scp={scp}", *opts, "exp/blstm", graph], env_with_path, tmp_path)

    raw = transcribe("--ctm=raw.ctm")
    assert raw.returncode == 0, raw.stderr
    got = transcribe("--ctm=cal.ctm", "--confidence-calibration=cal.json")
    assert got.returncode == 0, got.stderr
    assert got.stdout == raw.stdout, raw.stdout  # the words are not touched
    old = [ln.split() for ln in (tmp_path / "raw.ctm").read_text().splitlines()]
    new = [ln.split() for ln in (tmp_path / "cal.ctm").read_text().splitlines()]
    assert len(old) >= 6 and [r[:5] for r in new] == [r[:5] for r in old]
    # each confidence is the map's of the raw line's (conf, duration, word), to 2 decimals
    want = cal.apply([float(r[5]) for r in old], [float(r[3]) for r in old],
                     [r[4] for r in old])
    assert [float(r[5]) for r in new] == pytest.approx(list(want), abs=0.0051)
    assert any(r[5] != o[5] for r, o in zip(new, old))
    # without --ctm, or with a bad file: a clear error naming it
    p = transcribe("--confidence-calibration=cal.json")
    assert p.returncode != 0 and "--ctm" in p.stderr
    (tmp_path / "bad.json").write_text("[]")
    p = transcribe("--ctm=x.ctm", "--confidence-calibration=bad.json")
    assert p.returncode != 0 and "bad.json" in p.stderr and not (tmp_path / "x.ctm").exists()
