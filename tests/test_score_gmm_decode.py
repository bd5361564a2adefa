"""egs/kaldi_dir/s5/local/score_gmm_decode.sh scores the GMM's own lattices over the LM weights
and word insertion penalties Kaldi scored, read from its wer_* names: local/score.sh's wer_LMWT
(no penalty) and score_kaldi.sh's wer_LMWT_WIP, with the same file names as Kaldi's."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def _gmm_decode(tmp_path, kaldi_digits, names):
    """A copy of kaldi_digits' mono decode dir whose wer_* files carry ``names``."""
    src = tmp_path / "decode"
    src.mkdir()
    for f in (kaldi_digits / "exp/mono/decode").iterdir():
        if f.name.startswith("lat."):
            shutil.copy(f, src / f.name)
    for n in names:
        (src / n).write_text("%WER 0.00 [ 0 / 30, 0 ins, 0 del, 0 sub ]\n")
    return src


@pytest.mark.parametrize("names, want", [
    ([f"wer_{w}" for w in range(9, 12)], {f"wer_{w}" for w in range(9, 12)}),
    ([f"wer_{w}_{p}" for w in (8, 9) for p in ("0.0", "0.5", "1.0")],
     {f"wer_{w}_{p}" for w in (8, 9) for p in ("0.0", "0.5", "1.0")}),
])
def test_the_gmm_lattices_are_scored_as_kaldi_did(tmp_path, repo_dir, kaldi_digits,
                                                   env_with_path, names, want):
    src = _gmm_decode(tmp_path, kaldi_digits, names)
    out = tmp_path / "gmm_decode_test"
    p = subprocess.run(["local/score_gmm_decode.sh", str(src), str(kaldi_digits / "exp/mono/graph"),
                        str(kaldi_digits / "data/test"), str(out)],
                       cwd=repo_dir / "egs/kaldi_dir/s5", env=env_with_path,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    got = {f for f in os.listdir(out) if f.startswith("wer_")}
    assert got == want
    for f in got:  # real scores of the real lattices: the digits mono GMM makes no error
        assert "\n%WER 0.00 [ 0 / 30," in (out / f).read_text()
