"""The default recipe on kaldi_polish cut to one speaker's utterances including two over 20 s
(16 kHz, binary tri1 alignments with a 1,192-pdf tree, ``final.mdl`` a symlink to ``35.mdl``,
a lang dir called ``lang_bigram``): every stage with the recipe's defaults, the training cut to
one short epoch (what is asserted is the shape handled, not an accuracy); in a file of its own
so that it runs beside the other shapes (tests/test_recipe_shapes.py)."""
from __future__ import annotations

import json
import os

import pytest

from kaldi_shapes import polish_dir, utt_durations
from test_recipe_e2e import make_recipe_copy
from test_recipe_shapes import best_wer, env, run  # noqa: F401 (env: the fixture)

pytestmark = pytest.mark.slow


def test_polish_long_sentences_one_speaker(tmp_path_factory, repo_dir, kaldi_polish, env):
    durs = utt_durations(kaldi_polish, "data/train")
    kuba = sorted((u for u in durs if u.startswith("kuba")), key=lambda u: -durs[u])
    utts = kuba[:3] + kuba[-9:]  # the three longest (two over 20 s) and nine short ones
    assert durs[utts[0]] > 25 and durs[utts[1]] > 20
    root = tmp_path_factory.mktemp("polish")
    kaldi = polish_dir(kaldi_polish, root / "kaldi", utts)
    os.symlink("lang", kaldi / "data/lang_bigram")
    s5 = make_recipe_copy(repo_dir, root / "s5")
    # a network trained on 12 utterances searches the 5,748-word graph widely: --max-active
    # 1000 (of 7000) and --lattice-beam 4 (of 8) keep the decode of its 10 test utterances to
    # ~3 s instead of ~100 s (at beam 8 their lattices hold 1.67 arcs a frame, 0.05 at 4); one
    # epoch of 20 updates (the defaults' 4 of 100: no WER is asserted here) still trains
    # on every utterance, the long ones (over --max-frames=2000) included
    run(s5, env, "--kaldi-dir", kaldi, "--lang", "data/lang_bigram", "--ali", "exp/tri1_ali",
        "--graph", "exp/tri1/graph", "--decode-opts", "--max-active 1000 --lattice-beam 4",
        "--train-opts", "--max-iters=1 --min-batches-per-epoch=20")
    lengths = dict(line.split() for line in open(s5 / "data/train/utt2num_frames"))
    assert max(int(n) for n in lengths.values()) > 2500  # longer than --max-frames=2000
    report = json.loads((s5 / "exp/ali_train/import_report.json").read_text())
    assert report["num_pdfs"] == 1192 and report["utterances_imported"] == 12
    assert best_wer(s5 / "exp/blstm/decode_test")[2] == 152
