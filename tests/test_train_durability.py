"""Checkpoint durability: every file ``train_state.json`` names (the models, the best epoch's
optimizer state) is fsynced, and so is its directory after the rename, before the state file
that names it is renamed into place; and ``hybridasr.utils.atomic`` does that for any write."""
from __future__ import annotations

import json
import os

import pytest

from train_helpers import make_tr_cv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_PY = os.path.join(REPO, "pybin", "train.py")
TINY = ["--model=blstm", "--num-layers=1", "--hidden-size=16", "--dropout=0",
        "--seq-ordering=laplace:2", "--max-frames=3000", "--num-workers=0",
        "--learning-rate=0.004", "--lr-schedule=newbob", "--max-iters=2",
        "--progress-every=0", "--num-threads=1"]


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_durable"))


def _train_main(argv):
    import importlib.util

    spec = importlib.util.spec_from_file_location("pybin_train", TRAIN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main(argv)


class Recorder:
    """os.fsync and os.replace, recorded in order: ("fsync", path) / ("replace", src, dst)."""

    def __init__(self, monkeypatch):
        self.events = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            self.events.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
            return real_fsync(fd)

        def replace(src, dst, *a, **kw):
            self.events.append(("replace", os.path.realpath(os.fspath(src)),
                                os.path.realpath(os.fspath(dst))))
            return real_replace(src, dst, *a, **kw)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def check_durable_before(self, path: str, before: int) -> int:
        """``path`` was last renamed into place before event ``before``, its temporary file
        fsynced before that rename and its directory fsynced after it (and before
        ``before``); returns the rename's index."""
        path = os.path.realpath(path)
        renames = [i for i, e in enumerate(self.events[:before])
                   if e[0] == "replace" and e[2] == path]
        assert renames, f"{path} was not renamed into place before event {before}"
        r = renames[-1]
        tmp = self.events[r][1]
        assert ("fsync", tmp) in self.events[:r], f"{path}: its data were not fsynced"
        assert ("fsync", os.path.dirname(path)) in self.events[r + 1:before], \
            f"{path}: its directory was not fsynced after the rename"
        return r


def _state_renames(rec: Recorder, state_path: str):
    state_path = os.path.realpath(state_path)
    return [i for i, e in enumerate(rec.events) if e[0] == "replace" and e[2] == state_path]


def test_every_file_the_state_names_is_durable_before_the_state(digits, tmp_path, monkeypatch):
    from hybridasr.train import checkpoint as ckpt

    tr, cv, ali = digits
    exp = tmp_path / "exp"
    rec = Recorder(monkeypatch)
    assert _train_main([*TINY, str(tr), str(cv), str(ali), str(ali), str(exp)]) == 0
    state_file = str(exp / ckpt.STATE_FILE)
    state = json.loads(open(state_file, encoding="utf-8").read())
    renames = _state_renames(rec, state_file)
    assert len(renames) == 1 + state["epoch"]  # the initial model's state, then every epoch
    # each state written (the k-th after epoch k) names the models of epochs 0..k and the
    # best epoch's optimizer state: all durable before that state was renamed into place
    for k, r_state in enumerate(renames):
        named = [h["model"] for h in state["history"][:k + 1] if h.get("model")]
        best_k = max(h["epoch"] for h in state["history"][:k + 1] if h["accepted"])
        named = [os.path.join(exp, m) for m in named]
        named.append(ckpt.optimizer_path(str(exp), best_k))
        for path in named:
            rec.check_durable_before(path, r_state)
    # and the state file itself
    rec.check_durable_before(state_file, len(rec.events))
    # final.nnet's link is made durable too
    final = os.path.realpath(exp / "final.nnet")
    assert final == os.path.realpath(exp / state["best"])
    last_link = max(i for i, e in enumerate(rec.events)
                    if e[0] == "replace" and e[2].endswith("final.nnet"))
    assert ("fsync", os.path.realpath(exp)) in rec.events[last_link + 1:]


def test_atomic_path_fsyncs_file_then_renames_then_fsyncs_dir(tmp_path, monkeypatch):
    from hybridasr.utils.atomic import atomic_open, atomic_path

    rec = Recorder(monkeypatch)
    out = tmp_path / "model.bin"
    with atomic_path(str(out)) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"abc")
    assert out.read_bytes() == b"abc"
    rec.check_durable_before(str(out), len(rec.events))
    n = len(rec.events)
    with atomic_open(str(tmp_path / "text"), "w", encoding="utf-8") as f:
        f.write("x\n")
    rec.check_durable_before(str(tmp_path / "text"), len(rec.events))
    # atomic_open fsyncs its file once (through its own descriptor), not twice
    assert sum(1 for e in rec.events[n:] if e[0] == "fsync"
               and os.path.basename(e[1]).startswith(".text.")) == 1
    # a failed write leaves neither the target nor a temporary file (and renames nothing)
    n = len(rec.events)
    with pytest.raises(RuntimeError):
        with atomic_path(str(tmp_path / "bad")) as tmp:
            raise RuntimeError("writer failed")
    assert not (tmp_path / "bad").exists()
    assert not [e for e in rec.events[n:] if e[0] == "replace"]
    assert sorted(os.listdir(tmp_path)) == ["model.bin", "text"]
