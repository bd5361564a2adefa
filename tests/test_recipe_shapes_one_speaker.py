"""The default recipe on kaldi_digits cut to one speaker, 10 training utterances (one of each
digit), on three seeds; in a file of its own so that it runs beside the other shapes
(tests/test_recipe_shapes.py)."""
from __future__ import annotations

import json

import pytest

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy
from test_recipe_shapes import best_wer, env, run  # noqa: F401 (env: the fixture)

pytestmark = pytest.mark.slow


def test_one_speaker_ten_utterances_on_three_seeds(tmp_path_factory, repo_dir, kaldi_digits,
                                                   env):
    """1 speaker, 10 training utterances (one of each digit), tested on 30 utterances of the
    speaker's other sessions: no cv utterance can keep its digit in training, so stage 2
    trains the frame MLP on all 10 with the fixed schedule; at most 10% WER on each seed (a
    Kaldi GMM on a real dir of this shape: 23.33%). Newbob on the held-out utterance failed
    here: every epoch rejected."""
    root = tmp_path_factory.mktemp("one_speaker_ten")
    kaldi = digits_dir(kaldi_digits, root / "kaldi", ["jackson_0"],
                       ["jackson_1", "jackson_2", "jackson_3"], person_speakers=True,
                       test_from="train")
    s5 = make_recipe_copy(repo_dir, root / "s5")
    out = run(s5, env, "--kaldi-dir", kaldi, "--stop-stage", 2)
    assert "training on all 10 utterances" in out
    assert (s5 / "data/train_tr90/utt2spk").read_text() == \
        (s5 / "data/train/utt2spk").read_text()
    for seed in (777, 1, 2):
        name = f"blstm_s{seed}"
        out = run(s5, env, "--kaldi-dir", kaldi, "--stage", 3, "--stop-stage", 4,
                  "--exp-name", name, "--train-opts", f"--seed={seed}")
        assert "--schedule-config conf/schedule_all_data.conf  (no cv set" in out
        assert "--speed-perturb false" in out and not (s5 / "data/train_sp").exists()
        # the frame MLP of tutorial-sized dirs, on +-5 frames, frame-shuffled
        assert "--model-config conf/model/mlp_small.conf  (" in out
        conf = (s5 / "exp" / name / "train.conf").read_text().split("\n")
        assert {"--model=mlp", "--splice=5", "--seq-ordering=frame_shuffle"} <= set(conf)
        metrics = [json.loads(line) for line in open(s5 / "exp" / name / "metrics.jsonl")]
        trained = [m for m in metrics if m["epoch"] > 0]
        assert len(trained) == 4 and all(m["accepted"] for m in trained)
        wer = best_wer(s5 / "exp" / name / "decode_test")
        assert wer[2] == 30 and wer[0] <= 10.0, (seed, wer)
