"""A lifeline: a pipe from the process that started a job's process (the launcher, or a
trainer for its samplers) to that process, so nothing outlives what started it.

The starter keeps the write end; the started process reads the other end in a daemon
thread. When the starter dies (killed, crashed, its ssh session dropped) the kernel closes
the write end and the reader sees end-of-file at once, whatever the main thread is doing:
serving, training, or stuck in C code. The reader then removes what the process must not
leave behind (a server's shared memory) and ends the process. That end is the only sign a
process on the starter's host takes: a starter that is merely slow (a loaded machine) or
stopped (SIGSTOP) keeps its processes.

Only an agent, whose lifeline is an ssh session from another host, also needs a sign for a
network that drops without closing anything: the launcher writes a byte every
`BEAT_SECONDS`, and after a silence of `timeout` seconds the agent asks whether its
connection still reaches the launcher's host (`tcp_link`); it gives up only when that
connection has stopped answering, not because a busy launcher was late. A lifeline may also
carry a few messages (an agent's job description, a request to stop) beside the heartbeats.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import Callable, Iterable

BEAT = b"."
BEAT_SECONDS = 1.0
SILENCE_SECONDS = 15.0  # what the launcher tells its agents: no heartbeat for this long, ask the connection
EXIT_CODE = 1


class Lifeline:
    """The starter's end of one pipe; pass `read_fd` to the child (`pass_fds`), then call `started()`."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)  # a child that never reads must not block the starter

    def started(self) -> None:
        """The child holds its copy of the read end now; drop ours, so only the child's remains."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def beat(self) -> bool:
        """Write one heartbeat byte; False once the reader is gone."""
        return self.send(BEAT, blocking=False)

    def send(self, data: bytes, blocking: bool = True) -> bool:
        """Write `data` (a message besides heartbeats); False once the reader is gone."""
        if self.write_fd < 0:
            return False
        try:
            if blocking:
                os.set_blocking(self.write_fd, True)
            view = memoryview(data)
            while view:
                view = view[os.write(self.write_fd, view):]
        except BlockingIOError:  # the child does not read (not a distgraph process): nothing to tell
            pass
        except OSError:
            self.close()
            return False
        finally:
            if blocking and self.write_fd >= 0:
                os.set_blocking(self.write_fd, False)
        return True

    def close(self) -> None:
        """Cut the line: the child sees end-of-file and ends."""
        self.started()
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1


def beat_forever(lifelines: Callable[[], Iterable[Lifeline]], stop: threading.Event) -> threading.Thread:
    """A daemon thread writing a heartbeat on every lifeline every `BEAT_SECONDS` until `stop` is set."""

    def run() -> None:
        while not stop.wait(BEAT_SECONDS):
            for line in list(lifelines()):
                line.beat()

    thread = threading.Thread(target=run, name="distgraph-heartbeat", daemon=True)
    thread.start()
    return thread


def watch(fd: int, timeout: float | None, label: str, starter: str, cleanup: Callable[[], None] = lambda: None,
          on_data: Callable[[bytes], None] = lambda data: None,
          reachable: Callable[[], bool] | None = None) -> threading.Thread | None:
    """Watch lifeline `fd` in a daemon thread; when the starter is gone, run `cleanup` and end
    this process at once. Gone means end of file; with a `timeout`, also no byte for that many
    seconds while `reachable()` (when given) says the starter's host no longer answers. Bytes
    other than heartbeats go to `on_data`."""
    try:
        os.fstat(fd)
    except OSError:
        print(f"{label}: warning: lifeline descriptor {fd} is not open (the process was not started by "
              f"{starter} itself); it will not notice if {starter} dies", file=sys.stderr, flush=True)
        return None

    def lost(reason: str) -> None:
        for step in (lambda: print(f"{label}: {starter} is gone ({reason}); exiting", file=sys.stderr, flush=True),
                     cleanup, sys.stdout.flush):
            try:
                step()
            except BaseException:  # noqa: BLE001  e.g. output to the dead starter's pipe: exit all the same
                pass
        os._exit(EXIT_CODE)

    def run() -> None:
        while True:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready and reachable is not None and reachable():
                continue  # silent but there: busy, or stopped
            if not ready:
                lost(f"no heartbeat for {timeout:g} s" + ("" if reachable is None else
                                                           " and its connection stopped answering"))
            try:
                data = os.read(fd, 4096)
            except OSError as exc:
                lost(f"its lifeline failed: {exc}")
            if not data:
                lost("its lifeline closed")
            data = data.replace(BEAT, b"")
            if data:
                on_data(data)

    thread = threading.Thread(target=run, name="distgraph-lifeline", daemon=True)
    thread.start()
    return thread


def read_line(fd: int, timeout: float) -> bytes:
    """The first line on lifeline `fd` (a message sent before the heartbeats), read without
    buffering beyond it; empty if the lifeline ends or stays silent for `timeout` seconds."""
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        byte = os.read(fd, 1) if ready else b""
        if not byte:
            return b""
        line += byte
    return line
