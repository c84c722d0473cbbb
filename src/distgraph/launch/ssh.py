"""Commands for processes on other hosts: `ssh host 'cd WORKSPACE && ... command'`.

The ssh client's standard input is the process's lifeline (`cluster.lifeline`): the remote
shell moves it to descriptor `REMOTE_LIFELINE_FD` and gives the command /dev/null instead,
so when the launcher or its ssh session goes away, the remote process sees the end of its
lifeline and ends: nothing is left running there.
"""

from __future__ import annotations

import shlex
from typing import Mapping

REMOTE_LIFELINE_FD = 3


def remote_shell_command(workspace: str, env: Mapping[str, str], command: str) -> str:
    """The shell line to run remotely: change directory, keep the lifeline, set variables, run."""
    assigns = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
    return f"cd {shlex.quote(workspace)} && exec {REMOTE_LIFELINE_FD}<&0 </dev/null && {assigns}{command}"


def ssh_argv(host: str, remote_command: str, port: int = 22, username: str = "") -> list[str]:
    """argv of the local ssh client that runs `remote_command` on `host`."""
    target = f"{username}@{host}" if username else host
    return ["ssh", "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes", "-p", str(port), target, remote_command]


def cleanup_argv(host: str, shm_glob: str, port: int = 22, username: str = "") -> list[str]:
    """argv that removes a session's shared memory on `host` (after its servers were killed)."""
    return ssh_argv(host, f"rm -f {shm_glob}", port, username)
