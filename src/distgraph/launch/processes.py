"""The launcher's view of the processes it started: each runs in a process group of its own
(its shell, the command, and anything the command starts, such as sampler processes), so
the launcher can see whether any member is still alive or stopped, and signal them all."""

from __future__ import annotations

import ctypes
import os
import signal
from dataclasses import dataclass
from typing import Iterator

PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Member:
    pid: int
    state: str  # as in /proc/PID/stat: R running, S sleeping, T stopped, Z zombie, ...


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, the /proc/PID/stat fields after the command name) of every process of this host;
    the fields start with state, parent pid, process group."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read().decode(errors="replace")
            except OSError:  # exited meanwhile
                continue
            yield int(entry.name), stat[stat.rfind(")") + 2:].split()


def members(pgid: int) -> list[Member]:
    """Processes of group `pgid` that have not exited (zombies are dead: they are left out)."""
    return members_of({pgid})[pgid]


def members_of(pgids: set[int]) -> dict[int, list[Member]]:
    """`members` of each of several groups, from one pass over /proc (a pass reads every
    process of the host: the supervisor's checks make one, not one a group)."""
    out: dict[int, list[Member]] = {g: [] for g in pgids}
    for pid, f in _processes():
        group = out.get(int(f[2]))
        if group is not None and f[0] not in "ZX":
            group.append(Member(pid, f[0]))
    return out


def signal_group(pgid: int, signum: int) -> None:
    """Send `signum` to every process of group `pgid` (nothing if the group is gone)."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group_now(pgid: int) -> None:
    """SIGTERM every member, and SIGCONT so that stopped members receive it too."""
    signal_group(pgid, signal.SIGTERM)
    signal_group(pgid, signal.SIGCONT)


def become_subreaper() -> None:
    """Adopt this process's orphaned descendants (a command whose shell died), so they can be
    waited for and reaped here; on this machine's init they would stay zombies forever."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: orphans go to init as usual
        pass


def reap_orphans(known: set[int]) -> None:
    """Collect the exit status of adopted descendants that have ended (not of `known` children,
    whose status their `Popen` objects read)."""
    me = os.getpid()
    for pid, f in _processes():
        if f[0] == "Z" and int(f[1]) == me and pid not in known:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
