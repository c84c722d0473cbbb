"""A machine's trainers started as one process that forks the others once its modules are
imported (`LaunchOptions.fork_trainers`, which KGE jobs use): torch is imported once a machine
instead of once a trainer, a second of CPU each on this machine kind, all of it before the
first step.

The forks are exact trainers of the job: each gets its own RANK and LOCAL_RANK before it reads
its environment, and shares the launched process's lifeline, process group and output, so the
launcher's supervision (stop the group, end with the lifeline) covers them. The launched process
answers for them: it exits with the first failure among them, at once if a fork fails while it
still trains (it could otherwise wait at a barrier for the fork that is gone)."""

from __future__ import annotations

import os
import sys
import threading

from ..cluster.env import FORK_TRAINERS, fork_trainers


class Family:
    """This process's place in its machine's trainers: the parent (holding its forks' pids) or a fork."""

    def __init__(self, children: list[int], rank: int | None = None):
        self.children = children
        # what this process's own messages start with: the output it shares names the parent alone
        self.label = "" if rank is None else f"trainer {rank}: "
        self.codes: dict[int, int] = {}
        self._done = threading.Event()
        if children:
            threading.Thread(target=self._watch, name="distgraph-family", daemon=True).start()

    def _watch(self) -> None:
        """Reap the forks as they end; the first that fails ends this process with its code."""
        for pid in self.children:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            self.codes[pid] = code if code >= 0 else 128 - code  # killed by a signal: as a shell reports it
            if self.codes[pid]:
                sys.stderr.flush()
                os._exit(self.codes[pid])
        self._done.set()

    def finish(self, code: int) -> int:
        """The exit code of this process: a fork's is its own; the parent's is its own failure, or
        once every fork ended, the first fork's failure (0 when all succeeded)."""
        if not self.children or code:
            return code
        self._done.wait()
        return next((c for c in self.codes.values() if c), 0)


def start_family() -> Family:
    """Fork this machine's other trainers when the launcher asked for it (else nothing): call it
    after the imports and before any thread or torch operation starts."""
    n = fork_trainers()
    if n == 1:
        return Family([])
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    children = []
    for i in range(1, n):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # trainer rank + i of the machine
            os.environ.update({"RANK": str(rank + i), "LOCAL_RANK": str(local + i)})
            os.environ.pop(FORK_TRAINERS, None)
            return Family([], rank + i)
        children.append(pid)
    return Family(children, rank)
