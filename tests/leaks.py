"""What the suite checks it leaves behind: child processes, and the shared-memory files of
this test run (every launch session of the run starts with `RUN_PREFIX`, so other jobs on
the host, distgraph ones included, cannot fail the check)."""

from __future__ import annotations

import itertools
import os

import psutil

from distgraph.cluster.shm_files import PREFIX, SHM_DIR

RUN_PREFIX = f"rt{os.getpid()}"
_sessions = itertools.count()

# multiprocessing's resource tracker is started by the first spawn-based pool or shared-memory
# object and exits with its parent by design; it is not something a test left running.
_BY_DESIGN = ("multiprocessing.resource_tracker",)


def new_session() -> str:
    """A launch session name unique to this test run."""
    return f"{RUN_PREFIX}s{next(_sessions)}"


def child_processes() -> list[psutil.Process]:
    """Live descendants of this process, except those that end with it by design."""
    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            if c.status() != psutil.STATUS_ZOMBIE and not any(m in " ".join(c.cmdline()) for m in _BY_DESIGN):
                out.append(c)
        except psutil.NoSuchProcess:
            continue
    return out


def shm_entries() -> set[str]:
    """This run's shared-memory files."""
    return {p.name for p in SHM_DIR.glob(f"{PREFIX}.{RUN_PREFIX}*")}
