"""A lifeline: a pipe from the process that started a job's process (the launcher, or a
trainer for its samplers) to that process, so nothing outlives what started it.

The starter keeps the write end; the started process reads the other end in a daemon
thread. When the starter dies (killed, crashed, its ssh session dropped) the kernel closes
the write end and the reader sees end-of-file at once, whatever the main thread is doing:
serving, training, or stuck in C code. The reader then removes what the process must not
leave behind (a server's shared memory) and ends the process. Where a lost network closes
nothing, the starter also writes a byte every `BEAT_SECONDS` and the reader gives up after
a silence of `timeout` seconds.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import Callable, Iterable

BEAT_SECONDS = 1.0
SILENCE_SECONDS = 15.0  # what the launcher tells its processes: no heartbeat for this long means gone
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
        if self.write_fd < 0:
            return False
        try:
            os.write(self.write_fd, b".")
        except BlockingIOError:  # the child does not read (not a distgraph process): nothing to tell
            pass
        except (BrokenPipeError, OSError):
            self.close()
            return False
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


def watch(fd: int, timeout: float | None, label: str, starter: str,
          cleanup: Callable[[], None] = lambda: None) -> threading.Thread | None:
    """Watch lifeline `fd` in a daemon thread; when the starter is gone (end of file, or no byte
    for `timeout` seconds when given), run `cleanup` and end this process at once."""
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
            if not ready:
                lost(f"no heartbeat for {timeout:g} s")
            try:
                data = os.read(fd, 4096)
            except OSError as exc:
                lost(f"its lifeline failed: {exc}")
            if not data:
                lost("its lifeline closed")

    thread = threading.Thread(target=run, name="distgraph-lifeline", daemon=True)
    thread.start()
    return thread
