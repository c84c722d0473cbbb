"""Start the planned processes, relay their output, and stop them all together.

Servers start first, then trainers, each in a process group of its own with a lifeline
(`cluster.lifeline`): if the launcher dies, every process it started notices within
seconds and ends. Every output line is printed as `[machine/role/rank] line`. The first
process that fails (non-zero exit) or stays stopped (SIGSTOP) stops the whole job, and
the launcher exits with that process's code (128+N for a signal N; 1 for a stopped one);
Ctrl-C stops the job with 130. When every trainer has succeeded, servers get a grace
period to see the goodbyes and exit by themselves; when a server exits cleanly while
trainers still run (a shutdown request), the trainers get one to finish. Stopping a process means its whole
group: SIGTERM (with SIGCONT), then SIGKILL for whatever is left after a grace period.
Shared memory of the session is swept on every machine at the end, even after a kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from ..cluster import env as E
from ..cluster.lifeline import SILENCE_SECONDS, Lifeline, beat_forever
from ..cluster.shm_files import SHM_DIR, session_files, session_glob, unlink
from .plan import Plan, ProcessSpec
from .processes import become_subreaper, members, reap_orphans, signal_group, stop_group_now
from .relay import relay_stream
from .ssh import REMOTE_LIFELINE_FD, cleanup_argv, remote_shell_command, ssh_argv

POLL_SECONDS = 0.05
STATE_CHECK_SECONDS = 0.5  # how often process states (stopped?) are read
STOPPED_SECONDS = 3.0  # a process stopped this long stops the job
SERVER_GRACE_SECONDS = 30.0  # after the last trainer exits, before servers are stopped
TRAINER_GRACE_SECONDS = 30.0  # after a server exits mid-job, before the trainers are stopped
REPORT_SECONDS = 5.0  # a server exited that long ago and trainers still run: say so
TERM_GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL
RELAY_GRACE_SECONDS = 2.0  # for the last output once every process is gone
STOPPED_EXIT_CODE = 1  # also for trainers outliving the servers


class _Interrupted(Exception):
    def __init__(self, signum: int):
        self.signum = signum


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Running:
    """A started process: its spec, its Popen (the shell or ssh client; also its group id),
    its lifeline and the threads relaying its output."""

    spec: ProcessSpec
    proc: subprocess.Popen
    lifeline: Lifeline
    relays: list[threading.Thread] = field(default_factory=list)
    stopped_since: float | None = None
    reported: bool = False  # a clean exit while trainers still ran was reported

    def group_alive(self) -> bool:
        return self.proc.poll() is None or bool(members(self.proc.pid))


class Job:
    """The running processes of one launch."""

    def __init__(self, plan: Plan, ssh_port: int, ssh_username: str):
        self.plan, self.ssh_port, self.ssh_username = plan, ssh_port, ssh_username
        self.running: list[Running] = []
        self._lock = threading.Lock()
        self._stop_beats = threading.Event()
        self._heart: threading.Thread | None = None

    def _argv(self, spec: ProcessSpec, lifeline: Lifeline) -> tuple[list[str] | str, dict[str, str] | None, int]:
        """(argv or shell line, environment, the child's stdin); a remote process's lifeline is
        the ssh client's stdin, which the remote shell moves to descriptor REMOTE_LIFELINE_FD."""
        line = {E.LIFELINE_TIMEOUT: f"{SILENCE_SECONDS:g}"}
        if spec.local:
            env = {**os.environ, **spec.env, **line, E.LIFELINE_FD: str(lifeline.read_fd)}
            return spec.command, env, subprocess.DEVNULL
        remote = remote_shell_command(self.plan.workspace, {**spec.env, **line,
                                                            E.LIFELINE_FD: str(REMOTE_LIFELINE_FD)}, spec.command)
        return ssh_argv(spec.host, remote, self.ssh_port, self.ssh_username), None, lifeline.read_fd

    def start(self, spec: ProcessSpec) -> None:
        lifeline = Lifeline()
        argv, env, stdin = self._argv(spec, lifeline)
        try:
            proc = subprocess.Popen(argv, shell=spec.local, cwd=self.plan.workspace if spec.local else None, env=env,
                                    stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    pass_fds=(lifeline.read_fd,) if spec.local else (), start_new_session=True)
        except BaseException:
            lifeline.close()
            raise
        lifeline.started()
        run = Running(spec, proc, lifeline)
        self.running.append(run)
        for stream, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            t = threading.Thread(target=relay_stream, args=(stream, out, f"[{spec.label}]", self._lock), daemon=True)
            t.start()
            run.relays.append(t)
        if self._heart is None:
            self._heart = beat_forever(lambda: [r.lifeline for r in self.running], self._stop_beats)

    def say(self, message: str) -> None:
        with self._lock:
            print(f"[launch] {message}", file=sys.stderr, flush=True)

    def supervise(self) -> int:
        """Wait for the job; the exit code of the first failing process, or 0."""
        trainers_done_at = server_gone_at = None
        next_state_check = time.monotonic()
        while True:
            states = [(r, r.proc.poll()) for r in self.running]
            failed = next(((r, rc) for r, rc in states if rc not in (None, 0)), None)
            if failed is not None:
                run, rc = failed
                self.say(f"{run.spec.label} exited with code {rc}; stopping the job")
                return _exit_code(rc)
            if all(rc == 0 for _, rc in states):
                return 0
            trainers_running = any(rc is None for r, rc in states if r.spec.role == "trainer")
            gone = [r for r, rc in states if rc == 0 and r.spec.role == "server"]
            if gone and trainers_running:
                server_gone_at = server_gone_at or time.monotonic()
                unreported = [r for r in gone if not r.reported]
                # trainers take a moment to exit after their goodbyes, which end the servers
                if unreported and time.monotonic() - server_gone_at > REPORT_SECONDS:
                    for r in unreported:
                        r.reported = True
                    self.say(f"{', '.join(r.spec.label for r in unreported)} exited (code 0) while trainers are "
                             f"still running; the trainers cannot use them any more (was a shutdown sent?)")
            if trainers_done_at is None and not trainers_running:
                trainers_done_at = time.monotonic()
            if trainers_done_at is not None and time.monotonic() - trainers_done_at > SERVER_GRACE_SECONDS:
                self.say(f"servers still running {SERVER_GRACE_SECONDS:g} s after the trainers finished "
                         f"(did the script call distgraph.initialize()?); stopping them")
                return 0
            if server_gone_at is not None and time.monotonic() - server_gone_at > TRAINER_GRACE_SECONDS:
                self.say(f"trainers still running {TRAINER_GRACE_SECONDS:g} s after a server exited; stopping them")
                return STOPPED_EXIT_CODE
            if time.monotonic() >= next_state_check:
                next_state_check = time.monotonic() + STATE_CHECK_SECONDS
                stuck = self._stopped_process()
                if stuck is not None:
                    return stuck
            time.sleep(POLL_SECONDS)

    def _stopped_process(self) -> int | None:
        """Stop the job (returning its exit code) if a local process has been stopped too long."""
        now = time.monotonic()
        for r in self.running:
            if not r.spec.local or r.proc.poll() is not None:
                continue
            stopped = [m.pid for m in members(r.proc.pid) if m.state == "T"]
            if not stopped:
                r.stopped_since = None
            elif r.stopped_since is None:
                r.stopped_since = now
            elif now - r.stopped_since >= STOPPED_SECONDS:
                self.say(f"{r.spec.label} (pid {stopped[0]}) has been stopped (SIGSTOP) for {STOPPED_SECONDS:g} s; "
                         f"the job cannot go on without it: stopping the job")
                return STOPPED_EXIT_CODE
        return None

    def stop(self) -> None:
        """Stop every process group still alive (SIGTERM, then SIGKILL), cut the lifelines,
        wait for the output, reap, and sweep shared memory."""
        alive = [r for r in self.running if r.group_alive()]
        for r in alive:
            stop_group_now(r.proc.pid)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        while alive and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            alive = [r for r in alive if r.group_alive()]
        for r in alive:
            self.say(f"{r.spec.label} still running {TERM_GRACE_SECONDS:g} s after SIGTERM; killing it")
            signal_group(r.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        while alive and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            alive = [r for r in alive if r.group_alive()]
        self._stop_beats.set()
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
        self.sweep_shared_memory()

    def sweep_shared_memory(self) -> None:
        for f in session_files(self.plan.session):
            unlink(f)
        glob = f"{SHM_DIR}/{session_glob(self.plan.session)}"
        for host in sorted({m.ip for m, here in zip(self.plan.machines, self.plan.local) if not here}):
            try:
                subprocess.run(cleanup_argv(host, glob, self.ssh_port, self.ssh_username), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.say(f"could not remove shared memory {glob} on {host}: {exc}")


def run(plan: Plan, ssh_port: int = 22, ssh_username: str = "") -> int:
    """Run the job to completion; returns the launcher's exit code."""
    become_subreaper()
    job = Job(plan, ssh_port, ssh_username)

    def interrupt(signum, frame):
        raise _Interrupted(signum)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for spec in plan.processes:
            job.start(spec)
        return job.supervise()
    except _Interrupted as exc:
        job.say(f"{signal.Signals(exc.signum).name}: stopping the job")
        return 128 + exc.signum
    finally:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        try:
            job.stop()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
