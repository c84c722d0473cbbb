"""`distgraph copy`: give every host of ip_config what its machines need (DGL's
tools/copy_files.py, with its flags), and only what changed.

A host gets, under `--workspace`: the ip_config file; in `--rel_data_path`, the partition
config (its paths are relative to it, so it loads there as is), the id maps and the
partition folder of each of its machines; and the `--script_folder` (as `scp -r` puts it,
in a folder of its name). Files whose size and modification time already match are not
sent again. Files travel as one tar stream per host over ssh (a local `sh` for this host),
which needs only `tar` and GNU `find` there.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..cluster.hosts import is_local
from ..cluster.ip_config import parse_ip_config
from ..errors import InputError
from ..partition.layout import PartitionConfig
from .ssh import SshOptions

Files = dict[str, Path]  # path in the workspace -> local file


@dataclass
class CopyOptions:
    ip_config: str
    workspace: str
    rel_data_path: str
    part_config: str
    script_folder: str | None
    ssh: SshOptions


def _relative(path: str, what: str) -> str:
    p = Path(path)
    if p.is_absolute() or ".." in p.parts:
        raise InputError(f"{what} {path!r} must be a path inside the workspace (relative, without '..')")
    return p.as_posix().strip("/") or "."


def plan_copy(opts: CopyOptions) -> dict[str, Files]:
    """Host -> the files it needs (checked to exist here)."""
    machines = parse_ip_config(opts.ip_config)
    cfg = PartitionConfig.load(opts.part_config)
    cfg.check_machines(len(machines), opts.ip_config)
    data = _relative(opts.rel_data_path, "--rel_data_path")
    shared: Files = {Path(opts.ip_config).name: Path(opts.ip_config),
                     f"{data}/{cfg.path.name}": cfg.path}
    mapping = PartitionConfig(cfg.path, {**cfg.raw, "partitions": []}).files()  # id maps and attachments
    shared.update({f"{data}/{f.relative_to(cfg.dir).as_posix()}": f for f in mapping})
    if opts.script_folder:
        folder = Path(opts.script_folder).expanduser()
        if not folder.is_dir():
            raise InputError(f"--script_folder {opts.script_folder} is not a folder")
        shared.update({f"{folder.resolve().name}/{f.relative_to(folder).as_posix()}": f
                       for f in sorted(folder.rglob("*")) if f.is_file() and "__pycache__" not in f.parts})
    plan: dict[str, Files] = defaultdict(dict)
    for m, spec in enumerate(machines):
        cfg.check_files(m)
        plan[spec.ip].update(shared)
        plan[spec.ip].update({f"{data}/{f.relative_to(cfg.dir).as_posix()}": f for f in cfg.part_files(m)
                              if f not in mapping})
    return dict(plan)


def _quoted_path(path: str) -> str:
    """A path for the remote shell, `~` meaning the remote user's home."""
    if path == "~" or path.startswith("~/"):
        return '"$HOME"' + (shlex.quote(path[1:]) if len(path) > 1 else "")
    return shlex.quote(path)


def _host_argv(host: str, line: str, ssh: SshOptions) -> list[str]:
    return ["sh", "-c", line] if is_local(host) else ssh.argv(host, line)


def _listing(host: str, workspace: str, ssh: SshOptions) -> dict[str, tuple[int, int]]:
    """Path -> (size, mtime in whole seconds) of the files already in the host's workspace."""
    ws = _quoted_path(workspace)
    line = f"umask 077 && mkdir -p {ws} && cd {ws} && find . -type f -printf '%P\\t%s\\t%T@\\n'"
    done = subprocess.run(_host_argv(host, line, ssh), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120)
    if done.returncode != 0:
        raise InputError(f"copy to {host} failed: cannot list {workspace} there "
                         f"({done.stderr.strip() or f'exit code {done.returncode}'})")
    found = {}
    for row in done.stdout.splitlines():
        name, size, mtime = row.rsplit("\t", 2)
        found[name] = (int(size), int(float(mtime)))
    return found


class _Progress:
    """A file object that counts what passes through it for the progress bar."""

    def __init__(self, out: IO[bytes], bar):
        self.out, self.bar = out, bar

    def write(self, data: bytes) -> int:
        self.out.write(data)
        self.bar.update(len(data))
        return len(data)


def _send(host: str, workspace: str, files: Files, ssh: SshOptions, desc: str) -> None:
    from tqdm import tqdm

    # the host's copies are the user's alone (0600/0700), even where tar runs as root
    line = f"umask 077 && cd {_quoted_path(workspace)} && tar -x --no-same-owner --no-same-permissions -f -"
    proc = subprocess.Popen(_host_argv(host, line, ssh), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    total = sum(f.stat().st_size for f in files.values())
    try:
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=None) as bar, \
                tarfile.open(fileobj=_Progress(proc.stdin, bar), mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for name, f in sorted(files.items()):
                tar.add(f, arcname=name, recursive=False)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode(errors="replace").strip()
    if proc.wait() != 0:
        raise InputError(f"copy to {host} failed ({err or f'exit code {proc.returncode}'})")


def copy(opts: CopyOptions) -> dict[str, int]:
    """Copy what each host needs; host -> number of files sent (unchanged ones are not)."""
    plan = plan_copy(opts)
    sent = {}
    for host, files in plan.items():
        workspace = opts.workspace
        if is_local(host) and os.path.isdir(os.path.expanduser(workspace)):
            here = Path(os.path.expanduser(workspace)).resolve()
            files = {n: f for n, f in files.items() if not ((here / n).exists() and (here / n).samefile(f))}
        have = _listing(host, workspace, opts.ssh)
        todo = {n: f for n, f in files.items() if have.get(n) != (f.stat().st_size, int(f.stat().st_mtime))}
        print(f"{host}: {len(files) - len(todo)} of {len(files)} files up to date, sending {len(todo)}", flush=True)
        if todo:
            _send(host, workspace, todo, opts.ssh, desc=host)
        sent[host] = len(todo)
    return sent
