"""The tr/cv split on real data dirs of few speakers: never an empty side, an utterance split
(said so) when a speaker split cannot work, words kept covered in training."""
from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from hybridasr.errors import FormatError
from hybridasr.datadir.tr_cv import plan_tr_cv, split_tr_cv
from kaldi_shapes import make_data_dir


def _utt2spk(kaldi, part):
    out = {}
    for line in (kaldi / part / "utt2spk").read_text().splitlines():
        u, s = line.split()
        out[u] = s
    return out


@pytest.fixture
def digits_by_person(tmp_path, kaldi_digits):
    """kaldi_digits' 120 training utterances with the person as the speaker (3 speakers)."""
    make_data_dir(kaldi_digits, "data/train", tmp_path, "data/train",
                  list(_utt2spk(kaldi_digits, "data/train")), lambda u, s: s.split("_")[0])
    return tmp_path / "data/train"


def test_speaker_split_when_there_are_enough_speakers(kaldi_digits):
    split = plan_tr_cv(str(kaldi_digits / "data/train"))  # 12 session speakers: 1 held out
    assert split.by == "speaker" and len({s for _, s in split.cv}) == 1
    assert not {s for _, s in split.cv} & {s for _, s in split.tr}
    assert split.counts == (110, 10)


def test_three_speakers_fall_back_to_utterances_keeping_words(digits_by_person):
    split = plan_tr_cv(str(digits_by_person))
    assert split.by == "utterance" and "splitting by utterance instead" in split.note
    assert split.counts == (108, 12)
    assert len({s for _, s in split.cv}) == 3  # spread over the speakers
    words = dict(line.split(" ", 1) for line in
                 (digits_by_person / "text").read_text().splitlines())
    tr_words = {words[u].strip() for u, _ in split.tr}
    assert {words[u].strip() for u, _ in split.cv} <= tr_words
    # seeded: the same split again, another with another seed
    assert plan_tr_cv(str(digits_by_person)).cv == split.cv
    assert plan_tr_cv(str(digits_by_person), seed=1).cv != split.cv


def test_one_speaker_and_tiny_sets_never_leave_a_side_empty(tmp_path, kaldi_digits):
    one = [u for u, s in _utt2spk(kaldi_digits, "data/train").items() if s == "jackson_0"]
    make_data_dir(kaldi_digits, "data/train", tmp_path, "one", one)
    split = split_tr_cv(str(tmp_path / "one"), str(tmp_path / "tr"), str(tmp_path / "cv"))
    assert split.by == "utterance" and split.counts == (9, 1)
    assert len((tmp_path / "cv/utt2spk").read_text().splitlines()) == 1
    assert len((tmp_path / "tr/wav.scp").read_text().splitlines()) == 9
    make_data_dir(kaldi_digits, "data/train", tmp_path, "two", one[:2])
    assert plan_tr_cv(str(tmp_path / "two"), cv_spk_percent=90).counts == (1, 1)
    make_data_dir(kaldi_digits, "data/train", tmp_path, "single", one[:1])
    with pytest.raises(FormatError, match="at least 2"):
        plan_tr_cv(str(tmp_path / "single"))


def test_word_coverage_is_preferred_but_not_forced(tmp_path, kaldi_digits):
    # two speakers, each digit once per speaker: every cv utterance takes one speaker's only
    # example of its digit, but the other speaker keeps the word in training
    u2s = _utt2spk(kaldi_digits, "data/train")
    utts = [u for u, s in u2s.items() if s in ("jackson_0", "nicolas_0")]
    make_data_dir(kaldi_digits, "data/train", tmp_path, "d", utts, lambda u, s: s.split("_")[0])
    split = plan_tr_cv(str(tmp_path / "d"))
    assert split.counts == (18, 2) and len({s for _, s in split.cv}) == 2
    assert "every cv word also occurs in training" in split.note
    # one speaker, each digit once: no utterance can leave its word covered; still 1 in cv
    make_data_dir(kaldi_digits, "data/train", tmp_path, "j", utts[:10])
    split = plan_tr_cv(str(tmp_path / "j"))
    assert split.counts == (9, 1) and "words only in cv" in split.note
    counts = Counter(s for _, s in split.tr)
    assert counts == Counter({"jackson_0": 9})


def test_train_all_if_words_lost_trains_on_every_utterance_only_when_words_are_lost(
        tmp_path, kaldi_digits, env_with_path, repo_dir):
    u2s = _utt2spk(kaldi_digits, "data/train")
    ten = [u for u, s in u2s.items() if s == "jackson_0"]  # one of each digit
    make_data_dir(kaldi_digits, "data/train", tmp_path, "j", ten)
    split = plan_tr_cv(str(tmp_path / "j"), train_all_if_words_lost=True)
    assert split.counts == (10, 1) and {u for u, _ in split.cv} <= {u for u, _ in split.tr}
    assert "words only in cv" in split.note and "training on all 10 utterances" in split.note
    # two speakers: the cv words stay covered, so the option changes nothing
    twenty = [u for u, s in u2s.items() if s in ("jackson_0", "nicolas_0")]
    make_data_dir(kaldi_digits, "data/train", tmp_path, "d", twenty,
                  lambda u, s: s.split("_")[0])
    assert plan_tr_cv(str(tmp_path / "d"), train_all_if_words_lost=True).counts == (18, 2)
    # the shell step, as the recipe calls it
    p = subprocess.run([str(repo_dir / "utils/subset_data_dir_tr_cv.sh"), "--train-all-if-words-lost=true",
                        str(tmp_path / "j"), str(tmp_path / "tr"), str(tmp_path / "cv")],
                       env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "tr/utt2spk").read_text() == (tmp_path / "j/utt2spk").read_text()
    assert len((tmp_path / "cv/utt2spk").read_text().splitlines()) == 1
    assert "training on all 10 utterances" in p.stderr
