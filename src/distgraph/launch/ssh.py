"""How the launcher and `distgraph copy` reach other hosts: the local `ssh` client.

Host keys are checked: a host seen for the first time is remembered (`accept-new`), a
host whose key changed is refused. Nothing secret goes on a command line: what a remote
process needs travels on the ssh session's standard input. A session that stops
answering ends within about 15 s (`ServerAliveInterval` x `ServerAliveCountMax`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class SshOptions:
    """`--ssh_port`, `--ssh_username`, `--ssh_key` (DGL-KE's name) and `--ssh_config` (`ssh -F`)."""

    port: int = 22
    username: str = ""
    key: str | None = None
    config: str | None = None
    name: str = "ssh"  # how messages name this way of reaching a host

    def argv(self, host: str, remote_command: str) -> list[str]:
        """argv of the local ssh client that runs `remote_command` (a shell line) on `host`."""
        target = f"{self.username}@{host}" if self.username else host
        opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=10",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-p", str(self.port)]
        if self.key:
            opts += ["-i", self.key, "-o", "IdentitiesOnly=yes"]
        if self.config:
            opts = ["-F", self.config, *opts]
        return ["ssh", *opts, target, remote_command]


def python_module_line(python: str, module: str, *args: str) -> str:
    """The remote shell line that runs `python -m module args...`."""
    return "exec " + " ".join(shlex.quote(w) for w in (python, "-m", module, *args))
