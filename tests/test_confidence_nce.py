"""hybridasr.decode.confidence: NIST's normalised cross entropy of word confidences, the
labelling of hypothesis words by alignment to the reference, and the CTM reader."""
from __future__ import annotations

import math

import pytest

from hybridasr.decode.confidence import (UndefinedNce, confidence_stats, label_words, nce,
                                         read_ctm_words)
from hybridasr.errors import FormatError


def test_nce_by_hand():
    # n = 4, n_c = 2: p_c = 1/2, H(C) = -(2 log2 1/2 + 2 log2 1/2) = 4;
    # log2 .9 + log2 .8 (correct) + log2 (1-.3) + log2 (1-.6) (wrong)
    # = -0.152003 - 0.321928 - 0.514573 - 1.321928 = -2.310432; NCE = (4 - 2.310432) / 4
    assert nce([0.9, 0.8, 0.3, 0.6], [True, True, False, False]) == \
        pytest.approx(0.4223919, abs=1e-7)
    # every word given p_c (3 of 4 correct: 0.75) is no better than the prior: NCE 0
    assert nce([0.75] * 4, [True, False, True, True]) == pytest.approx(0.0, abs=1e-12)
    # inverted confidences are worse than the prior: below 0
    assert nce([0.1, 0.2, 0.9], [True, True, False]) < 0
    # 0 and 1 are clipped to [1e-10, 1 - 1e-10]: a perfect separation is 1 (up to the clip),
    # a confident wrong word costs log2(1e-10) (finite)
    assert nce([1.0, 1.0, 0.0], [True, True, False]) == pytest.approx(1.0, abs=1e-8)
    h = -(2 * math.log2(2 / 3) + math.log2(1 / 3))
    assert nce([1.0, 1.0, 1.0], [True, True, False]) == \
        pytest.approx((h + math.log2(1e-10)) / h, rel=1e-6)


def test_nce_undefined_where_every_word_is_correct_or_wrong():
    with pytest.raises(UndefinedNce, match="all 3 words are correct"):
        nce([0.9, 0.5, 0.2], [True, True, True])
    with pytest.raises(UndefinedNce, match="all 2 words are wrong"):
        nce([0.9, 0.5], [False, False])
    with pytest.raises(UndefinedNce, match="no words"):
        nce([], [])
    with pytest.raises(ValueError, match="3 confidences but 2 labels"):
        nce([0.1, 0.2, 0.3], [True, False])


def test_labels_follow_the_alignment():
    # a substitution and an insertion are wrong; a deletion has no hypothesis word
    assert label_words("a b c d".split(), "a x c d e".split()) == [True, False, True, True,
                                                                   False]
    assert label_words("a b c".split(), "a c".split()) == [True, True]
    assert label_words("a b".split(), []) == []
    assert label_words([], "a".split()) == [False]


def test_confidence_stats_and_the_ctm_reader(tmp_path):
    ctm = tmp_path / "x.ctm"
    ctm.write_text("u1 1 0.10 0.30 a 0.90\nu1 1 0.40 0.20 x 0.30\n"
                   "u2 1 0.00 0.50 c 0.80\nu2 1 0.50 0.10 e 0.60\n")
    hyps = read_ctm_words(str(ctm))
    assert hyps == {"u1": [("a", 0.9), ("x", 0.3)], "u2": [("c", 0.8), ("e", 0.6)]}
    s = confidence_stats({"u1": ["a", "b"], "u2": ["c"], "u3": ["d"]}, hyps)
    assert (s.words, s.correct, s.fraction_correct) == (4, 2, 0.5)
    assert s.mean_conf_correct == pytest.approx(0.85) and s.mean_conf_wrong == pytest.approx(0.45)
    assert s.nce == pytest.approx(0.4223919, abs=1e-7)  # the words of test_nce_by_hand
    # all correct: NaN (undefined), the rest still reported
    s = confidence_stats({"u1": ["a", "x"]}, {"u1": [("a", 0.9), ("x", 0.3)]})
    assert s.correct == 2 and math.isnan(s.nce) and math.isnan(s.mean_conf_wrong)
    with pytest.raises(FormatError, match="utterance u9 has a hypothesis but no reference"):
        confidence_stats({"u1": ["a"]}, {"u9": [("a", 0.5)]})
    ctm.write_text("u1 1 0.10 0.30 a 0.90\nu1 1 0.40 0.20 x\n")
    with pytest.raises(FormatError, match=f"{ctm}:2: not a CTM line"):
        read_ctm_words(str(ctm))
