"""The hosts' partitioning processes, started as `distgraph launch` starts servers: on this
host directly, on every other over ssh under the launcher's agent (`launch.runner.Job`), with
the job's secret in their environment (never on a command line) and lifelines that end them
when the coordinator ends. Each is a guard and its worker (`guard`).

Why the run stopped is said as `distgraph launch` says it: a host whose ssh session stopped
answering is "lost the connection to host H" (within about 20 s: ssh's keep-alives), which the
command ends with launch's exit code, 255; else the process that was killed or ended."""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import sys
import time

from ...cluster import env as E
from ...cluster.hosts import is_local
from ...cluster.ip_config import MachineSpec
from ...errors import PartitionError
from ...launch.plan import FORWARDED, Plan, ProcessSpec
from ...launch.runner import Job
from ...launch.ssh import SshOptions
from .protocol import HostAddress

ROLE = "partition"
END_SECONDS = 30.0  # for a host told to end to clean up and exit


class HostLost(PartitionError):
    """The connection to a host was lost (the command ends with launch's code for it)."""


class _Job(Job):
    """`launch.runner.Job`, except that a lost host is not reached over ssh again at the end to
    sweep shared memory (a partitioning makes none, and the agent there stops its process when
    it notices): the command ends right after it names the host, not ssh's connect timeout later."""

    def _stop_remote(self, remote) -> None:
        if remote.error is None:
            super()._stop_remote(remote)
        else:
            remote.stop()


class HostProcesses:
    """One partitioning process per machine of ip_config, and the check that they still run."""

    def __init__(self, machines: list[MachineSpec], workspace: str, ssh: SshOptions, encrypt: bool = False):
        self.secret = secrets.token_hex(32)
        self.encrypt = encrypt
        self.addresses = [HostAddress(m, 0, spec.ip, spec.port) for m, spec in enumerate(machines)]
        session = secrets.token_hex(6)
        command = f"exec {shlex.quote(sys.executable)} -m distgraph.partition.dist.guard"
        common = {E.SECRET: self.secret, E.ENCRYPT: str(int(encrypt)), E.SESSION: session, "PYTHONUNBUFFERED": "1",
                  "OMP_NUM_THREADS": "1", **{k: os.environ[k] for k in FORWARDED if k in os.environ}}
        local = [is_local(m.ip) for m in machines]
        specs = [ProcessSpec(m, ROLE, 0, spec.ip, local[m], command,
                             {**common, E.MACHINE_ID: str(m), E.LISTEN: f"{spec.ip} {spec.port}"})
                 for m, spec in enumerate(machines)]
        self.started = self.stopped = False
        self.job = _Job(Plan(specs, machines, local, session, workspace, {"part_config": None}, ssh), ssh)

    def start(self) -> None:
        error = self.job.start()
        if error is not None:
            raise PartitionError(f"{error}; nothing was partitioned")
        self.started = True

    def check(self) -> None:
        """Raise if a host's process ended or its host was lost (while the coordinator waits on it)."""
        failure = self.failure()
        if failure is not None:
            raise failure

    def failure(self, told_to_end: bool = False) -> PartitionError | None:
        """Why the run cannot go on, if it cannot: a host lost, else a host's process that was
        killed or ended (once `told_to_end`, only killed: how the others ended is their answer,
        and their output says what went wrong)."""
        if not self.started:
            return None
        codes = self.job.exit_codes()  # (this notices a host whose session ended)
        lost = next((r.error for r in self.job.remotes if r.error is not None), None)
        if lost is not None:  # (once started, only a session that ended says so: "lost the connection to host H")
            return HostLost(f"{lost}; check the network to it and run the command again")
        for label, code in codes.items():
            if code is None or (told_to_end and (code >= 0 or code == -signal.SIGTERM)):
                continue
            spec = self.job.specs[label]
            who = f"the partitioning process of machine {spec.machine_id} on {spec.host}"
            if code == -signal.SIGKILL:
                return PartitionError(f"{who} was killed by SIGKILL (by a user, or by the kernel when the host ran "
                                      f"out of memory); run the command again")
            if code < 0:
                return PartitionError(f"{who} was killed by {signal.Signals(-code).name}; run the command again")
            return PartitionError(f"{who} ended (exit code {code}); see its output above")
        return None

    def running(self) -> list[int]:
        """The machines whose process still runs (on a host not lost)."""
        codes = self.job.exit_codes()
        return sorted({spec.machine_id for label, spec in self.job.specs.items() if codes[label] is None})

    def stop(self) -> None:
        """Let the processes end by themselves (told to exit or abort, they clean up first), then
        stop whatever still runs (at once when they never started); once."""
        if self.stopped:
            return
        self.stopped = True
        deadline = time.monotonic() + (END_SECONDS if self.started else 0)
        while time.monotonic() < deadline and any(c is None for c in self.job.exit_codes().values()):
            time.sleep(0.05)
        self.job.stop()
