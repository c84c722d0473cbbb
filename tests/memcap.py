"""Running a command under a memory cap: a cgroup (v1 memory controller) of its own, removed after."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup/memory")


def why_not() -> str | None:
    """Why a memory cap cannot be set here, or None."""
    if os.geteuid() != 0:
        return "a memory cap (a cgroup) needs root"
    if not (CGROUP_ROOT / "cgroup.procs").exists():
        return "no cgroup v1 memory controller at /sys/fs/cgroup/memory"
    return None


def run_capped(argv: list[str], limit_bytes: int, **kwargs) -> tuple[subprocess.CompletedProcess, int]:
    """Run `argv` in a new cgroup limited to `limit_bytes` (no swap); (its result, the group's peak
    memory in bytes). The kernel kills the command if it needs more."""
    group = CGROUP_ROOT / f"distgraph-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        swap = group / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(limit_bytes))

        def join() -> None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

        done = subprocess.run(argv, preexec_fn=join, **kwargs)
        return done, int((group / "memory.max_usage_in_bytes").read_text())
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:  # its last process is still leaving
                import time

                time.sleep(0.1)
