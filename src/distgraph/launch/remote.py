"""The launcher's side of another host: its agent (`launch.agent`) over one ssh session (or,
in a Slurm allocation, one `srun` step: `launch.srun`).

The ssh client's standard input is the agent's lifeline (`cluster.lifeline`): the job
description goes first, then heartbeats. The agent's events (output lines, exits, a
stopped process, errors) update the mirrored state read by the launcher's supervision
loop; if the session ends before the agent said it was done, every process of the host
counts as failed, with ssh's own last words in the message.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import deque
from typing import Callable

from ..cluster.lifeline import SILENCE_SECONDS, Lifeline
from .agent import GO, STOP
from .plan import ProcessSpec
from .srun import SrunOptions
from .ssh import SshOptions, python_module_line
from .supervisor import LineSink

LOST_CODE = 255  # ssh's exit code for a failed session: the code of a host's processes when it is lost
# how a host's error begins when its session failed (the launcher then exits with LOST_CODE)
CONNECTION_FAILED = ("lost the connection to host", "cannot resolve host", "could not reach host")
STOP_SECONDS = 20.0  # for an agent to stop its processes and report done


class RemoteHost:
    """The processes of one host that is not this one."""

    def __init__(self, host: str, specs: list[ProcessSpec], job: dict, python: str, ssh: SshOptions | SrunOptions,
                 sink: LineSink, say: Callable[[str], None]):
        self.host, self.specs, self.sink, self.say = host, specs, sink, say
        self.via = ssh.name
        self.codes: dict[str, int | None] = {s.label: None for s in specs}
        self.stopped: tuple[str, int] | None = None
        self.error: str | None = None
        self.checked = threading.Event()
        self.done = threading.Event()
        self.heard = False  # the agent has spoken: the host was reached
        self._ssh_said: deque[str] = deque(maxlen=5)
        self.lifeline = Lifeline()
        argv = ssh.argv(host, python_module_line(python, "distgraph.launch.agent"))
        self.proc = subprocess.Popen(argv, stdin=self.lifeline.read_fd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.lifeline.started()
        check = {**job["check"], "machines": sorted({s.machine_id for s in specs})}
        message = {**job, "check": check, "host": host, "lifeline_timeout": SILENCE_SECONDS,
                   "processes": [{"machine_id": s.machine_id, "role": s.role, "rank": s.rank, "command": s.command,
                                  "env": s.env} for s in specs]}
        self.lifeline.send((json.dumps(message) + "\n").encode())
        self.readers = [threading.Thread(target=self._events, daemon=True),
                        threading.Thread(target=self._ssh_stderr, daemon=True)]
        for t in self.readers:
            t.start()

    def _events(self) -> None:
        for raw in iter(self.proc.stdout.readline, b""):
            try:
                event = json.loads(raw)
            except ValueError:  # not the agent speaking (e.g. a login banner): pass it on
                self.say(f"{self.host}: {raw.decode(errors='replace').rstrip()}")
                continue
            self.heard = True
            if "line" in event:
                self.sink(event["line"], bool(event.get("err")), str(event.get("text", "")))
            elif "exit" in event:
                self.codes[event["exit"]] = int(event["code"])
            elif "stopped" in event:
                self.stopped = (event["stopped"], int(event["pid"]))
            elif "say" in event:
                self.say(f"{self.host}: {event['say']}")
            elif "error" in event:
                self.error = str(event["error"])
            elif event.get("checked"):
                self.checked.set()
            elif event.get("done"):
                self.done.set()
        self.proc.stdout.close()

    def _ssh_stderr(self) -> None:
        for raw in iter(self.proc.stderr.readline, b""):
            text = raw.decode(errors="replace").rstrip()
            if text:
                self._ssh_said.append(text)
        self.proc.stderr.close()

    def go(self) -> None:
        """Start the host's processes (after every host checked it can)."""
        self.lifeline.send(GO)

    def exit_codes(self) -> dict[str, int | None]:
        """Label -> exit code (None while running); LOST_CODE for every process of a host whose
        session ended before its agent reported them."""
        if self.proc.poll() is not None and not self.done.is_set() and self.error is None:
            for t in self.readers:
                t.join(timeout=1.0)
            if not self.done.is_set():
                self.error = self._failed_session()
        if self.error is not None:
            return {label: LOST_CODE if code is None else code for label, code in self.codes.items()}
        return dict(self.codes)

    def _failed_session(self) -> str:
        """What to say of a session that ended before the agent said it was done (one of
        CONNECTION_FAILED's beginnings): a name that does not resolve, a host never reached, or
        a connection lost."""
        said = "; ".join(self._ssh_said) or "no message"
        how = f"{self.via} exited with code {self.proc.returncode}: {said}"
        if not self.heard and "could not resolve hostname" in said.lower():
            return f"cannot resolve host {self.host} ({how}); check its name in ip_config or give its IP address"
        if not self.heard:
            return f"could not reach host {self.host} ({how})"
        return f"lost the connection to host {self.host} ({how})"

    def stop(self) -> bool:
        """Ask the agent to stop its processes and wait (bounded); True if it said it was done."""
        self.lifeline.send(STOP)
        deadline = time.monotonic() + STOP_SECONDS
        while not self.done.is_set() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        self.lifeline.close()  # the session ends; an agent still running stops at the end of its lifeline
        try:
            self.proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self.readers:
            t.join(timeout=2.0)
        return self.done.is_set()
