"""The default recipe on a Kaldi dir of one speaker with 44.1 kHz stereo audio and binary
alignments, ``--nj 2`` (features split by utterance, decoding capped at the one speaker), the
training cut to one short epoch; in a file of its own so that it runs beside the other shapes
(tests/test_recipe_shapes.py)."""
from __future__ import annotations

import json

import pytest

from kaldi_shapes import digits_dir
from test_recipe_e2e import make_recipe_copy
from test_recipe_shapes import best_wer, env, run  # noqa: F401 (env: the fixture)

pytestmark = pytest.mark.slow


def test_one_speaker_44k_stereo(tmp_path_factory, repo_dir, kaldi_digits, env):
    root = tmp_path_factory.mktemp("one_speaker")
    kaldi = digits_dir(kaldi_digits, root / "kaldi", ["theo_0", "theo_2"], ["theo_1"],
                       person_speakers=True, rate=44100, stereo=True, ali_jobs=1,
                       ali_binary=True)
    s5 = make_recipe_copy(repo_dir, root / "s5")
    # the training cut to one epoch of 20 updates (no WER is asserted here)
    out = run(s5, env, "--kaldi-dir", kaldi, "--nj", 2,
              "--train-opts", "--max-iters=1 --min-batches-per-epoch=20")
    # features: split by utterance into 2 jobs although there is one speaker
    assert (s5 / "data/train/split2utt/2/wav.scp").exists()
    assert "using channel 0" in (s5 / "exp/make_mfcc/train/make_mfcc_train.1.log").read_text()
    assert "data/test has only 1 speaker(s): using --nj 1 instead of 2" in out
    assert (s5 / "exp/blstm/decode_test/num_jobs").read_text().strip() == "1"
    report = json.loads((s5 / "exp/ali_train/import_report.json").read_text())
    assert report["utterances_imported"] == 20  # 44.1 kHz frames match the 8 kHz alignments
    assert best_wer(s5 / "exp/blstm/decode_test")[2] == 10
