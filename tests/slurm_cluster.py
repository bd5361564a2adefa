"""A real single-machine Slurm cluster for the tests (Debian's ``slurm-wlm`` and ``munge``).

``slurm_cluster`` (session fixture) writes a minimal ``slurm.conf`` into a fresh temp dir, starts
``munged`` (with a generated key and its own socket), ``slurmctld`` and two ``slurmd`` as two
nodes, ``n1`` and ``n2`` (``slurmd -N``; 2 CPUs each, ``n2`` with one stand-in GPU, a ``gpu``
gres with no device file, in partition ``gpu``), on free ports, with no cgroups and no
accounting, waits until ``sinfo`` shows both nodes idle, and stops everything at the end of the
session: jobs cancelled, daemons terminated, and any process still running with this cluster's
``SLURM_CONF`` (a job's ``slurmstepd``) killed.

Use it from a test module with ``from slurm_cluster import slurm_cluster  # noqa: F401``; the
cluster starts once per session whichever modules use it. Tests run clients with
``cluster.env(base_env)`` (``SLURM_CONF`` set). The fixture skips, with the reason, only where
the programs are absent (``apt-get install slurm-wlm munge``) or not run as root (slurmd must
be root to start jobs); a cluster that fails to start is an error with the daemons' logs.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo", "squeue",
            "scancel")
NODES = ("n1", "n2")
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


def _which(prog: str) -> Optional[str]:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(SBIN)
    return shutil.which(prog, path=path)


def missing_programs() -> List[str]:
    return [p for p in PROGRAMS if _which(p) is None]


def _free_ports(n: int) -> List[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def slurm_conf_text(root: Path, ports: List[int], cluster_name: str) -> str:
    ctld_port, slurmd_port, *node_ports = ports
    nodes = "\n".join(
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs=2 "
        f"RealMemory=4000{' Gres=gpu:1' if n == 'n2' else ''} State=UNKNOWN"
        for n, p in zip(NODES, node_ports))
    return f"""# written by tests/slurm_cluster.py
ClusterName={cluster_name}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups, no accounting daemon: runs in a container
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# the nodes' CPUs and memory as written here, whatever the machine has
SlurmdParameters=config_overrides
ReturnToService=2
GresTypes=gpu
# quick: a cancelled job's processes are killed 2 s after SIGTERM; sbatch --wait polls every
# 2 s (it waits longer while MinJobAge allows); a finished job stays visible for 30 s
KillWait=2
MinJobAge=4
InactiveLimit=0
{nodes}
PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=n2 MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.procs: Dict[str, subprocess.Popen] = {}
        self.stopped = False

    def env(self, base: Optional[dict] = None) -> dict:
        """``base`` (default: os.environ) with this cluster's ``SLURM_CONF``."""
        e = dict(os.environ if base is None else base)
        e["SLURM_CONF"] = str(self.conf)
        return e

    def run(self, *args: str, check: bool = True, timeout: float = 30) -> str:
        """A Slurm client command (``scontrol``, ``squeue``...) on this cluster; its stdout."""
        p = subprocess.run([_which(args[0]) or args[0], *args[1:]], env=self.env(),
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr}")
        return p.stdout

    def logs(self) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*.log")) + [self.root / "munge" / "munged.log"]:
            if f.exists():
                lines = f.read_text(errors="replace").splitlines()[-15:]
                out.append(f"==> {f} <==\n" + "\n".join(lines))
        return "\n".join(out)

    def _spawn(self, name: str, argv: List[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")
        self.procs[name] = subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        log.close()

    def start(self, timeout: float = 60) -> "SlurmCluster":
        r = self.root
        for d in ("munge", "state", "run", "log", *(f"spool/{n}" for n in NODES)):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ports = _free_ports(2 + len(NODES))
        self.conf.write_text(slurm_conf_text(r, ports, f"t{os.getpid()}"))
        (r / "gres.conf").write_text("NodeName=n2 Name=gpu File=/dev/null\n")
        m = r / "munge"
        self._spawn("munged", [_which("munged"), "-F", "--force", f"--socket={m}/munge.socket",
                               f"--key-file={key}", f"--log-file={m}/munged.log",
                               f"--pid-file={m}/munged.pid", f"--seed-file={m}/munged.seed"])
        self._wait(lambda: (m / "munge.socket").exists(), 10, "munged's socket")
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i"])
        self._wait(lambda: subprocess.run([_which("scontrol"), "ping"], env=self.env(),
                                          capture_output=True, text=True).stdout.count("UP") > 0,
                   timeout, "slurmctld to answer 'scontrol ping'")
        for n in NODES:
            self._spawn(f"slurmd.{n}", [_which("slurmd"), "-D", "-N", n])
        self._wait(self._nodes_idle, timeout, "both nodes idle in sinfo")
        return self

    def _nodes_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
        return all(states.get(n) == "idle" for n in NODES)

    def _wait(self, cond, timeout: float, what: str) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}"
                                       f"\n{self.logs()}")
            if cond():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out ({timeout} s) waiting for {what}\n{self.logs()}")

    def _our_pids(self) -> List[int]:
        """Processes started with this cluster's SLURM_CONF (daemons, slurmstepd, jobs)."""
        needle = f"SLURM_CONF={self.conf}".encode() + b"\0"
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if needle in f.read() + b"\0":
                        pids.append(int(d))
            except OSError:
                pass
        return pids

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            subprocess.run([_which("scancel"), "--full", "-u", "root"], env=self.env(),
                           capture_output=True, timeout=30)
        for name in [n for n in self.procs if n.startswith("slurmd")] + ["slurmctld", "munged"]:
            p = self.procs.get(name)
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        for pid in self._our_pids():  # a slurmstepd or job left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


_CLUSTER: Optional[SlurmCluster] = None


@pytest.fixture(scope="session")
def slurm_cluster(request) -> SlurmCluster:
    """The running cluster (started on first use, stopped at the end of the session)."""
    global _CLUSTER
    missing = missing_programs()
    if missing:
        pytest.skip(f"needs Slurm and munge ({', '.join(missing)} not found; "
                    f"apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("needs root: slurmd runs the test jobs as their user")
    if _CLUSTER is None:
        cluster = SlurmCluster(Path(tempfile.mkdtemp(prefix="slurm-")))
        atexit.register(cluster.stop)
        request.config.add_cleanup(cluster.stop)
        try:
            cluster.start()
        except BaseException:
            cluster.stop()
            raise
        _CLUSTER = cluster
    return _CLUSTER
