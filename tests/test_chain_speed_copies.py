"""Chain supervision of speed-perturbed copies (sp<F>-<utt>, Kaldi's perturb_data_dir_speed
names): read_supervisions gives each copy the phones of its original's alignment at the same
relative times (stretched to the copy's frames), as perturb_ali.py does for frame targets; a
copy of the wrong length is a counted skip."""
from __future__ import annotations

import numpy as np
import pytest

from chain_helpers import monophone_chain_model
from hybridasr.align.alignments import iter_alignment_file
from hybridasr.align.speed_perturb import resample_segments
from hybridasr.chain.supervision_dir import read_supervisions
from hybridasr.train.lfmmi import LfMmiOptions


def test_resample_segments_keeps_relative_times_and_every_segment():
    segs = [(1, 30), (2, 10), (3, 60)]
    assert resample_segments(segs, 100) == segs
    assert resample_segments(segs, 111) == [(1, 33), (2, 11), (3, 67)]  # speed 0.9
    assert resample_segments(segs, 91) == [(1, 27), (2, 9), (3, 55)]    # speed 1.1
    # a one-frame phone stays one frame; too few frames for the phones: None
    assert resample_segments([(1, 1), (2, 1), (3, 8)], 3) == [(1, 1), (2, 1), (3, 1)]
    assert resample_segments([(1, 1), (2, 1), (3, 8)], 2) is None
    for n in range(4, 40):
        out = resample_segments([(1, 5), (2, 1), (3, 1), (4, 9)], n)
        assert sum(d for _, d in out) == n and min(d for _, d in out) >= 1


@pytest.fixture(scope="module")
def setup(kaldi_digits, tmp_path_factory):
    tree, tm = monophone_chain_model(kaldi_digits, tmp_path_factory.mktemp("chain_sp"))
    alis = dict(iter_alignment_file(str(kaldi_digits / "exp/mono_ali/ali.1.gz")))
    return tree, tm, alis


def test_speed_copies_supervised_from_their_originals(setup, kaldi_digits):
    tree, tm, alis = setup
    utt, other = sorted(alis)[:2]
    n = len(alis[utt])
    wanted = {utt: n, f"sp1.0-{utt}": n, f"sp0.9-{utt}": int(round(n / 0.9)),
              f"sp1.1-{utt}": int(round(n / 1.1)), f"sp0.9-{other}": 3 * len(alis[other]),
              "sp0.9-nowhere": 50}
    sups, skipped = read_supervisions(str(kaldi_digits / "exp/mono_ali"), wanted, tree, tm,
                                      LfMmiOptions())
    assert sorted(sups) == sorted([utt, f"sp1.0-{utt}", f"sp0.9-{utt}", f"sp1.1-{utt}"])
    assert skipped["length_mismatch"] == [f"sp0.9-{other}"]  # not its original's length / 0.9
    assert skipped["no_alignment"] == ["sp0.9-nowhere"]
    for key, frames in wanted.items():
        if key in sups:
            assert sups[key].num_frames == -(-frames // 3), key
    # at speed 1.0 the copy's numerator is its original's; the stretched ones are other
    # graphs over the same pdfs (the same phones)
    same = lambda a, b: all(np.array_equal(x, y) for x, y in  # noqa: E731
                            zip(vars(a.fst).values(), vars(b.fst).values()))
    assert same(sups[utt], sups[f"sp1.0-{utt}"])
    labels = set(sups[utt].fst.ilabel.tolist())
    for key in (f"sp0.9-{utt}", f"sp1.1-{utt}"):
        assert not same(sups[utt], sups[key])
        assert set(sups[key].fst.ilabel.tolist()) == labels, key
