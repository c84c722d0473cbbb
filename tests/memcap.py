"""Memory for tests: caps (a cgroup, v1 memory controller, of its own, removed after), and how
this process maps an address."""

from __future__ import annotations

import os
import subprocess
import time
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


class MemoryCap:
    """A cgroup limited to `limit_bytes` (no swap): processes put in it, and those they start,
    are killed by the kernel if together they need more."""

    def __init__(self, limit_bytes: int):
        self.group = CGROUP_ROOT / f"distgraph-test-{uuid.uuid4().hex[:8]}"
        self.group.mkdir()
        (self.group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        swap = self.group / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(limit_bytes))

    def add(self, pid: int) -> None:
        (self.group / "cgroup.procs").write_text(str(pid))

    def peak(self) -> int:
        """The group's peak memory in bytes (page cache of the files its processes wrote included)."""
        return int((self.group / "memory.max_usage_in_bytes").read_text())

    def __enter__(self) -> "MemoryCap":
        return self

    def __exit__(self, *exc) -> None:
        """Move what still runs in the group back to the root group, and remove the group."""
        for _ in range(50):
            for pid in (self.group / "cgroup.procs").read_text().split():
                try:
                    (CGROUP_ROOT / "cgroup.procs").write_text(pid)
                except OSError:  # it exited meanwhile
                    pass
            try:
                self.group.rmdir()
                return
            except OSError:  # its last process is still leaving
                time.sleep(0.1)


def run_capped(argv: list[str], limit_bytes: int, **kwargs) -> tuple[subprocess.CompletedProcess, int]:
    """Run `argv` in a new cgroup limited to `limit_bytes` (no swap); (its result, the group's peak
    memory in bytes). The kernel kills the command if it needs more."""
    with MemoryCap(limit_bytes) as cap:
        done = subprocess.run(argv, preexec_fn=lambda: cap.add(os.getpid()), **kwargs)
        return done, cap.peak()


def mapping_flags(address: int) -> list[str] | None:
    """The VmFlags of this process's mapping holding `address` (/proc/self/smaps), or None."""
    inside = False
    for line in open("/proc/self/smaps"):
        head = line.split()
        if "-" in head[0] and ":" not in head[0]:
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            inside = lo <= address < hi
        elif inside and head[0] == "VmFlags:":
            return head[1:]
    return None
