"""Commands for processes on other hosts: `ssh host 'cd WORKSPACE && VAR=... command'`.

`-tt` gives the remote command a terminal, so when the launcher stops the ssh client the
remote session hangs up and its processes get SIGHUP: nothing is left running there.
"""

from __future__ import annotations

import shlex
from typing import Mapping


def remote_shell_command(workspace: str, env: Mapping[str, str], command: str) -> str:
    """The shell line to run remotely: change directory, set variables, run."""
    assigns = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
    return f"cd {shlex.quote(workspace)} && {assigns}{command}"


def ssh_argv(host: str, remote_command: str, port: int = 22, username: str = "", tty: bool = True) -> list[str]:
    """argv of the local ssh client that runs `remote_command` on `host`."""
    target = f"{username}@{host}" if username else host
    return ["ssh", *(["-tt"] if tty else []), "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes",
            "-p", str(port), target, remote_command]


def cleanup_argv(host: str, shm_glob: str, port: int = 22, username: str = "") -> list[str]:
    """argv that removes a session's shared memory on `host` (after its servers were killed)."""
    return ssh_argv(host, f"rm -f {shm_glob}", port, username, tty=False)
