"""How many CPU threads a process uses: the cores it was given, never every core by default.

torch's own default is one intra-op thread per core in every process: two trainings started
together on 2 cores then ran at 0.175x the frames/s of one alone (threads of one process wait
at each parallel region for threads of its own that the other process has descheduled). Kaldi
gives each job one thread unless told otherwise; so do we. The decision (``decide``):

1. an explicit option (``--num-threads=N``, N > 0) wins;
2. in a process that torchrun started (``LOCAL_WORLD_SIZE`` > 1) inside a job that the job
   runner gave N cores (``HYBRIDASR_NUM_THREADS``, from ``run.pl``/``slurm.pl --num-threads
   N``): N divided among the job's processes (at least 1 each);
3. ``OMP_NUM_THREADS``: what the user, or a step script for one command, set for the process;
4. ``HYBRIDASR_NUM_THREADS``: the cores the job runner gave the job (1 when ``run.pl`` was not
   given ``--num-threads``, as Kaldi's run.pl books one slot per job);
5. otherwise 1.

Whatever the source, never more than the cores the process may run on: its CPU affinity
(``taskset``, a Slurm cpuset) and its cgroup's CPU quota (``/sys/fs/cgroup/cpu.max``, a
container's ``--cpus``). ``limit_environment`` applies it before torch is imported (every
``pybin/`` entry point, through ``hybridasr.cli.run_main``); ``apply`` sets torch's thread
pools in a process that has imported it.
"""
from __future__ import annotations

import logging
import math
import os
import sys
from dataclasses import dataclass
from typing import Mapping, Optional

JOB_THREADS_VAR = "HYBRIDASR_NUM_THREADS"  # set by hybridasr.jobs (run.pl, slurm.pl) per job
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ThreadChoice:
    num_threads: int
    reason: str  # what decided it, for the log

    def __str__(self):
        return f"{self.num_threads} CPU thread{'s' if self.num_threads != 1 else ''} " \
               f"({self.reason})"


# what limit_environment decided for this process (its OMP_NUM_THREADS is then ours, not the
# user's: the reason stays the original one)
_set_by_limit_environment: Optional[ThreadChoice] = None


def affinity_cores() -> int:
    """The cores this process may run on (its affinity mask; os.cpu_count() without one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cgroup_quota_cores(path: str = CGROUP_CPU_MAX) -> Optional[int]:
    """The cgroup v2 CPU quota in whole cores (``cpu.max``: ``<quota> <period>``, rounded up),
    None when there is none (``max``) or no such file."""
    try:
        with open(path, encoding="ascii") as f:
            words = f.read().split()
    except OSError:
        return None
    if len(words) != 2 or words[0] == "max":
        return None
    try:
        quota, period = int(words[0]), int(words[1])
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def available_cores(cpu_max: str = CGROUP_CPU_MAX) -> int:
    """The cores this process can use: its affinity, bounded by its cgroup's quota."""
    cores = affinity_cores()
    quota = cgroup_quota_cores(cpu_max)
    return min(cores, quota) if quota else cores


def _positive_int(env: Mapping[str, str], name: str) -> Optional[int]:
    value = env.get(name, "").strip()
    try:
        n = int(value)
    except ValueError:
        if value:
            log.warning("ignoring %s=%r: not a whole number", name, value)
        return None
    return n if n > 0 else None


def decide(explicit: int = 0, env: Optional[Mapping[str, str]] = None,
           cores: Optional[int] = None) -> ThreadChoice:
    """This process's thread count (see the module's docstring). ``explicit``: the tool's
    ``--num-threads`` (0: not given); ``env``: os.environ; ``cores``: ``available_cores()``."""
    if env is None:
        env = os.environ
        own = _set_by_limit_environment
        if not explicit and own and env.get("OMP_NUM_THREADS") == str(own.num_threads):
            return own
    cores = available_cores() if cores is None else cores
    job = _positive_int(env, JOB_THREADS_VAR)
    workers = _positive_int(env, "LOCAL_WORLD_SIZE") or 1
    omp = _positive_int(env, "OMP_NUM_THREADS")
    if explicit and explicit > 0:
        n, reason = explicit, "--num-threads"
    elif job and workers > 1:
        n, reason = max(1, job // workers), f"the job's {job} cores among {workers} processes"
    elif omp:
        n, reason = omp, "OMP_NUM_THREADS"
    elif job:
        n, reason = job, f"the job runner's --num-threads ({JOB_THREADS_VAR})"
    else:
        n, reason = 1, "one per process unless told: --num-threads or run.pl --num-threads"
    if n > cores:
        log.warning("%s asks for %d CPU threads, but this process may use %d cores: using %d",
                    reason, n, cores, cores)
        n, reason = cores, f"{reason}, bounded by the {cores} available cores"
    return ThreadChoice(n, reason)


def limit_environment(env=None) -> ThreadChoice:
    """Sets ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` to this process's thread count, so that
    torch and numpy's BLAS, imported after, start with that many threads (and the processes
    it starts inherit it); where torch is already imported, sets its pools too."""
    global _set_by_limit_environment
    choice = decide(0, env)
    env = os.environ if env is None else env
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(choice.num_threads)
    if env is os.environ:
        _set_by_limit_environment = choice
    if "torch" in sys.modules:
        apply(choice.num_threads)
    return choice


def apply(explicit: int = 0) -> ThreadChoice:
    """Sets torch's intra-op and inter-op thread counts from ``decide(explicit)``; the
    inter-op count only where no parallel work has started yet (torch allows it once)."""
    import torch

    choice = decide(explicit)
    torch.set_num_threads(choice.num_threads)
    if torch.get_num_interop_threads() != choice.num_threads:
        try:
            torch.set_num_interop_threads(choice.num_threads)
        except RuntimeError:  # inter-op work already started: the pool stays as it is
            pass
    return choice
