"""Runs a command and writes its peak memory to a JSON file (``experiments/seeds.py``'s wrapper).

Usage: python experiments/seeds_measure.py --out FILE [--gpu] <command...>

``peak_rss_mb``: the largest resident set of any process of the command's tree (``ru_maxrss``
of the waited-for children: with ``steps/nnet/train.sh``'s ``run.pl`` in between, the training
process, or under torchrun its largest rank); ``gpu_peak_mb`` (``--gpu``): the most GPU memory
``nvidia-smi`` saw in use during the command, minus what was in use before it started (polled
every 0.2 s; null without nvidia-smi). Exits with the command's status.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time


def gpu_used_mb():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=10).stdout
        return sum(float(x) for x in out.split())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[0] != "--out":
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out, cmd = argv[1], argv[2:]
    gpu = bool(cmd) and cmd[0] == "--gpu"
    if gpu:
        cmd = cmd[1:]
    base = gpu_used_mb() if gpu else None
    peak = [base]
    stop = threading.Event()

    def poll():
        while not stop.wait(0.2):
            used = gpu_used_mb()
            if used is not None and (peak[0] is None or used > peak[0]):
                peak[0] = used

    poller = threading.Thread(target=poll, daemon=True)
    if gpu and base is not None:
        poller.start()
    t0 = time.perf_counter()
    rc = subprocess.call(cmd)
    wall = time.perf_counter() - t0
    stop.set()
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rec = {"rc": rc, "wall_s": wall, "peak_rss_mb": rss_kb / 1024.0,
           "gpu_peak_mb": (peak[0] - base) if gpu and base is not None else None}
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(rec, f)
    os.replace(tmp, out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
