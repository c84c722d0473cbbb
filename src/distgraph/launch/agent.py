"""`python -m distgraph.launch.agent`: runs a job's processes on one host for a launcher on
another, started by the launcher over ssh.

The agent's standard input is its lifeline from the launcher: first one JSON line that
describes the host's processes (commands and environments, so nothing secret is on a
command line), then a heartbeat byte a second, `G` to start and `S` to stop. It answers
with one JSON object per line on standard output: `checked` (this host can run its part:
the workspace and its partitions are there and match the launcher's) or `error` (it cannot;
nothing was started), then `line` (a process printed a line), `exit` (a process ended),
`stopped` (one has been stopped too long), `say` (a note), `probe` (nothing: traffic on a
silent session) and `done`. The launcher says `G` once every host has checked, so a bad
host stops the job before any process starts.
When the lifeline ends (the launcher or the ssh session is gone), stays silent while the
session's connection stops answering (the network is gone: `cluster.tcp_link`), or says
stop, the agent stops every process it started, removes the job's shared memory on this
host, and exits. A launcher that is only busy or stopped answers through its host's kernel,
and keeps its job. The agent's processes hold lifelines to it in turn.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from ..cluster.env import ssh_connection
from ..cluster.lifeline import SILENCE_SECONDS, read_line, watch
from ..cluster.tcp_link import reaches_peer
from ..errors import DistGraphError
from ..files import make_private
from .plan import ProcessSpec
from .supervisor import POLL_SECONDS, HostSupervisor, sweep_shared_memory

GO, STOP = b"G", b"S"
LIFELINE = 0  # standard input


class _Events:
    """JSON lines to the launcher, from any thread."""

    def __init__(self):
        self._lock = threading.Lock()

    def __call__(self, **event) -> None:
        data = (json.dumps(event) + "\n").encode()
        with self._lock:
            try:
                os.write(1, data)
            except OSError:  # the launcher is gone: the lifeline says so too
                pass


def write_files(host: str, files: dict[str, str]) -> None:
    """The files the launcher sends (a Slurm job's ip_config), into the workspace only."""
    for rel, text in files.items():
        path = os.path.normpath(rel)
        if os.path.isabs(path) or path.split(os.sep)[0] == "..":
            raise DistGraphError(f"host {host}: {rel!r} lies outside the workspace; give --ip_config as a path "
                                 f"inside it")
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def check_host(job: dict) -> None:
    """The workspace and this host's partitions exist and are those the launcher has (a job
    without a partition config, such as a distributed partitioning, checks the workspace only)."""
    from ..partition.layout import PartitionConfig

    host, workspace = job["host"], job["workspace"]
    if not os.path.isdir(workspace):
        raise DistGraphError(f"host {host} has no workspace {workspace}; copy the job there (distgraph copy)")
    os.chdir(workspace)
    write_files(host, job.get("files", {}))
    check = job["check"]
    if check.get("part_config") is None:
        return
    try:
        cfg = PartitionConfig.load(check["part_config"])
        if check["fingerprint"] is not None and cfg.fingerprint() != check["fingerprint"]:
            raise DistGraphError(f"{check['part_config']} is another partitioning than the launcher's (stale copy?); "
                                 f"copy the partition again (distgraph copy)")
        cfg.check_machines(check["num_parts"], "ip_config")
        for m in check["machines"]:
            cfg.check_files(m)
    except DistGraphError as exc:
        raise DistGraphError(f"host {host}: {exc}") from None


def main() -> int:
    make_private()  # this host's processes write the user's files: owner only, as on the launcher's host
    send = _Events()
    line = read_line(LIFELINE, SILENCE_SECONDS)
    if not line:
        return 1
    job = json.loads(line)
    job["workspace"] = os.path.expanduser(job["workspace"])
    stop = threading.Event()
    go = threading.Event()
    lost = threading.Event()
    supervisor: HostSupervisor | None = None
    finishing = threading.Lock()
    finished = threading.Event()

    def finish() -> None:
        """Stop everything this agent started and clean up: once, whichever thread asks first
        (the main loop, or the lifeline's); the other waits for it."""
        with finishing:
            if finished.is_set():
                return
            if supervisor is not None:
                supervisor.stop()
            sweep_shared_memory(job["session"])
            send(done=True)
            finished.set()

    def on_data(data: bytes) -> None:
        if GO in data:
            go.set()
        if STOP in data:
            stop.set()
            go.set()

    # the launcher gone (or unreachable): clean up and exit from the lifeline's thread
    link = ssh_connection()
    silence = job.get("lifeline_timeout", SILENCE_SECONDS)

    def reachable() -> bool:
        """Whether the session's connection still reaches the launcher's host: a `probe` event
        (the launcher ignores it) travels on it, sent aside in case the session is not read."""
        probe = threading.Thread(target=send, kwargs={"probe": True}, daemon=True)
        return reaches_peer(*link, probe.start, silence)

    watch(LIFELINE, silence, f"distgraph agent on {job['host']}", "the launcher",
          cleanup=lambda: (lost.set(), finish()), on_data=on_data, reachable=None if link is None else reachable)
    try:
        check_host(job)
    except DistGraphError as exc:
        send(error=str(exc))
        finish()
        return 2
    send(checked=True)
    go.wait()
    if stop.is_set():
        finish()
        return 0
    supervisor = HostSupervisor(job["workspace"], lambda label, err, text: send(line=label, err=err, text=text),
                                lambda message: send(say=message))
    reported: dict[str, int] = {}
    stuck_reported: set[str] = set()
    try:
        for p in job["processes"]:
            supervisor.start(ProcessSpec(p["machine_id"], p["role"], p["rank"], job["host"], True, p["command"],
                                         p["env"]))
        while not stop.is_set() and not lost.is_set():
            for label, code in supervisor.exit_codes().items():
                if code is not None and label not in reported:
                    reported[label] = code
                    send(exit=label, code=code)
            stuck = supervisor.stopped()
            if stuck is not None and stuck[0] not in stuck_reported:
                stuck_reported.add(stuck[0])
                send(stopped=stuck[0], pid=stuck[1])
            time.sleep(POLL_SECONDS)
    finally:
        finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
