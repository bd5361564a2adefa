"""Kaldi's job runners (``utils/run.pl``, ``utils/slurm.pl``, ``utils/queue.pl``), stdlib only.

The contract, as Kaldi's run.pl has it::

    run.pl [options] [JOB=1:N] <log-file> <command...>

- options before (or around) the job range: ``--max-jobs-run N`` (``-tc N``), ``--gpu N``,
  ``--mem 4G``, ``--num-threads N``, ``--time T``, ``--config F``; run.pl ignores all but
  ``--max-jobs-run``, the cluster runners map them onto their submit command;
- ``NAME=a:b`` (or ``NAME=a``) runs jobs a..b; every occurrence of NAME in the command and the
  log name is replaced by the job number (plain text replacement, as Kaldi's ``s/NAME/n/g``);
- the command words are joined as Kaldi joins them (a word with whitespace is quoted) and run
  by bash, so ``"ark:gunzip -c x.gz |"`` and a separate ``\\|`` behave as in Kaldi;
- each log starts ``# <command>``, ``# Started at <date>``, ``#`` and ends
  ``# Accounting: time=<s> threads=<n>`` and ``# Ended (code <n>) at <date>, elapsed time <s>
  seconds``;
- every job runs with ``HYBRIDASR_NUM_THREADS`` set to its ``--num-threads`` (1 when not
  given, as Kaldi's run.pl books one slot per job): the cores it was given, which the
  toolkit's processes use (``hybridasr.utils.threads``) instead of torch's every core;
- a failure gives exit status 1 and ``run.pl: 2 / 4 failed, log is in log/name.*.log``
  (one job: ``run.pl: job failed, log is in log/name.log``).

The cluster runners are in ``hybridasr.jobs.cluster``. ``utils/run.pl``, ``slurm.pl``
and ``queue.pl`` are Perl scripts, as Kaldi's, that run ``python3 -m hybridasr.jobs.runner
<run.pl|slurm.pl|queue.pl> ...`` (``main``). These modules must import with the system python3
alone: no numpy, nothing outside the stdlib.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

_JOB_RANGE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+):(\d+)$")
_JOB_SINGLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+)$")
_ENDED = re.compile(r"^# Ended \(code (\d+)(?:; signal (\d+))?\)")


class JobSpecError(Exception):
    """Bad runner arguments (the runner prints the message and exits 1)."""


@dataclass
class JobRequest:
    """A parsed runner command line."""
    log: str
    command: str
    name: Optional[str] = None  # e.g. "JOB"
    start: int = 1
    end: int = 1
    max_jobs_run: Optional[int] = None
    options: Dict[str, str] = field(default_factory=dict)  # mem, gpu, num_threads, time, ...
    config: Optional[str] = None

    @property
    def num_threads(self) -> int:
        """The cores each job is given (``--num-threads``; 1, Kaldi's one slot, when not)."""
        return int(self.options.get("num_threads", "1"))

    @property
    def job_ids(self) -> range:
        return range(self.start, self.end + 1)

    def log_for(self, job_id: int) -> str:
        return self.log.replace(self.name, str(job_id)) if self.name else self.log

    def command_for(self, job_id: int) -> str:
        return self.command.replace(self.name, str(job_id)) if self.name else self.command

    def log_pattern(self) -> str:
        """The log name for messages: ``log/name.*.log`` for many jobs."""
        if self.name is None:
            return self.log
        if self.start == self.end:
            return self.log_for(self.start)
        return self.log.replace(self.name, "*")


def join_command(words: List[str]) -> str:
    """Kaldi's joining: a word without whitespace as is, else quoted ('...' if it holds a
    double quote, "..." otherwise)."""
    out = []
    for w in words:
        if w and not re.search(r"\s", w):
            out.append(w)
        elif '"' in w:
            out.append(f"'{w}'")
        else:
            out.append(f'"{w}"')
    return " ".join(out)


def parse_args(argv: List[str], prog: str) -> JobRequest:
    """Parses ``[options] [NAME=a:b] [options] <log> <command...>`` (Kaldi's order rules)."""
    args = list(argv)
    opts: Dict[str, str] = {}
    name, start, end = None, 1, 1
    max_jobs_run = None
    config = None
    for _ in range(2):  # options may come before and after the job range, as in Kaldi
        while len(args) >= 2 and args[0].startswith("-"):
            switch = args.pop(0)
            if "=" in switch and switch.startswith("--"):
                switch, value = switch.split("=", 1)
            elif switch == "-V":
                continue
            else:
                value = args.pop(0)
            if switch == "-pe" and args:  # -pe smp 4 (GridEngine)
                opts["num_threads"] = args.pop(0)
                continue
            key = switch.lstrip("-").replace("-", "_")
            if key in ("max_jobs_run", "tc"):
                try:
                    max_jobs_run = int(value)
                except ValueError:
                    max_jobs_run = 0
                if max_jobs_run <= 0:
                    raise JobSpecError(f"{prog}: invalid option {switch} {value}")
            elif key == "config":
                config = value
            else:
                opts[key] = value
        if args:
            m = _JOB_RANGE.match(args[0]) or _JOB_SINGLE.match(args[0])
            if m:
                name = m.group(1)
                start = int(m.group(2))
                end = int(m.group(3)) if m.lastindex == 3 else start
                if start > end:
                    raise JobSpecError(f"{prog}: invalid job range {args[0]}")
                if start <= 0:
                    raise JobSpecError(f"{prog}: invalid job range {args[0]}, start must be "
                                       f"strictly positive")
                args.pop(0)
            elif re.match(r".+=.*:.*$", args[0]):
                print(f"{prog}: Warning: suspicious first argument to {prog}: {args[0]}",
                      file=sys.stderr)
    if len(args) < 2:
        raise JobSpecError(
            f"Usage: {prog} [options] [JOB=1:n] <log-file> <command...>\n"
            f" e.g.: {prog} JOB=1:4 exp/log/compute.JOB.log echo JOB\n"
            f"Options: --max-jobs-run <n> (at most n jobs at a time), --gpu <0|1>, "
            f"--mem <mem>, --num-threads <n>, --config <conf>")
    log = args.pop(0)
    threads = opts.get("num_threads", "1")
    if not threads.isdigit() or int(threads) <= 0:
        raise JobSpecError(f"{prog}: invalid option --num-threads {threads} (a number of "
                           f"cores, 1 or more)")
    if name is not None and name not in log and end > start:
        raise JobSpecError(f"{prog}: you are trying to run a parallel job but you are putting "
                           f"the output into just one log file ({log})")
    return JobRequest(log=log, command=join_command(args), name=name, start=start, end=end,
                      max_jobs_run=max_jobs_run, options=opts, config=config)


def date_string() -> str:
    """What ``date`` prints: ``Sun Nov 22 17:27:07 UTC 2026``."""
    return time.strftime("%a %b %e %H:%M:%S %Z %Y")


def log_head(command: str) -> str:
    return f"# {command}\n# Started at {date_string()}\n#\n"


def job_environment(num_threads: int) -> Dict[str, str]:
    """A job's environment: this one, with the cores the job was given."""
    return dict(os.environ, HYBRIDASR_NUM_THREADS=str(num_threads))


def log_tail(returncode: int, elapsed: int, num_threads: int = 1) -> str:
    """The closing lines; a negative return code (killed by a signal) reads like Kaldi's."""
    if returncode < 0:
        code = f"code 0; signal {-returncode}"
    else:
        code = f"code {returncode}"
    return (f"# Accounting: time={elapsed} threads={num_threads}\n"
            f"# Ended ({code}) at {date_string()}, elapsed time {elapsed} seconds\n")


def ended_code(log: str) -> Optional[int]:
    """The exit code a finished job wrote at the end of its log (None: no such line)."""
    try:
        with open(log, "r", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[-5:]
    except OSError:
        return None
    for line in reversed(lines):
        m = _ENDED.match(line)
        if m:
            return int(m.group(1)) or (128 + int(m.group(2)) if m.group(2) else 0)
    return None


def report_failures(req: JobRequest, prog: str, num_failed: int) -> int:
    """Prints Kaldi's failure line; returns the runner's exit status."""
    if num_failed == 0:
        return 0
    njobs = req.end - req.start + 1
    if njobs == 1:
        print(f"{prog}: job failed, log is in {req.log_pattern()}", file=sys.stderr)
        if "JOB" in req.log_pattern() and req.name is None:
            print(f"{prog}: probably you forgot to put JOB=1:$nj in your script.",
                  file=sys.stderr)
    else:
        print(f"{prog}: {num_failed} / {njobs} failed, log is in {req.log_pattern()}",
              file=sys.stderr)
    return 1


def _default_max_jobs() -> int:
    """Kaldi's default: as many jobs at a time as there are processors."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 32


def process_trees(roots: List[int]) -> List[int]:
    """The processes ``roots`` and all their descendants (from /proc; the roots alone where
    there is no /proc), parents first."""
    children: Dict[int, List[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return list(roots)
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(name))
    tree = list(roots)
    for pid in tree:  # (grows while it is read: breadth first)
        tree += children.get(pid, [])
    return tree


class LocalRunner:
    """Runs the jobs on this machine, at most ``max_jobs_run`` at a time (run.pl)."""

    def __init__(self, req: JobRequest, prog: str = "run.pl"):
        self.req, self.prog = req, prog
        self.max_jobs = req.max_jobs_run or _default_max_jobs()
        self._procs: Dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._stopping = False

    def _run_one(self, job_id: int, results: Dict[int, int], slots: threading.Semaphore):
        try:
            log = self.req.log_for(job_id)
            cmd = self.req.command_for(job_id)
            d = os.path.dirname(log)
            if d:
                os.makedirs(d, exist_ok=True)
            t0 = time.time()
            with open(log, "w", encoding="utf-8") as f:
                f.write(log_head(cmd))
            with open(log, "ab") as f:
                with self._lock:
                    if self._stopping:
                        results[job_id] = 1
                        return
                    # in run.pl's process group, as Kaldi's: a kill of the recipe's group
                    # (kill -9 included) reaches the jobs too, none is left running
                    p = subprocess.Popen(["bash", "-c", f"( {cmd} )"], stdin=subprocess.DEVNULL,
                                         stdout=f, stderr=subprocess.STDOUT,
                                         env=job_environment(self.req.num_threads))
                    self._procs[job_id] = p
                rc = p.wait()
            elapsed = int(round(time.time() - t0))
            with open(log, "a", encoding="utf-8") as f:
                f.write(log_tail(rc, elapsed, self.req.num_threads))
            results[job_id] = rc
        except OSError as e:
            print(f"{self.prog}: error running job {job_id} (log {self.req.log_for(job_id)}): "
                  f"{e}", file=sys.stderr)
            results[job_id] = 1
        finally:
            with self._lock:
                self._procs.pop(job_id, None)
            slots.release()

    def _terminate(self, signum, _frame):
        with self._lock:
            self._stopping = True
            for pid in process_trees([p.pid for p in self._procs.values()]):
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        signal.signal(signum, signal.SIG_DFL)
        print(f"{self.prog}: interrupted, jobs stopped", file=sys.stderr)
        os._exit(130 if signum == signal.SIGINT else 143)

    def run(self) -> int:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, self._terminate)
        results: Dict[int, int] = {}
        slots = threading.Semaphore(self.max_jobs)
        threads = []
        for job_id in self.req.job_ids:
            slots.acquire()
            t = threading.Thread(target=self._run_one, args=(job_id, results, slots),
                                 daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            while t.is_alive():  # join with a timeout, so that signals get through
                t.join(0.2)
        num_failed = sum(1 for j in self.req.job_ids if results.get(j, 1) != 0)
        return report_failures(self.req, self.prog, num_failed)


def main_local(argv: Optional[List[str]] = None, prog: str = "run.pl") -> int:
    try:
        req = parse_args(sys.argv[1:] if argv is None else argv, prog)
    except JobSpecError as e:
        print(str(e), file=sys.stderr)
        return 1
    return LocalRunner(req, prog).run()
