"""A Slurm cluster on the test bed: `slurmctld` on this machine (the bridge's address) and a
`slurmd` on each test host, inside that host's network and mount namespaces (its own
workspace and /dev/shm) with the host's name as its hostname (a UTS namespace), so a job step
on a node sees exactly what the host's sshd sessions see. Debian's `slurmd`, `slurmctld` and
`slurm-client` packages (`make test-cluster` installs them). Authentication between the
daemons is `auth/none`: the test bed is this machine's alone; the job's own authentication
(distgraph's) is what the tests exercise. Everything is stopped and removed on exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from testbed import Started, TestBed

DAEMONS = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/srun")


def available() -> str | None:
    """Why Slurm cannot run on the test bed here, or None."""
    missing = [d for d in DAEMONS if not os.path.exists(d)]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurmd slurmctld slurm-client"
    return None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class Slurm(Started):
    """Slurm on the hosts of `bed`: node `n<i>` is test host i."""

    def __init__(self, bed: TestBed, root: Path):
        self.bed, self.root = bed, root
        self.nodes = [f"n{i}" for i in range(len(bed.hosts))]
        self.conf = root / "slurm.conf"
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "state").mkdir()
        for n in self.nodes:
            (self.root / f"spool-{n}").mkdir()
        ctl = f"10.213.{self.bed.net}.1"
        nodes = "".join(f"NodeName={n} NodeAddr={h.ip} CPUs=2 RealMemory=1000 State=UNKNOWN\n"
                        for n, h in zip(self.nodes, self.bed.hosts))
        r = self.root
        self.conf.write_text(
            f"ClusterName=dgtest\nSlurmctldHost=ctl({ctl})\nSlurmctldPort={_free_port()}\nSlurmdPort=6818\n"
            f"AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\n"
            f"StateSaveLocation={r}/state\nSlurmdSpoolDir={r}/spool-%n\nSlurmctldPidFile={r}/slurmctld.pid\n"
            f"SlurmdPidFile={r}/slurmd-%n.pid\nSlurmctldLogFile={r}/slurmctld.log\nSlurmdLogFile={r}/slurmd-%n.log\n"
            f"ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            f"SelectType=select/linear\nSwitchType=switch/none\nMpiDefault=none\nReturnToService=2\n"
            f"SlurmdParameters=config_overrides\nKillWait=5\nInactiveLimit=0\nMinJobAge=300\n"
            f"SlurmdTimeout=30\nMessageTimeout=20\n{nodes}"
            f"PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n")
        (self.root / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupAutomount=yes\n")
        self.procs.append(subprocess.Popen(
            ["unshare", "--uts", "sh", "-c", f"hostname ctl && exec /usr/sbin/slurmctld -D -i -f {self.conf}"],
            stdout=subprocess.DEVNULL, stderr=open(r / "slurmctld.err", "wb"), start_new_session=True, env=self.env))
        for n, h in zip(self.nodes, self.bed.hosts):
            self.procs.append(subprocess.Popen(
                ["nsenter", f"--target={h.sshd.pid}", "--net", "--mount", "unshare", "--uts", "sh", "-c",
                 # `ip netns exec` gave the host a fresh /sys: a cgroup v1 root for slurmd's plugin to mount into
                 f"mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup && hostname {n} && "
                 f"exec /usr/sbin/slurmd -D -f {self.conf}"],
                stdout=subprocess.DEVNULL, stderr=open(r / f"slurmd-{n}.err", "wb"), start_new_session=True,
                env=self.env))
        deadline = time.monotonic() + 60
        while True:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=self.env)
            states = dict(line.split() for line in out.stdout.splitlines())
            if len(states) == len(self.nodes) and all(s in ("idle", "mix", "alloc") for s in states.values()):
                return
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"Slurm did not come up (nodes {states}): {self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}"
                         for f in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.err")))

    def sbatch(self, script: str, *args: str) -> int:
        """Submit a batch script (its text); the job id."""
        path = self.root / f"job-{time.monotonic_ns()}.sh"
        path.write_text(script)
        done = subprocess.run(["sbatch", "--parsable", *args, str(path)], capture_output=True, text=True,
                              env=self.env, check=True)
        return int(done.stdout.strip().split(";")[0])

    def state(self, job: int) -> str:
        out = subprocess.run(["scontrol", "show", "job", str(job)], capture_output=True, text=True, env=self.env)
        for word in out.stdout.split():
            if word.startswith("JobState="):
                return word.split("=", 1)[1]
        return "GONE"

    def wait(self, job: int, timeout: float) -> str:
        """The job's final state (COMPLETED, FAILED, CANCELLED, ...)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(job)
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job} still {state} after {timeout} s:\n{self.logs()}")
            time.sleep(0.5)

    def close(self) -> None:
        subprocess.run(["scancel", "--full", "--user", "root"], capture_output=True, env=self.env, timeout=30)
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.root, ignore_errors=True)
