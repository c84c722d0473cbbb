"""What the suite checks it leaves behind: child processes and shared-memory segments."""

from __future__ import annotations

from pathlib import Path

import psutil

# multiprocessing's resource tracker is started by the first spawn-based pool or shared-memory
# object and exits with its parent by design; it is not something a test left running.
_BY_DESIGN = ("multiprocessing.resource_tracker",)


def child_processes() -> list[psutil.Process]:
    """Live descendants of this process, except those that end with it by design."""
    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            if not any(marker in " ".join(c.cmdline()) for marker in _BY_DESIGN):
                out.append(c)
        except psutil.NoSuchProcess:
            continue
    return out


def shm_entries() -> set[str]:
    root = Path("/dev/shm")
    return {p.name for p in root.iterdir()} if root.is_dir() else set()
