"""Start the planned processes, prefix their output, and stop them all together.

Servers start first, then trainers. Every output line is printed as
`[machine/role/rank] line`. The first process that fails (non-zero exit) stops the
whole job, and the launcher exits with that process's code (128+N for a signal N);
Ctrl-C stops the job with 130. When every trainer has succeeded, servers get a grace
period to see the goodbyes and exit by themselves. Shared memory of the session is
swept on every machine at the end, even after a kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from ..kvstore.shm import SHM_DIR, PREFIX, session_files, unlink
from .plan import Plan, ProcessSpec
from .ssh import cleanup_argv, remote_shell_command, ssh_argv

POLL_SECONDS = 0.05
SERVER_GRACE_SECONDS = 30.0  # after the last trainer exits, before servers are stopped
TERM_GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL


class _Interrupted(Exception):
    def __init__(self, signum: int):
        self.signum = signum


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _forward(stream: IO[bytes], out: IO[str], prefix: str, lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\r\n")
        with lock:
            out.write(f"{prefix} {line}\n")
            out.flush()
    stream.close()


class Job:
    """The running processes of one launch."""

    def __init__(self, plan: Plan, ssh_port: int, ssh_username: str):
        self.plan, self.ssh_port, self.ssh_username = plan, ssh_port, ssh_username
        self.running: list[tuple[ProcessSpec, subprocess.Popen]] = []
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _argv(self, spec: ProcessSpec) -> tuple[list[str] | str, dict[str, str] | None]:
        if spec.local:
            return spec.command, {**os.environ, **spec.env}
        remote = remote_shell_command(self.plan.workspace, spec.env, spec.command)
        return ssh_argv(spec.host, remote, self.ssh_port, self.ssh_username), None

    def start(self, spec: ProcessSpec) -> None:
        argv, env = self._argv(spec)
        proc = subprocess.Popen(argv, shell=spec.local, cwd=self.plan.workspace if spec.local else None, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        self.running.append((spec, proc))
        for stream, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            t = threading.Thread(target=_forward, args=(stream, out, f"[{spec.label}]", self._lock), daemon=True)
            t.start()
            self.threads.append(t)

    def say(self, message: str) -> None:
        with self._lock:
            print(f"[launch] {message}", file=sys.stderr, flush=True)

    def supervise(self) -> int:
        """Wait for the job; the exit code of the first failing process, or 0."""
        trainers_done_at = None
        while True:
            states = [(spec, proc.poll()) for spec, proc in self.running]
            failed = next(((s, rc) for s, rc in states if rc not in (None, 0)), None)
            if failed is not None:
                spec, rc = failed
                self.say(f"{spec.label} exited with code {rc}; stopping the job")
                return _exit_code(rc)
            if all(rc == 0 for _, rc in states):
                return 0
            if trainers_done_at is None and all(rc == 0 for s, rc in states if s.role == "trainer"):
                trainers_done_at = time.monotonic()
            if trainers_done_at is not None and time.monotonic() - trainers_done_at > SERVER_GRACE_SECONDS:
                self.say(f"servers still running {SERVER_GRACE_SECONDS:g} s after the trainers finished "
                         f"(did the script call distgraph.initialize()?); stopping them")
                return 0
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        """SIGTERM every process group still running, SIGKILL stragglers, sweep shared memory."""
        alive = [(s, p) for s, p in self.running if p.poll() is None]
        for _, p in alive:
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        for _, p in alive:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()
        for t in self.threads:
            t.join(timeout=TERM_GRACE_SECONDS)
        self.sweep_shared_memory()

    def sweep_shared_memory(self) -> None:
        for f in session_files(self.plan.session):
            unlink(f)
        glob = f"{SHM_DIR}/{PREFIX}.{self.plan.session}.*"
        for host in sorted({m.ip for m, here in zip(self.plan.machines, self.plan.local) if not here}):
            try:
                subprocess.run(cleanup_argv(host, glob, self.ssh_port, self.ssh_username), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.say(f"could not remove shared memory {glob} on {host}: {exc}")


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def run(plan: Plan, ssh_port: int = 22, ssh_username: str = "") -> int:
    """Run the job to completion; returns the launcher's exit code."""
    job = Job(plan, ssh_port, ssh_username)

    def interrupt(signum, frame):
        raise _Interrupted(signum)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for spec in plan.processes:
            job.start(spec)
        return job.supervise()
    except _Interrupted as exc:
        job.say(f"{signal.Signals(exc.signum).name}: stopping the job")
        return 128 + exc.signum
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            job.stop()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
