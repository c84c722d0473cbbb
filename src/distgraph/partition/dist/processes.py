"""The hosts' partitioning processes, started as `distgraph launch` starts servers: on this
host directly, on every other over ssh under the launcher's agent (`launch.runner.Job`), with
the job's secret in their environment (never on a command line) and lifelines that end them
when the coordinator ends."""

from __future__ import annotations

import os
import secrets
import shlex
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


class HostProcesses:
    """One partitioning process per machine of ip_config, and the check that they still run."""

    def __init__(self, machines: list[MachineSpec], workspace: str, ssh: SshOptions, encrypt: bool = False):
        self.secret = secrets.token_hex(32)
        self.encrypt = encrypt
        self.addresses = [HostAddress(m, 0, spec.ip, spec.port) for m, spec in enumerate(machines)]
        session = secrets.token_hex(6)
        command = f"{shlex.quote(sys.executable)} -m distgraph.partition.dist.host"
        common = {E.SECRET: self.secret, E.ENCRYPT: str(int(encrypt)), E.SESSION: session, "PYTHONUNBUFFERED": "1",
                  "OMP_NUM_THREADS": "1", **{k: os.environ[k] for k in FORWARDED if k in os.environ}}
        local = [is_local(m.ip) for m in machines]
        specs = [ProcessSpec(m, ROLE, 0, spec.ip, local[m], command,
                             {**common, E.MACHINE_ID: str(m), E.LISTEN: f"{spec.ip} {spec.port}"})
                 for m, spec in enumerate(machines)]
        self.started = False
        self.job = Job(Plan(specs, machines, local, session, workspace, {"part_config": None}, ssh), ssh)

    def start(self) -> None:
        error = self.job.start()
        if error is not None:
            raise PartitionError(f"{error}; nothing was partitioned")
        self.started = True

    def check(self) -> None:
        """Raise if a host's process ended or its host was lost (while the coordinator waits on it)."""
        lost = next((r for r in self.job.remotes if r.error is not None), None)
        for label, code in self.job.exit_codes().items():
            if code is not None and lost is None:
                spec = self.job.specs[label]
                raise PartitionError(f"the partitioning process of machine {spec.machine_id} on {spec.host} ended "
                                     f"(exit code {code}); see its output above")
        if lost is not None:
            raise PartitionError(lost.error)

    def stop(self) -> None:
        """Let the processes end by themselves (told to exit or abort, they clean up first), then
        stop whatever still runs (at once when they never started)."""
        deadline = time.monotonic() + (END_SECONDS if self.started else 0)
        while time.monotonic() < deadline and any(c is None for c in self.job.exit_codes().values()):
            time.sleep(0.05)
        self.job.stop()
