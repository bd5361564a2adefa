"""One trainer per exp dir: a second train.py on a dir in use fails at once naming
the first's pid and command; the lock goes with the process, even killed with SIGKILL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hybridasr.errors import ConfigError
from hybridasr.utils.dir_lock import LOCK_NAME, dir_lock

HOLD = ("import sys, time; from hybridasr.utils.dir_lock import dir_lock\n"
        "with dir_lock(sys.argv[1], 'training'):\n"
        "    print('held', flush=True); time.sleep(60)\n")


def _holder(path):
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_second_holder_fails_naming_the_first(tmp_path):
    p = _holder(tmp_path)
    try:
        t = time.perf_counter()
        with pytest.raises(ConfigError) as e:
            with dir_lock(str(tmp_path), "training"):
                pass
        assert time.perf_counter() - t < 5
        assert f"pid {p.pid}, command -c {tmp_path}" in str(e.value)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    # the kernel released it with the killed process
    with dir_lock(str(tmp_path), "training"):
        assert (tmp_path / LOCK_NAME).read_text().startswith(f"{os.getpid()} ")


def test_train_py_refuses_a_busy_exp_dir(tmp_path, kaldi_digits):
    from train_helpers import load_pybin, make_tr_cv

    tr, cv, ali = make_tr_cv(kaldi_digits, tmp_path)
    exp = tmp_path / "exp"
    p = _holder(exp)
    try:
        with pytest.raises(ConfigError, match=f"in use by another process: pid {p.pid}"):
            load_pybin("train").main(["--model=mlp", "--max-iters=1", str(tr), str(cv),
                                      str(ali), str(ali), str(exp)])
        assert not (exp / "train_state.json").exists()
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
