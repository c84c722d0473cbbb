"""Supervising the processes of a job on one host: the launcher does it for this host's
machines, the agent (`launch.agent`) for another host's.

Each process runs under `/bin/sh -c` in a process group of its own, with a lifeline
(`cluster.lifeline`) held here, so it ends when this supervisor dies, and only then: the
pipe's end is exact on one host, so no heartbeat is sent that a busy or stopped supervisor
could fail to send. Its output is relayed
line by line (`relay`). Stopping a process means its whole group: SIGTERM and SIGCONT (a
stopped member gets it too), then SIGKILL to what is left after a grace period; the
supervisor waits for the group's members themselves, not only for the shell, and reaps
orphans it adopted (it is a child subreaper).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..cluster import env as E
from ..cluster.lifeline import Lifeline
from ..cluster.shm_files import session_files, unlink
from .plan import ProcessSpec
from .processes import become_subreaper, members, members_of, reap_orphans, signal_group, stop_group_now
from .relay import relay_stream

POLL_SECONDS = 0.05
STOPPED_SECONDS = 3.0  # a process stopped (SIGSTOP) this long stops the job
TERM_GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL
RELAY_GRACE_SECONDS = 2.0  # for the last output once every process is gone

# (label, is stderr, text) of every output line
LineSink = Callable[[str, bool, str], None]


@dataclass
class Running:
    """A started process: its spec, its Popen (the shell, whose pid is the group's id), its
    lifeline and the threads relaying its output."""

    spec: ProcessSpec
    proc: subprocess.Popen
    lifeline: Lifeline
    relays: list[threading.Thread] = field(default_factory=list)
    stopped_since: float | None = None

    def group_alive(self) -> bool:
        return self.proc.poll() is None or bool(members(self.proc.pid))


class HostSupervisor:
    """The processes of a job on this host."""

    def __init__(self, workspace: str, sink: LineSink, say: Callable[[str], None]):
        become_subreaper()
        self.workspace, self.sink, self.say = workspace, sink, say
        self.running: list[Running] = []

    def start(self, spec: ProcessSpec) -> None:
        lifeline = Lifeline()
        env = {**os.environ, **spec.env, E.LIFELINE_FD: str(lifeline.read_fd)}
        try:
            proc = subprocess.Popen(spec.command, shell=True, cwd=self.workspace, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(lifeline.read_fd,),
                                    start_new_session=True)
        except BaseException:
            lifeline.close()
            raise
        lifeline.started()
        run = Running(spec, proc, lifeline)
        self.running.append(run)
        for stream, is_err in ((proc.stdout, False), (proc.stderr, True)):
            emit = (lambda text, e=is_err: self.sink(spec.label, e, text))
            t = threading.Thread(target=relay_stream, args=(stream, emit), daemon=True)
            t.start()
            run.relays.append(t)

    def exit_codes(self) -> dict[str, int | None]:
        """Label -> exit code of the shell running the command (None while it runs)."""
        return {r.spec.label: r.proc.poll() for r in self.running}

    def stopped(self) -> tuple[str, int] | None:
        """(label, pid) of a process that has been stopped for STOPPED_SECONDS, if any."""
        now = time.monotonic()
        running = [r for r in self.running if r.proc.poll() is None]
        groups = members_of({r.proc.pid for r in running}) if running else {}
        for r in running:
            pids = [m.pid for m in groups[r.proc.pid] if m.state == "T"]
            if not pids:
                r.stopped_since = None
            elif r.stopped_since is None:
                r.stopped_since = now
            elif now - r.stopped_since >= STOPPED_SECONDS:
                return r.spec.label, pids[0]
        return None

    def stop(self) -> None:
        """Stop every process group still alive (SIGTERM, then SIGKILL), cut the lifelines,
        wait for the output and reap."""
        alive = [r for r in self.running if r.group_alive()]
        for r in alive:
            stop_group_now(r.proc.pid)
        alive = self._wait_for(alive)
        for r in alive:
            self.say(f"{r.spec.label} still running {TERM_GRACE_SECONDS:g} s after SIGTERM; killing it")
            signal_group(r.proc.pid, signal.SIGKILL)
        self._wait_for(alive)
        for r in self.running:
            r.lifeline.close()
            try:
                r.proc.wait(timeout=TERM_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.say(f"{r.spec.label} (pid {r.proc.pid}) did not end even after SIGKILL")
        deadline = time.monotonic() + RELAY_GRACE_SECONDS
        for r in self.running:
            for t in r.relays:
                t.join(timeout=max(0.0, deadline - time.monotonic()))
        reap_orphans({r.proc.pid for r in self.running})

    @staticmethod
    def _wait_for(alive: list[Running]) -> list[Running]:
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        while alive and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            alive = [r for r in alive if r.group_alive()]
        return alive


def sweep_shared_memory(session: str) -> None:
    """Remove every shared-memory file of launch session `session` on this host."""
    for f in session_files(session):
        unlink(f)
