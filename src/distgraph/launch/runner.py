"""Run a planned job: this host's processes under a `HostSupervisor`, every other host's
under its agent over ssh (`RemoteHost`), all watched by one loop.

Servers start first, then trainers. Every output line is printed as
`[machine/role/rank] line`. The first process that fails (non-zero exit) or stays stopped
(SIGSTOP), or a host that is lost, stops the whole job, and the launcher exits with that
process's code (128+N for a signal N; 1 for a stopped one; 255 for a lost host); Ctrl-C
stops the job with 130. When every trainer has succeeded, servers get a grace period to
see the goodbyes and exit by themselves. A server that exits cleanly has seen every
trainer's goodbye (or a shutdown request): that is the normal end of the distributed part,
and trainers may go on with work of their own (saving, evaluating) for as long as they
need, still watched for failure, stops and Ctrl-C. Shared memory of the session is swept
on every host at the end, even after a kill.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict

from ..cluster.lifeline import beat_forever
from ..cluster.shm_files import SHM_DIR, session_glob
from .failures import Failures
from .plan import LaunchOptions, Plan, ProcessSpec, make_plan, server_python
from .remote import CONNECTION_FAILED, LOST_CODE, RemoteHost
from .srun import SrunOptions
from .ssh import SshOptions
from .supervisor import STOPPED_SECONDS, HostSupervisor, LineSink, sweep_shared_memory

POLL_SECONDS = 0.05
STATE_CHECK_SECONDS = 0.5  # how often process states (stopped?) are read
SERVER_GRACE_SECONDS = 30.0  # after the last trainer exits, before servers are stopped
STOPPED_EXIT_CODE = 1


class _Interrupted(Exception):
    def __init__(self, signum: int):
        self.signum = signum


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class Job:
    """The running processes of one launch, on every host."""

    def __init__(self, plan: Plan, ssh: SshOptions | SrunOptions, sink: LineSink | None = None):
        self.plan, self.ssh = plan, ssh
        self._show = sink or self._print
        self.failures = Failures(plan.session)
        self.exited: dict[str, int] = {}  # processes besides the first that ended on their own, failing
        self._lock = threading.Lock()
        self.specs = {s.label: s for s in plan.processes}
        self.has_trainers = any(s.role == "trainer" for s in plan.processes)  # not so under `distgraph serve`
        self.local: HostSupervisor | None = None
        self.remotes: list[RemoteHost] = []
        self._stop_beats = threading.Event()
        self.terminal_lost = False  # set when a line could not be written (`_write`)

    def _print(self, label: str, is_err: bool, text: str) -> None:
        with self._lock:
            self._write(sys.stderr if is_err else sys.stdout, f"[{label}] {text}\n")

    def _write(self, out, text: str) -> None:
        """A line to the launcher's terminal. A terminal that went away (a closed pipe, a lost ssh
        session) stops the job, as a hang-up does: nobody can follow it any more; its clean-up
        still runs."""
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):
            self.terminal_lost = True

    def sink(self, label: str, is_err: bool, text: str) -> None:
        """Every output line of the job's processes: shown, unless `failures` keeps it out of sight."""
        shown = self.failures.route(label, text)
        if shown is not None:
            self._show(label, is_err, shown)

    def say(self, message: str) -> None:
        with self._lock:
            self._write(sys.stderr, f"[launch] {message}\n")

    def name(self, label: str) -> str:
        spec = self.specs.get(label)
        return label if spec is None or spec.local else f"{label} on {spec.host}"

    def start(self) -> str | None:
        """Start every host's agent, and once each has checked that its host can run its part,
        this host's processes and theirs (servers before trainers: the plan's order). Returns
        the error of a host that cannot (nothing was started then)."""
        remote: dict[str, list[ProcessSpec]] = defaultdict(list)
        for spec in self.plan.processes:
            if not spec.local:
                remote[spec.host].append(spec)
        job = {"session": self.plan.session, "workspace": self.plan.workspace, "check": self.plan.check,
               "files": self.plan.files}
        python = server_python(self.plan.processes[-1].command)
        for host, specs in remote.items():
            self.remotes.append(RemoteHost(host, specs, job, python, self.ssh, self.sink, self.say))
        if self.remotes:
            beat_forever(lambda: [r.lifeline for r in self.remotes], self._stop_beats)
        for r in self.remotes:
            while not r.checked.wait(POLL_SECONDS):
                r.exit_codes()  # notices a session that ended
                if r.error is not None:
                    return r.error
        for spec in self.plan.processes:
            if spec.local:
                if self.local is None:
                    self.local = HostSupervisor(self.plan.workspace, self.sink, self.say)
                self.local.start(spec)
        for r in self.remotes:
            r.go()
        return None

    def exit_codes(self) -> dict[str, int | None]:
        codes = dict(self.local.exit_codes()) if self.local else {}
        for r in self.remotes:
            codes.update(r.exit_codes())
        return {label: codes.get(label) for label in self.specs}

    def supervise(self) -> int:
        """Wait for the job; the exit code of the first failing process, or 0."""
        trainers_done_at = None
        next_state_check = time.monotonic()
        while True:
            if self.terminal_lost:
                return 128 + signal.SIGHUP
            codes = self.exit_codes()  # (this also notices a host whose session ended)
            lost = next((r for r in self.remotes if r.error is not None), None)
            if lost is not None:
                self.say(f"{lost.error}; stopping the job")
                return LOST_CODE if lost.error.startswith(CONNECTION_FAILED) else 2
            exited = {label: rc for label, rc in codes.items() if rc not in (None, 0)}
            failed = next(iter(exited.items()), None)
            if failed is not None:
                self.exited = {label: rc for label, rc in exited.items() if label != failed[0]}  # named below
                self.say(f"{self.name(failed[0])} exited with code {failed[1]}; stopping the job")
                return _exit_code(failed[1])
            if all(rc == 0 for rc in codes.values()):
                return 0
            # a server that exited cleanly saw every goodbye (or a shutdown request): trainers may
            # still work on their own for as long as they like; one that still needs it fails by itself
            trainers_running = any(rc is None for label, rc in codes.items() if self.specs[label].role == "trainer")
            if trainers_done_at is None and not trainers_running and self.has_trainers:
                trainers_done_at = time.monotonic()
            if trainers_done_at is not None and time.monotonic() - trainers_done_at > SERVER_GRACE_SECONDS:
                self.say(f"servers still running {SERVER_GRACE_SECONDS:g} s after the trainers finished "
                         f"(did the script call distgraph.initialize()?); stopping them")
                return 0
            if time.monotonic() >= next_state_check:
                next_state_check = time.monotonic() + STATE_CHECK_SECONDS
                stuck = (self.local.stopped() if self.local else None) or next(
                    (r.stopped for r in self.remotes if r.stopped is not None), None)
                if stuck is not None:
                    self.say(f"{self.name(stuck[0])} (pid {stuck[1]}) has been stopped (SIGSTOP) for {STOPPED_SECONDS:g} s; "
                             f"the job cannot go on without it: stopping the job")
                    return STOPPED_EXIT_CODE
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        """Stop every process on every host, and sweep shared memory."""
        stopping = [threading.Thread(target=self._stop_remote, args=(r,)) for r in self.remotes]
        for t in stopping:
            t.start()
        try:
            if self.local is not None:
                self.local.stop()
            for t in stopping:
                t.join()
        finally:
            self._stop_beats.set()
            sweep_shared_memory(self.plan.session)

    def _stop_remote(self, remote: RemoteHost) -> None:
        if remote.stop():
            return
        glob = f"{SHM_DIR}/{session_glob(self.plan.session)}"  # its agent did not finish: sweep from here
        try:
            subprocess.run(self.ssh.argv(remote.host, f"rm -f {glob}"), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.say(f"could not remove shared memory {glob} on {remote.host}: {exc}")


def launch(opts: LaunchOptions) -> int:
    """Plan and run a job; returns the exit code (that of the first failing process, or 0)."""
    plan = make_plan(opts)
    return run(plan, plan.via)


def run(plan: Plan, ssh: SshOptions | SrunOptions = SshOptions(), sink: LineSink | None = None) -> int:
    """Run the job to completion; returns the launcher's exit code. Output lines go to `sink`
    (label, is stderr, text) if given, else are printed as `[label] text`."""
    job = Job(plan, ssh, sink)

    def interrupt(signum, frame):
        raise _Interrupted(signum)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        error = job.start()
        if error is not None:
            job.say(f"{error}; nothing was started")
            return LOST_CODE if error.startswith(CONNECTION_FAILED) else 2
        return job.supervise()
    except _Interrupted as exc:
        job.say(f"{signal.Signals(exc.signum).name}: stopping the job")
        return 128 + exc.signum
    finally:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        try:
            job.stop()
            for line in job.failures.summary(job.exited):
                job.say(line)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
