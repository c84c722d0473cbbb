"""Names of a job's shared-memory files under /dev/shm.

Names carry the launch session, the graph and the machine, so several machines and several
jobs can share one host, and a launcher (or a test) can find and remove exactly its own job's
files, whatever else the host runs.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

SHM_DIR = Path("/dev/shm")
PREFIX = "distgraph"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class SegmentNamer:
    """File names for one machine's tensors in one launch session."""

    def __init__(self, session: str, graph_name: str, machine_id: int):
        self.stem = f"{PREFIX}.{_safe(session)}.{_safe(graph_name)}.m{machine_id}"
    def manifest(self, tensor: str) -> Path:
        return SHM_DIR / f"{self.stem}.{file_key(tensor)}.json"

    def segment(self, tensor: str, uid: str) -> str:
        return f"{self.stem}.{file_key(tensor)}.{uid}"

    def all_files(self) -> list[Path]:
        return sorted(SHM_DIR.glob(f"{self.stem}.*"))


def session_glob(session: str) -> str:
    """Glob of every shared-memory file of a launch session (for sweeps on remote hosts too)."""
    return f"{PREFIX}.{_safe(session)}.*"


def session_files(session: str) -> list[Path]:
    """Every shared-memory file of a launch session on this host (for the launcher's final sweep)."""
    return sorted(SHM_DIR.glob(session_glob(session)))


def _safe(s: str) -> str:
    return _UNSAFE.sub("_", s)[:40]


def file_key(tensor: str) -> str:
    """Readable and collision-free: sanitised name plus a short hash of the real name."""
    return f"{_safe(tensor)}-{hashlib.sha1(tensor.encode()).hexdigest()[:8]}"


def unlink(path: Path) -> None:
    """Remove a file if it is still there."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
