"""Kaldi's cluster job runners ``utils/slurm.pl`` and ``utils/queue.pl``: one array job per
``JOB=a:b``, submitted with ``sbatch``/``qsub`` and waited for; each job runs exactly as
``run.pl`` runs it and writes the same log (``hybridasr.jobs.runner``). Options map onto
the submit command through a Kaldi-style config: ``--config``, else ``conf/slurm.conf`` (or
``conf/queue.conf``) when it exists, as in Kaldi, else the runner's default.
Standard library only, as ``job_runner``.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from hybridasr.jobs.runner import (JobRequest, JobSpecError, ended_code, parse_args,
                                        report_failures)


def job_script(cmd: str, log: str, cwd: str, num_threads: int = 1) -> str:
    """A bash script that runs one job like run.pl does and writes the same log lines
    (``HYBRIDASR_NUM_THREADS``: the cores the job asked for, as run.pl sets it)."""
    q = shlex.quote
    return (
        "#!/usr/bin/env bash\n"
        f"cd {q(cwd)} || exit 1\n"
        f"export HYBRIDASR_NUM_THREADS={int(num_threads)}\n"
        f"__log={q(log)}\n"
        'mkdir -p "$(dirname "$__log")"\n'
        f"{{ printf '# %s\\n' {q(cmd)}; echo \"# Running on $(hostname)\"; "
        'echo "# Started at $(date)"; echo \'#\'; } > "$__log"\n'
        "__t1=$(date +%s)\n"
        # scancel, a time limit or preemption send SIGTERM to every process of the job: the
        # command dies of it, this script notes it and ends the log with the command's code
        "trap 'echo \"# Got SIGTERM at $(date) (scancel, time limit or preemption)\" "
        '>> "$__log"\' TERM\n'
        f"( {cmd} ) >> \"$__log\" 2>&1 < /dev/null\n"
        "__ret=$?\n"
        "__t2=$(date +%s)\n"
        f'echo "# Accounting: time=$((__t2 - __t1)) threads={int(num_threads)}" >> "$__log"\n'
        'echo "# Ended (code $__ret) at $(date), elapsed time $((__t2 - __t1)) seconds" '
        '>> "$__log"\n'
        "[ $__ret -eq 0 ] || exit 1\n"
        "exit 0\n")


def parse_cluster_config(text: str, path: str) -> Tuple[List[str],
                                                       List[Tuple[str, str, List[str]]],
                                                       Dict[str, str]]:
    """Kaldi's queue.pl/slurm.pl config format::

        command sbatch --export=ALL
        option mem=* --mem-per-cpu $0
        option mem=0          # nothing for --mem 0
        default gpu=0
        option gpu=* --gres=gpu:$0 -p gpu

    ``text`` is the config's text, ``path`` its name for messages.
    Returns (command words, [(name, value-or-*, words)], defaults)."""
    command: List[str] = []
    rules: List[Tuple[str, str, List[str]]] = []
    defaults: Dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0] == "command" and len(words) > 1:
            command = words[1:]
        elif words[0] in ("option", "default") and len(words) > 1 and "=" in words[1]:
            name, value = words[1].split("=", 1)
            name = name.replace("-", "_")
            if words[0] == "default":
                defaults[name] = value
            else:
                rules.append((name, value, words[2:]))
        else:
            raise JobSpecError(f"{path}:{lineno}: bad line {raw.strip()!r} (expected "
                               f"'command ...', 'option name=value ...' or 'default name=value')")
    if not command:
        raise JobSpecError(f"{path}: no 'command' line")
    return command, rules, defaults


def option_words(options: Dict[str, str], rules, defaults, prog: str, conf: str) -> List[str]:
    """The submit-command words for the runner options (Kaldi's config matching)."""
    values = dict(defaults)
    values.update(options)
    words: List[str] = []
    for name, value in values.items():
        exact = [w for n, v, w in rules if n == name and v == value]
        star = [w for n, v, w in rules if n == name and v == "*"]
        if exact:
            words += exact[0]
        elif star:
            words += [w.replace("$0", value) for w in star[0]]
        else:
            raise JobSpecError(f"{prog}: option --{name.replace('_', '-')} {value} is not "
                               f"described in the config ({conf})")
    return words


@dataclass
class Cluster:
    """What differs between Slurm and GridEngine."""
    prog: str
    default_config: str
    task_var: str  # the environment variable holding the array task id
    config_file: str  # read instead of default_config when it exists (Kaldi's conf/*.conf)

    def submit_words(self, req: JobRequest, name: str, out_pattern: str) -> List[str]:
        """Wait-for-completion, array and output options (``TASK`` in out_pattern: task id)."""
        raise NotImplementedError


class Slurm(Cluster):
    def __init__(self):
        super().__init__(
            prog="slurm.pl", task_var="SLURM_ARRAY_TASK_ID", config_file="conf/slurm.conf",
            default_config="\n".join([
                "command sbatch --export=ALL --ntasks-per-node=1",
                "option time=* --time $0",
                "option mem=* --mem-per-cpu $0",
                "option mem=0",
                "option num_threads=* --cpus-per-task $0",
                "option num_threads=1 --cpus-per-task 1",
                "default gpu=0",
                "option gpu=0",
                "option gpu=* -p gpu --gres=gpu:$0",
            ]))

    def submit_words(self, req: JobRequest, name: str, out_pattern: str) -> List[str]:
        arr = f"{req.start}-{req.end}"
        if req.max_jobs_run:
            arr += f"%{req.max_jobs_run}"
        return ["--wait", f"--job-name={name}", f"--array={arr}",
                f"--output={out_pattern.replace('TASK', '%a')}", "--open-mode=append"]


class GridEngine(Cluster):
    def __init__(self):
        super().__init__(
            prog="queue.pl", task_var="SGE_TASK_ID", config_file="conf/queue.conf",
            default_config="\n".join([
                "command qsub -v PATH -cwd -S /bin/bash -j y -l arch=*64*",
                "option mem=* -l mem_free=$0,ram_free=$0",
                "option mem=0",
                "option num_threads=* -pe smp $0",
                "option num_threads=1",
                "option time=* -l h_rt=$0",
                "default gpu=0",
                "option gpu=0",
                "option gpu=* -l gpu=$0 -q g.q",
            ]))

    def submit_words(self, req: JobRequest, name: str, out_pattern: str) -> List[str]:
        words = ["-sync", "y", "-N", name, "-t", f"{req.start}:{req.end}",
                 "-o", out_pattern.replace("TASK", "$TASK_ID")]
        if req.max_jobs_run:
            words += ["-tc", str(req.max_jobs_run)]
        return words


def main_cluster(cluster: Cluster, argv: Optional[List[str]] = None) -> int:
    """slurm.pl / queue.pl: one array job, waited for; the logs tell which jobs failed."""
    prog = cluster.prog
    try:
        req = parse_args(sys.argv[1:] if argv is None else argv, prog)
        if not req.config and os.path.isfile(cluster.config_file):
            req.config = cluster.config_file  # as Kaldi: conf/slurm.conf when it exists
        if req.config:
            conf_name = req.config
            try:
                with open(req.config, "r", encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise JobSpecError(f"{prog}: cannot read config {req.config}: "
                                   f"{e.strerror}") from None
        else:
            conf_name, text = f"{prog}'s default config", cluster.default_config
        command, rules, defaults = parse_cluster_config(text, conf_name)
        extra = option_words(req.options, rules, defaults, prog, conf_name)
    except JobSpecError as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1

    logdir = os.path.dirname(req.log_for(req.start)) or "."
    qdir = os.path.join(logdir, "q")
    os.makedirs(qdir, exist_ok=True)
    base = os.path.basename(req.log.replace(req.name, "") if req.name else req.log)
    base = re.sub(r"[^A-Za-z0-9_.-]", "", base.replace(".log", "")).strip(".") or "job"
    cwd = os.getcwd()
    for j in req.job_ids:  # one script per job: the command exactly as run.pl would run it
        path = os.path.join(qdir, f"{base}.{j}.sh")
        with open(path, "w", encoding="utf-8") as f:
            f.write(job_script(req.command_for(j), os.path.abspath(req.log_for(j)), cwd,
                               req.num_threads))
        os.chmod(path, 0o755)
        try:
            os.unlink(req.log_for(j))  # a stale log must not pass for this run's
        except OSError:
            pass
    array_script = os.path.abspath(os.path.join(qdir, f"{base}.sh"))
    with open(array_script, "w", encoding="utf-8") as f:
        f.write("#!/usr/bin/env bash\n"
                f"exec bash {shlex.quote(os.path.abspath(qdir))}/{base}."
                f"\"${cluster.task_var}\".sh\n")
    os.chmod(array_script, 0o755)
    out_pattern = os.path.abspath(os.path.join(qdir, f"{base}.TASK.out"))
    submit = command + extra + cluster.submit_words(req, base, out_pattern) + [array_script]
    with open(os.path.join(qdir, f"{base}.submit"), "w", encoding="utf-8") as f:
        f.write(" ".join(shlex.quote(w) for w in submit) + "\n")
    try:
        rc = subprocess.call(submit, stdin=subprocess.DEVNULL)
    except OSError as e:
        print(f"{prog}: cannot run {submit[0]}: {e.strerror}", file=sys.stderr)
        return 1
    failed = 0
    for j in req.job_ids:
        code = ended_code(req.log_for(j))
        if code is None:
            print(f"{prog}: job {j} did not finish (no '# Ended' line in "
                  f"{req.log_for(j)}); see {qdir}", file=sys.stderr)
        if code != 0:
            failed += 1
    if failed == 0 and rc != 0:
        print(f"{prog}: warning: {command[0]} exited with status {rc} but every job "
              f"succeeded", file=sys.stderr)
    return report_failures(req, prog, failed)


CLUSTERS = {"slurm.pl": Slurm, "queue.pl": GridEngine}
